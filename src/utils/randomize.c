/* randomize_weights (coremltools/models/utils.py, with the
 * common::WeightRandomizer graph pass of passes/defs/randomize.py): every
 * const that goes to the weight file gets random values of its dtype and
 * shape, as np.random.rand(*shape).astype(dtype): floats uniform in [0, 1),
 * integers 0 (the truncation of such values). For benchmarking and sharing
 * a model's structure without its weights. */
#include <stdint.h>
#include <string.h>

#include "utils/utils_internal.h"

typedef struct rnd {
  uint64_t state;
  int spec;
  int64_t n;
  bool oom;
} rnd;

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0); }

static int visit(mil_op *op, void *ud) {
  rnd *r = ud;
  if (strcmp(op->type, "const") || op->n_outputs != 1) return 0;
  const mil_value *v = op->outputs[0]->val;
  if (!v || !mil_blob_should_store(v, r->spec)) return 0;
  mil_program *p = mil_op_program(op);
  int64_t shape[64];
  int32_t rank = v->type->rank;
  if (rank > 64) return 0;
  for (int32_t i = 0; i < rank; i++) shape[i] = v->type->dims[i].size;
  mil_value *nv = mil_value_new_tensor(p, v->type->dtype, rank, shape, v->type->is_scalar, NULL);
  if (!nv) {
    r->oom = true;
    return 1;
  }
  void *data = mil_value_data_mut(nv);
  switch (v->type->dtype) {
    case MIL_DT_FP16:
      for (int64_t i = 0; i < nv->numel; i++) ((uint16_t *)data)[i] = mil_fp64_to_fp16(uniform(&r->state));
      break;
    case MIL_DT_FP32:
      for (int64_t i = 0; i < nv->numel; i++) ((float *)data)[i] = (float)uniform(&r->state);
      break;
    case MIL_DT_FP64:
      for (int64_t i = 0; i < nv->numel; i++) ((double *)data)[i] = uniform(&r->state);
      break;
    default: /* integers: zero bytes, as astype truncates values in [0, 1) */
      break;
  }
  mil_var_set_value(op->outputs[0], nv);
  r->n++;
  return 0;
}

mil_status mil_utils_randomize_weights(mil_model *m, uint64_t seed, int64_t *n_randomized, mil_diag *d) {
  if (n_randomized) *n_randomized = 0;
  if (!m->prog) return mil_diag_error(d, MIL_ERR_INVALID, "%s: the model has no program", mil_model_path(m));
  /* coremltools' _apply_graph_pass: specification version at least 7 (iOS16) */
  if (m->spec_version < 7) m->spec_version = 7;
  rnd r = {seed, m->spec_version, 0, false};
  mil_program_walk(m->prog, visit, &r);
  if (r.oom) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (n_randomized) *n_randomized = r.n;
  return MIL_OK;
}

/* bisect_model (coremltools/models/utils.py): a single-function model cut
 * in two chunks of about equal weight size.
 *
 *   mil split big.mlpackage -o chunks/      -> chunks/big_chunk1.mlpackage,
 *                                              chunks/big_chunk2.mlpackage
 *
 * coremltools' rules (_get_op_idx_split_location, _get_first_chunk_outputs,
 * _add_fp32_casts, _make_first_chunk_prog, _make_second_chunk_prog):
 *  - the weight size of a const is elements * item size, counted for
 *    tensor (not scalar, not string) consts of the main block in order;
 *    the incision op is the first non-const op at or past half the total
 *    that has one output used by exactly one op;
 *  - the boundary vars are the outputs (without a known value) of the
 *    non-const ops up to the incision that an op after it uses, in program
 *    order;
 *  - chunk 1 returns them, fp16 ones cast to fp32 (the cast takes the var's
 *    name, the var gets "_1" appended), and loses its dead code;
 *  - chunk 2 takes them as inputs of the same names (fp32 for fp16 ones,
 *    cast back to fp16 where the var was made), drops what is dead and the
 *    inputs left unused;
 *  - both then go through the DEFAULT pipeline, as coremltools' converter
 *    runs it on them, and keep the source's specification version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/passes.h"
#include "utils/utils_internal.h"

typedef struct bnd {
  int32_t op_idx, out_idx;
} bnd;

static mil_op *top_op(mil_op *op, const mil_block *body) {
  while (op && op->block && op->block != body) op = op->block->parent;
  return op;
}

static bool starts_const(const char *t) { return !strncmp(t, "const", 5); }

static int64_t weight_bytes(const mil_op *op) {
  if (strcmp(op->type, "const") || op->n_outputs != 1) return -1;
  const mil_value *v = op->outputs[0]->val;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->is_scalar || v->type->dtype == MIL_DT_STRING) return -1;
  size_t item = mil_dtype_size(v->type->dtype);
  return v->numel * (int64_t)(item ? item : 1);
}

/* The number of distinct ops of the body that use v (coremltools'
 * child_ops; block outputs are not ops). */
static int32_t child_ops(const mil_var *v, const mil_block *body) {
  int32_t n = 0;
  const mil_op *seen[8];
  for (mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) continue;
    const mil_op *t = top_op(u->op, body);
    bool dup = false;
    for (int32_t i = 0; i < n && i < 8; i++) dup |= seen[i] == t;
    if (dup) continue;
    if (n < 8) seen[n] = t;
    n++;
  }
  return n;
}

static mil_op *op_at(mil_block *b, int32_t idx) {
  mil_op *op = b->first;
  for (int32_t i = 0; op && i < idx; i++) op = op->next;
  return op;
}

static mil_status run_pass(mil_program *p, const char *name, mil_diag *d) {
  const mil_pass_def *pd = mil_pass_find(name);
  return pd ? mil_pass_run(pd, p, NULL, NULL, d) : MIL_OK;
}

static mil_status run_default(mil_program *p, mil_diag *d) {
  mil_pipeline *pl = NULL;
  mil_status st = mil_pipeline_new("default", &pl, d);
  if (st != MIL_OK) return st;
  mil_pipeline_run_options ro;
  memset(&ro, 0, sizeof ro);
  mil_pipeline_report rep;
  memset(&rep, 0, sizeof rep);
  st = mil_pipeline_run(pl, p, &ro, &rep, d);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  return st;
}

static mil_var *add_cast(mil_program *p, mil_block *b, mil_op *before, mil_var *x, mil_dtype dt, const char *name) {
  char cname[640], opname[64]; /* room for a 512-byte name and the suffix */
  snprintf(opname, sizeof opname, "cast_%lld", (long long)mil_program_name_count_next(p, "cast"));
  snprintf(cname, sizeof cname, "%s_dtype_0", opname);
  return utils_cast(p, b, before, x, dt, opname, cname, name ? name : opname);
}

static mil_status make_chunk1(mil_program *p, const bnd *bs, int32_t nb, mil_diag *d) {
  mil_block *b = mil_function_body(p->functions[0]);
  mil_var **outs = calloc((size_t)(nb ? nb : 1), sizeof *outs);
  if (!outs) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  char name[512];
  for (int32_t i = 0; i < nb; i++) {
    mil_var *v = op_at(b, bs[i].op_idx)->outputs[bs[i].out_idx];
    if (v->type->dtype != MIL_DT_FP16) {
      outs[i] = v;
      continue;
    }
    const char *orig = v->name;
    snprintf(name, sizeof name, "%s_1", orig);
    v->name = mil_program_intern(p, name, (size_t)-1);
    if (!v->name || !(outs[i] = add_cast(p, b, NULL, v, MIL_DT_FP32, orig))) {
      free(outs);
      return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    }
  }
  mil_status st = mil_block_set_outputs(b, nb, outs);
  free(outs);
  if (st != MIL_OK) return mil_diag_error(d, st, "bisect_model: cannot set the first chunk's outputs");
  return run_pass(p, "common::dead_code_elimination", d);
}

static mil_status make_chunk2(mil_program *p, int32_t op_idx, const bnd *bs, int32_t nb, mil_diag *d) {
  mil_function *f = p->functions[0];
  mil_block *b = mil_function_body(f);
  mil_op *boundary = op_at(b, op_idx);
  mil_var **vars = calloc((size_t)(nb ? nb : 1), sizeof *vars);
  if (!vars) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < nb; i++) vars[i] = op_at(b, bs[i].op_idx)->outputs[bs[i].out_idx];
  char name[512];
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < nb && st == MIL_OK; i++) {
    mil_var *v = vars[i];
    const char *orig = v->name;
    snprintf(name, sizeof name, "%s__bisected", orig);
    v->name = mil_program_intern(p, name, (size_t)-1);
    mil_dtype dt = v->type->dtype == MIL_DT_FP16 ? MIL_DT_FP32 : v->type->dtype;
    const mil_type *t = v->type->is_scalar ? mil_type_scalar(p, dt) : mil_type_tensor(p, dt, v->type->rank, v->type->dims);
    mil_var *in = t && v->name ? mil_function_add_input(f, orig, t) : NULL;
    if (!in) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
      break;
    }
    mil_var *nv = in;
    if (v->type->dtype == MIL_DT_FP16 && !(nv = add_cast(p, b, v->op, in, MIL_DT_FP16, NULL))) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
      break;
    }
    mil_var_replace_uses_after(v, nv, boundary);
  }
  free(vars);
  if (st == MIL_OK) st = run_pass(p, "common::dead_code_elimination", d);
  if (st != MIL_OK) return st;
  /* inputs nothing uses any more go */
  int32_t k = 0;
  for (int32_t i = 0; i < f->n_inputs; i++)
    if (f->inputs[i]->uses) f->inputs[k++] = f->inputs[i];
    else f->inputs[i]->func_input_of = NULL;
  f->n_inputs = k;
  return MIL_OK;
}

static mil_status save_chunk(mil_model *src, mil_program *p, const char *path, mil_diag *d) {
  mil_status st = run_default(p, d);
  if (st != MIL_OK) {
    mil_program_free(p);
    return st;
  }
  mil_model *m = NULL;
  if ((st = mil_model_from_program(p, src->spec_version, &m, d)) != MIL_OK) return st;
  st = utils_adopt_weights(m, src, d);
  if (st == MIL_OK) st = mil_model_save(m, path, d);
  mil_model_free(m);
  return st;
}

mil_status mil_utils_bisect(mil_model *m, const char *chunk1_path, const char *chunk2_path, mil_utils_bisect_info *info,
                            mil_diag *d) {
  if (info) memset(info, 0, sizeof *info);
  mil_program *p = m->prog;
  if (!p || p->n_functions != 1 || strcmp(p->functions[0]->name, "main"))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: 'bisect_model' only support model with a single 'main' function.",
                          mil_model_path(m));
  if (!chunk1_path || !chunk2_path) return mil_diag_error(d, MIL_ERR_INVALID, "bisect_model: no output path");
  mil_block *b = mil_function_body(p->functions[0]);
  int64_t total = 0, cum = 0;
  for (mil_op *op = b->first; op; op = op->next) {
    int64_t w = weight_bytes(op);
    if (w > 0) total += w;
  }
  int32_t idx = 0, op_idx = -1;
  mil_op *cut = NULL;
  for (mil_op *op = b->first; op; op = op->next, idx++) {
    int64_t w = weight_bytes(op);
    if (w > 0) cum += w;
    if (2 * cum >= total && !starts_const(op->type) && op->n_outputs == 1 && child_ops(op->outputs[0], b) == 1) {
      op_idx = idx;
      cut = op;
      break;
    }
  }
  if (!cut) return mil_diag_error(d, MIL_ERR_INVALID, "%s: Not able to find the bisect point in the model.",
                                  mil_model_path(m));
  /* positions of every op, then the boundary vars */
  idx = 0;
  for (mil_op *op = b->first; op; op = op->next) op->aux = (void *)(intptr_t)idx++;
  int32_t nb = 0, cap = 16;
  bnd *bs = malloc((size_t)cap * sizeof *bs);
  if (!bs) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  idx = 0;
  for (mil_op *op = b->first; op && idx <= op_idx; op = op->next, idx++) {
    if (starts_const(op->type)) continue;
    for (int32_t k = 0; k < op->n_outputs; k++) {
      mil_var *v = op->outputs[k];
      if (v->val) continue;
      bool after = false;
      for (mil_use *u = v->uses; u && !after; u = u->next_use)
        if (u->op) after = (intptr_t)top_op(u->op, b)->aux > op_idx;
      if (!after) continue;
      if (nb == cap) {
        bnd *nbs = realloc(bs, (size_t)(cap *= 2) * sizeof *bs);
        if (!nbs) {
          free(bs);
          return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
        }
        bs = nbs;
      }
      bs[nb++] = (bnd){idx, k};
    }
  }
  for (mil_op *op = b->first; op; op = op->next) op->aux = NULL;
  if (info) {
    info->op_index = op_idx;
    info->op_name = cut->name;
    info->op_type = cut->type;
    info->first_chunk_weight_bytes = cum;
    info->total_weight_bytes = total;
    info->n_boundary = nb;
  }
  mil_program *p1 = mil_program_clone(p), *p2 = mil_program_clone(p);
  mil_status st = p1 && p2 ? MIL_OK : mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (st == MIL_OK) st = make_chunk1(p1, bs, nb, d);
  if (st == MIL_OK) st = make_chunk2(p2, op_idx, bs, nb, d);
  free(bs);
  if (st != MIL_OK) {
    mil_program_free(p1);
    mil_program_free(p2);
    return st;
  }
  st = save_chunk(m, p1, chunk1_path, d);
  if (st == MIL_OK) st = save_chunk(m, p2, chunk2_path, d);
  else mil_program_free(p2);
  return st;
}

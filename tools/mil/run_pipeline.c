/* `mil run` on a Pipeline model: the stages run in order on the CPU
 * reference interpreter, each fed the pipeline inputs (from --input files
 * or random values, one tensor per name for the whole pipeline) and the
 * outputs of the stages before it. */
#include <stdlib.h>
#include <string.h>

#include "mil/utils.h"
#include "run_pipeline.h"

/* The tensor called `name` among the earlier stages' outputs (latest first)
 * and inputs, or NULL. */
static const mil_tensor *known(const cli_pipe *p, int32_t upto, const char *name) {
  for (int32_t s = upto - 1; s >= 0; s--) {
    const mil_tensor *t = mil_interp_output(p->ips[s], name);
    if (t) return t;
  }
  for (int32_t s = 0; s < upto; s++)
    for (int32_t i = 0; i < mil_interp_n_inputs(p->ips[s]); i++)
      if (p->kept[s][i].buf && !strcmp(mil_interp_input_name(p->ips[s], i), name)) return &p->kept[s][i].t;
  return NULL;
}

static mil_status feed(cli_pipe *p, int32_t stage, mil_interp *ip, const cli_input_arg *ins, int n_ins,
                       uint64_t *random_state, cli_tensor *kept, mil_diag *d) {
  int32_t n = mil_interp_n_inputs(ip);
  cli_input_arg *mine = calloc((size_t)n_ins + 1, sizeof *mine);
  if (!mine) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  int n_mine = 0;
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    const char *name = mil_interp_input_name(ip, i);
    const mil_tensor *t = known(p, stage, name);
    if (!t) continue;
    cli_tensor *k = &kept[i];
    k->t = *t;
    k->buf = malloc(t->nbytes ? t->nbytes : 1);
    if (!k->buf) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
      break;
    }
    memcpy(k->buf, t->data, t->nbytes);
    for (int32_t r = 0; r < t->rank && r < MIL_INTERP_MAX_RANK; r++) k->shape[r] = t->shape[r];
    k->t.shape = k->shape;
    k->t.data = k->buf;
    st = mil_interp_set_input(ip, name, &k->t, d);
  }
  /* the --input files naming this stage's other inputs (a FILE without NAME=
   * goes to the first stage) */
  for (int a = 0; a < n_ins && st == MIL_OK; a++) {
    if (!ins[a].name) {
      if (stage == 0) mine[n_mine++] = ins[a];
      continue;
    }
    for (int32_t i = 0; i < n; i++)
      if (!kept[i].buf && !strcmp(mil_interp_input_name(ip, i), ins[a].name)) mine[n_mine++] = ins[a];
  }
  if (st == MIL_OK) st = cli_set_inputs(ip, mine, n_mine, random_state, kept, d);
  free(mine);
  return st;
}

mil_status cli_pipeline_run_prefix(const char *path, const cli_input_arg *ins, int n_ins, uint64_t *random_state,
                                   uint64_t seed, uint64_t max_value_bytes, cli_pipe *p, mil_diag *d) {
  memset(p, 0, sizeof *p);
  mil_status st = mil_utils_pipeline_load(path, &p->stages, &p->n, d);
  if (st != MIL_OK) return st;
  if (p->n < 1) return mil_diag_error(d, MIL_ERR_INVALID, "%s: the pipeline has no stage", path);
  p->ips = calloc((size_t)p->n, sizeof *p->ips);
  p->kept = calloc((size_t)p->n, sizeof *p->kept);
  if (!p->ips || !p->kept) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  for (int32_t s = 0; s + 1 < p->n && st == MIL_OK; s++) {
    st = mil_interp_new(mil_model_program(p->stages[s]), NULL, &p->ips[s], d);
    if (st != MIL_OK) break;
    mil_interp_set_seed(p->ips[s], seed);
    if (max_value_bytes) mil_interp_set_max_value_bytes(p->ips[s], (int64_t)max_value_bytes);
    p->kept[s] = calloc((size_t)mil_interp_n_inputs(p->ips[s]) + 1, sizeof **p->kept);
    if (!p->kept[s]) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    st = feed(p, s, p->ips[s], ins, n_ins, random_state, p->kept[s], d);
    if (st == MIL_OK) st = mil_interp_run(p->ips[s], NULL, d);
  }
  return st;
}

mil_status cli_pipeline_feed(cli_pipe *p, mil_interp *ip, const cli_input_arg *ins, int n_ins, uint64_t *random_state,
                             cli_tensor *kept, mil_diag *d) {
  return feed(p, p->n - 1, ip, ins, n_ins, random_state, kept, d);
}

void cli_pipeline_free(cli_pipe *p) {
  for (int32_t s = 0; p->ips && s < p->n; s++) {
    for (int32_t i = 0; p->kept && p->kept[s] && p->ips[s] && i < mil_interp_n_inputs(p->ips[s]); i++)
      cli_tensor_free(&p->kept[s][i]);
    if (p->kept) free(p->kept[s]);
    mil_interp_free(p->ips[s]);
  }
  free(p->ips);
  free(p->kept);
  mil_utils_pipeline_free(p->stages, p->n);
  memset(p, 0, sizeof *p);
}

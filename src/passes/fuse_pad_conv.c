/* common::fuse_pad_conv — move a pad that feeds transpose -> conv past the
 * transpose, so that the pad sits right before the conv (where later
 * passes can merge the two).
 *
 *   %p: (1, 3, 10, 10, fp32)(Tensor) = pad(x=%x, pad=%amounts, mode=%m, constant_val=%cv, name="p")   # amounts [0, 0, 0, 0, 1, 1, 2, 2]
 *   %t: (1, 10, 10, 3, fp32)(Tensor) = transpose(x=%p, perm=%perm, name="t")                          # perm [0, 2, 3, 1]
 *   %y: ... = conv(x=%t, ...)
 *
 * becomes
 *
 *   %transpose_0: (1, 8, 6, 3, fp32)(Tensor) = transpose(x=%x, perm=%transpose_0_perm_0, name="transpose_0")
 *   %pad_0: (1, 10, 10, 3, fp32)(Tensor) = pad(x=%transpose_0, pad=%pad_0_pad_0, mode=%m, constant_val=%cv, name="pad_0")  # [0, 0, 1, 1, 2, 2, 0, 0]
 *   %y: ... = conv(x=%pad_0, ...)
 *
 * Conditions: the pad output is not a block output; every op reading it is
 * a transpose that feeds at least one op whose type contains "conv"; the
 * pad amounts are known and, permuted along the transpose's perm (with
 * zero rows for the dimensions the pad leaves alone), put no padding on
 * the leading dimensions the pad did not cover. Each transpose is
 * replaced by transpose + pad built before it; the original pad and
 * transposes are removed.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (fuse_pad_conv).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

#define MAX_T 32

/* The permuted pad amounts for transpose t (2 * rank(t) - 2 * rank_diff
 * entries written to out, count in *n_out); false when not representable. */
static bool new_amounts(const mil_value *pad, const mil_op *t, int64_t *out, int32_t *n_out) {
  const mil_value *perm = pass_input_value(t, "perm");
  if (!perm || perm->kind != MIL_VAL_TENSOR || perm->numel < 1 || perm->numel > PASS_NP_MAX_RANK) return false;
  int32_t rank = (int32_t)perm->numel;
  if (pad->numel % 2 != 0) return false;
  int32_t k = (int32_t)(pad->numel / 2), diff = rank - k;
  if (diff < 0) return false;
  int64_t full[2 * PASS_NP_MAX_RANK] = {0}, perm_full[2 * PASS_NP_MAX_RANK];
  for (int32_t i = 0; i < k; i++) {
    full[2 * (diff + i)] = mil_value_get_i64(pad, 2 * i);
    full[2 * (diff + i) + 1] = mil_value_get_i64(pad, 2 * i + 1);
  }
  for (int32_t i = 0; i < rank; i++) {
    int64_t a = mil_value_get_i64(perm, i);
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return false;
    perm_full[2 * i] = full[2 * a];
    perm_full[2 * i + 1] = full[2 * a + 1];
  }
  for (int32_t i = 0; i < 2 * diff; i++)
    if (perm_full[i] != 0) return false;
  *n_out = 2 * k;
  for (int32_t i = 0; i < 2 * k; i++) out[i] = perm_full[2 * diff + i];
  return true;
}

static bool feeds_conv(const mil_op *t) {
  if (t->n_outputs != 1) return false;
  for (const mil_use *u = t->outputs[0]->uses; u; u = u->next_use)
    if (u->op && strstr(u->op->type, "conv")) return true;
  return false;
}

static int fuse(pass_fuse_ctx *c, mil_op *pad) {
  if (strcmp(pad->type, "pad") != 0 || pad->n_outputs != 1) return 0;
  mil_var *out = pad->outputs[0];
  mil_op *ts[MAX_T];
  int n = 0;
  bool any = false, others = false;
  for (const mil_use *u = out->uses; u; u = u->next_use) {
    if (!u->op) continue;
    bool seen = false;
    for (int i = 0; i < n && !seen; i++) seen = ts[i] == u->op;
    if (seen) continue;
    if (n == MAX_T) return 0;
    ts[n++] = u->op;
    if (strcmp(u->op->type, "transpose") == 0 && feeds_conv(u->op)) any = true;
    else others = true;
  }
  if (!any || others || pass_fuse_is_output_of(out, pad->block)) return 0;
  const mil_value *amounts = pass_input_value(pad, "pad");
  if (!amounts || amounts->kind != MIL_VAL_TENSOR || !mil_dtype_is_int(amounts->type->dtype)) return 0;
  int64_t na[MAX_T][2 * PASS_NP_MAX_RANK];
  int32_t nn[MAX_T];
  for (int i = n - 1, j = 0; i > j; i--, j++) { /* creation order */
    mil_op *t = ts[i];
    ts[i] = ts[j];
    ts[j] = t;
  }
  for (int i = 0; i < n; i++)
    if (ts[i]->block != pad->block || mil_op_input_var(ts[i], "x") != out || !new_amounts(amounts, ts[i], na[i], &nn[i]))
      return 0;
  mil_op *marks[MAX_T];
  mil_var *news[MAX_T];
  bool ok = true;
  int built = 0;
  for (; built < n && ok; built++) {
    mil_op *t = ts[built];
    marks[built] = t->prev;
    mil_op *nt = pass_fuse_new_op(c, t, "transpose", NULL);
    mil_var *pc = nt ? pass_fuse_const(c, nt, nt->name, "perm", pass_input_value(t, "perm")) : NULL;
    if (!pc) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(nt, "x", mil_op_input_var(pad, "x"));
    mil_op_add_input(nt, "perm", pc);
    mil_status st = pass_fuse_finish(c, nt);
    if (st == MIL_ERR_NOMEM) return -(int)st;
    if (st != MIL_OK) {
      ok = false;
      break;
    }
    mil_op *np = pass_fuse_new_op(c, t, "pad", NULL);
    int64_t shape[1] = {nn[built]};
    mil_value *av = np ? mil_value_new_tensor(c->p, amounts->type->dtype, 1, shape, false, NULL) : NULL;
    for (int32_t k = 0; av && k < nn[built]; k++) mil_value_set_i64(av, k, na[built][k]);
    mil_var *ac = av ? pass_fuse_const(c, np, np->name, "pad", av) : NULL;
    if (!ac) return -(int)MIL_ERR_NOMEM;
    static const char *const skip[] = {"x", "pad"};
    mil_op_add_input(np, "x", nt->outputs[0]);
    mil_op_add_input(np, "pad", ac);
    pass_fuse_copy_inputs(np, pad, skip, 2);
    st = pass_fuse_finish(c, np);
    if (st == MIL_ERR_NOMEM) return -(int)st;
    if (st != MIL_OK || !mil_type_equal(np->outputs[0]->type, t->outputs[0]->type)) {
      ok = false;
      break;
    }
    news[built] = np->outputs[0];
  }
  pass_nonrep *nr = ok ? pass_fuse_nonrep(c) : NULL;
  if (ok && !nr) return -(int)MIL_ERR_NOMEM;
  for (int i = 0; i < n && ok; i++) ok = pass_nonrep_can_replace(nr, ts[i]->outputs[0], news[i]);
  if (!ok) {
    for (int i = built < n ? built : n - 1; i >= 0; i--) pass_fuse_rollback(ts[i], marks[i]);
    return 0;
  }
  for (int i = 0; i < n; i++)
    if (!pass_replace_uses_after(ts[i], ts[i]->outputs[0], news[i])) {
      mil_diag_error(c->d, MIL_ERR_INVALID, "fuse_pad_conv: cannot replace the output of '%s'", ts[i]->name);
      return -(int)MIL_ERR_INVALID;
    }
  mil_op *rm[MAX_T + 1];
  for (int i = 0; i < n; i++) rm[i] = ts[i];
  rm[n] = pad;
  mil_status st = pass_remove_ops(rm, n + 1, c->d);
  return st == MIL_OK ? 1 : -(int)st;
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"pad", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_pad_conv"};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"pad", NULL};
const mil_pass_def pass_def_fuse_pad_conv = {"common::fuse_pad_conv",
                                             "move a pad past a transpose so that it sits right before a conv", NULL,
                                             0, run, k_anchors};

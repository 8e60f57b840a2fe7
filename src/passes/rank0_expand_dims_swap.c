/* common::rank0_expand_dims_swap — move expand_dims(axes=[0]) in front of
 * a binary elementwise op on two rank-0 operands (the backend computes
 * such ops at rank 1 anyway).
 *
 *   %s: (fp32)(Scalar) = add(x=%a, y=%two, name="s")           # %a rank 0, %two a const
 *   %e: (1,fp32)(Tensor) = expand_dims(x=%s, axes=%ax0, name="e")
 *   %o: (3,fp32)(Tensor) = mul(x=%s, y=%v, name="o")
 *   } -> (%e, %o)
 *
 * becomes
 *
 *   %expand_dims_0: (1,fp32)(Tensor) = expand_dims(x=%a, axes=%expand_dims_0_axes_0, name="expand_dims_0")
 *   %expand_dims_1: (1,fp32)*(Tensor) = expand_dims(x=%two, axes=%expand_dims_1_axes_0, name="expand_dims_1")
 *   %e: (1,fp32)(Tensor) = add(x=%expand_dims_0, y=%expand_dims_1, name="e")
 *   %squeeze_0: (fp32)(Scalar) = squeeze(x=%e, name="squeeze_0")
 *   %o: (3,fp32)(Tensor) = mul(x=%squeeze_0, y=%v, name="o")
 *   } -> (%e, %o)
 *
 * Conditions: add, sub, mul, real_div or floor_div with both operands of
 * rank 0, exactly one of them known; among the ops reading its output
 * exactly one is an expand_dims, with axes [0]; the output is not an
 * output of the block. The other readers are rebuilt (same type, inputs
 * and name, before the original) reading a squeeze of the new op. Readers
 * that read the output twice, inside a tuple input, from a nested block,
 * or that have several outputs are not handled (coremltools fails on them)
 * and leave the pattern alone.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_elementwise_binary.py (rank0_expand_dims_swap).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

#define MAX_OTHERS 64

static bool is_binary(const mil_op *op) {
  static const char *const types[] = {"add", "sub", "mul", "real_div", "floor_div"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(op->type, types[i]) == 0) return true;
  return false;
}

/* An expand_dims(x=v, axes=[0]) before anchor; NULL on failure (*nomem). */
static mil_op *expand0(pass_fuse_ctx *c, mil_op *anchor, mil_var *v, bool *nomem) {
  int64_t one = 1;
  mil_value *axes = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &one, false, NULL);
  mil_op *e = axes ? pass_fuse_new_op(c, anchor, "expand_dims", NULL) : NULL;
  mil_var *ac = e ? pass_fuse_const(c, e, e->name, "axes", axes) : NULL;
  if (!ac) {
    *nomem = true;
    return NULL;
  }
  mil_op_add_input(e, "x", v);
  mil_op_add_input(e, "axes", ac);
  mil_status st = pass_fuse_finish(c, e);
  if (st == MIL_ERR_NOMEM) *nomem = true;
  return st == MIL_OK ? e : NULL;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (!is_binary(op) || op->n_outputs != 1) return 0;
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (!x || !y || pass_fuse_rank(x) != 0 || pass_fuse_rank(y) != 0) return 0;
  if ((x->val == NULL) == (y->val == NULL)) return 0;
  mil_var *out = op->outputs[0];
  mil_block *b = op->block;
  mil_op *ed = NULL, *others[MAX_OTHERS];
  int n_others = 0;
  for (const mil_use *u = out->uses; u; u = u->next_use) {
    if (!u->op) continue;
    if (strcmp(u->op->type, "expand_dims") == 0) {
      if (ed) return 0;
      ed = u->op;
      continue;
    }
    if (n_others == MAX_OTHERS) return 0;
    for (int i = 0; i < n_others; i++)
      if (others[i] == u->op) return 0; /* read twice */
    others[n_others++] = u->op;
  }
  if (!ed || ed->block != b || ed->n_outputs != 1) return 0;
  const mil_value *axes = pass_input_value(ed, "axes");
  if (!axes || axes->kind != MIL_VAL_TENSOR || !axes->type || axes->type->rank != 1 || axes->numel != 1 ||
      mil_value_get_i64(axes, 0) != 0)
    return 0;
  if (pass_fuse_is_output_of(out, b)) return 0;
  /* creation order of the readers (use lists are newest first) */
  for (int i = 0, j = n_others - 1; i < j; i++, j--) {
    mil_op *t = others[i];
    others[i] = others[j];
    others[j] = t;
  }
  for (int i = 0; i < n_others; i++) {
    mil_op *o = others[i];
    if (o->block != b || o->n_outputs != 1 || o->n_blocks > 0) return 0;
    for (int32_t k = 0; k < o->n_inputs; k++)
      if (o->inputs[k].is_tuple || o->inputs[k].n_args != 1)
        for (int32_t a = 0; a < o->inputs[k].n_args; a++)
          if (o->inputs[k].args[a].use.var == out) return 0;
  }
  bool nomem = false;
  mil_op *mark = op->prev;
  mil_op *e1 = expand0(c, op, x, &nomem);
  mil_op *e2 = e1 ? expand0(c, op, y, &nomem) : NULL;
  mil_op *nb = e2 ? pass_fuse_new_op(c, op, op->type, ed->outputs[0]->name) : NULL;
  mil_status st = MIL_OK;
  if (nb) {
    mil_op_add_input(nb, "x", e1->outputs[0]);
    mil_op_add_input(nb, "y", e2->outputs[0]);
    st = pass_fuse_finish(c, nb);
  }
  if (st == MIL_ERR_NOMEM) nomem = true;
  if (nomem) return -(int)MIL_ERR_NOMEM;
  if (!nb || st != MIL_OK || !mil_type_equal(nb->outputs[0]->type, ed->outputs[0]->type)) {
    pass_fuse_rollback(op, mark);
    return 0;
  }
  mil_op *rm[MAX_OTHERS + 2];
  int n_rm = 0;
  rm[n_rm++] = op;
  rm[n_rm++] = ed;
  /* the squeeze and the rebuilt readers; checked before anything is
   * replaced so that a failure leaves the program as it was */
  mil_op *sq = NULL, *rebuilt[MAX_OTHERS];
  mil_op *marks[MAX_OTHERS];
  if (n_others > 0) {
    sq = pass_fuse_new_op(c, op, "squeeze", NULL);
    if (!sq) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(sq, "x", nb->outputs[0]);
    st = pass_fuse_finish(c, sq);
    if (st == MIL_ERR_NOMEM) return -(int)st;
    if (st != MIL_OK) {
      pass_fuse_rollback(op, mark);
      return 0;
    }
  }
  int built = 0;
  for (; built < n_others; built++) {
    mil_op *o = others[built];
    marks[built] = o->prev;
    mil_op *no = pass_fuse_new_op(c, o, o->type, o->name);
    if (!no) return -(int)MIL_ERR_NOMEM;
    pass_fuse_copy_inputs(no, o, NULL, 0);
    for (int32_t k = 0; k < no->n_inputs; k++)
      if (no->inputs[k].n_args == 1 && no->inputs[k].args[0].use.var == out)
        mil_arg_set_var(no, &no->inputs[k].args[0], sq->outputs[0]);
    st = pass_fuse_finish(c, no);
    if (st == MIL_ERR_NOMEM) return -(int)st;
    if (st != MIL_OK || !mil_type_equal(no->outputs[0]->type, o->outputs[0]->type)) break;
    rebuilt[built] = no;
    rm[n_rm++] = o;
  }
  if (built < n_others) {
    for (int i = built; i >= 0; i--) pass_fuse_rollback(others[i], marks[i]);
    pass_fuse_rollback(op, mark);
    return 0;
  }
  if (!pass_fuse_nonrep(c)) return -(int)MIL_ERR_NOMEM;
  bool ok = pass_nonrep_can_replace(c->nonrep, ed->outputs[0], nb->outputs[0]);
  for (int i = 0; i < n_others && ok; i++)
    ok = pass_nonrep_can_replace(c->nonrep, others[i]->outputs[0], rebuilt[i]->outputs[0]);
  if (!ok) { /* constexpr inputs forbid the replacement */
    for (int i = n_others - 1; i >= 0; i--) pass_fuse_rollback(others[i], marks[i]);
    pass_fuse_rollback(op, mark);
    return 0;
  }
  ok = pass_replace_uses_after(ed, ed->outputs[0], nb->outputs[0]);
  for (int i = 0; i < n_others && ok; i++) ok = pass_replace_uses_after(others[i], others[i]->outputs[0], rebuilt[i]->outputs[0]);
  if (!ok) {
    mil_diag_error(c->d, MIL_ERR_INVALID, "%s: cannot replace the outputs of '%s'", c->pass, op->name);
    return -(int)MIL_ERR_INVALID;
  }
  st = pass_remove_ops(rm, n_rm, c->d);
  return st == MIL_OK ? 1 : -(int)st;
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"add", "sub", "mul", "real_div", "floor_div", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"expand_dims", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "rank0_expand_dims_swap"};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"expand_dims", NULL};
const mil_pass_def pass_def_rank0_expand_dims_swap = {
    "common::rank0_expand_dims_swap", "move expand_dims(axes=[0]) before a rank-0 binary elementwise op", NULL, 0,
    run, k_anchors};

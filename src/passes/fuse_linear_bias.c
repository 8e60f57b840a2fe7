/* common::fuse_linear_bias — fold a constant add/sub after linear into the
 * linear's bias (and, for const - linear, its negated weight).
 *
 *   %l: (2, 4, fp32)(Tensor) = linear(x=%x, weight=%w, bias=%b, name="l")
 *   %c: (4,fp32)*(Tensor) = const(val=[1.0, 2.0, 3.0, 4.0], name="c")
 *   %y: (2, 4, fp32)(Tensor) = sub(x=%c, y=%l, name="y")
 *
 * becomes
 *
 *   %y_weight_0: (4, 3, fp32)*(Tensor) = const(val=<-w>, name="y_weight_0")
 *   %y_bias_0: (4,fp32)*(Tensor) = const(val=<c - b>, name="y_bias_0")
 *   %y: (2, 4, fp32)(Tensor) = linear(x=%x, weight=%y_weight_0, bias=%y_bias_0, name="y")
 *   %c: ... (left in place, dead)
 *
 * The weight is always re-emitted as a new const "<out>_weight_0" (negated
 * only for const - linear), the bias as "<out>_bias_0"; both go before the
 * linear, followed by the new linear named after the add/sub output.
 *
 * Conditions: the linear output is not an output of its block and is read
 * by exactly one op, an add or sub whose other operand is known; the
 * weight and bias are known (a missing bias is the zeros coremltools
 * materializes); the constant has as many elements as the bias and its
 * last dimension is Dout. Sums are computed in numpy's dtypes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_linear.py
 * (fuse_linear_bias).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static int oom(pass_fuse_ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return -(int)MIL_ERR_NOMEM;
}

static int try_fuse(pass_fuse_ctx *c, mil_op *lin, mil_op *add) {
  mil_var *ax = mil_op_input_var(add, "x"), *ay = mil_op_input_var(add, "y");
  if (!ax || !ay || (!ax->val && !ay->val)) return 0;
  bool is_sub = strcmp(add->type, "sub") == 0;
  bool first = ax == lin->outputs[0];
  mil_var *weight = mil_op_input_var(lin, "weight");
  const mil_value *cv = first ? ay->val : ax->val;
  if (!weight || !weight->val || !cv) return 0;
  bool nomem = false;
  pass_np lb = {0}, b = {0}, nb = {0};
  int r = 0;
  const mil_value *wval = weight->val;
  if (!pass_weight_numeric(wval) || wval->type->rank != 2) goto done;
  mil_dtype wdt = wval->type->dtype;
  int64_t wrows = wval->type->dims[0].size;
  if (!mil_op_find_input(lin, "bias")) {
    if (wrows < 0) goto done;
    if (!pass_np_full(&lb, wdt, 1, &wrows, 0)) {
      nomem = true;
      goto done;
    }
  } else if (!pass_np_from_value(&lb, pass_input_value(lin, "bias"), &nomem)) {
    goto done;
  }
  if (!pass_np_from_value(&b, cv, &nomem)) goto done;
  if (lb.rank < 1 || lb.n != b.n || b.rank < 1) goto done;
  int64_t dout = lb.shape[0];
  if (b.shape[b.rank - 1] != dout) goto done;
  b.rank = 1; /* np.reshape(bias, (Dout,)) */
  b.shape[0] = dout;
  b.is_scalar = false;
  if (is_sub) {
    pass_np *neg = first ? &b : &lb;
    for (int64_t i = 0; i < neg->n; i++) neg->v[i] = -neg->v[i];
  }
  int k = pass_np_binary(&nb, &lb, &b, '+');
  if (k <= 0) {
    nomem = k < 0;
    goto done;
  }
  /* -linear_weight for const - linear, else the weight itself */
  const mil_value *wv = is_sub && !first ? pass_weight_negate(c->p, wval) : pass_weight_as_const(c->p, wval);
  mil_value *bv = wv ? pass_np_to_value(c->p, &nb, nb.dt == MIL_DT_FP64 ? MIL_DT_FP32 : nb.dt) : NULL;
  if (!bv) {
    nomem = true;
    goto done;
  }
  const char *name = add->outputs[0]->name;
  mil_op *mark = lin->prev;
  mil_var *wc = pass_fuse_const(c, lin, name, "weight", wv);
  mil_var *bc = wc ? pass_fuse_const(c, lin, name, "bias", bv) : NULL;
  mil_op *nl = bc ? pass_fuse_new_op(c, lin, "linear", name) : NULL;
  if (!nl) {
    r = -(int)MIL_ERR_NOMEM;
    goto done;
  }
  static const char *const skip[] = {"weight", "bias"};
  pass_fuse_copy_inputs(nl, lin, skip, 2);
  mil_op_add_input(nl, "weight", wc);
  mil_op_add_input(nl, "bias", bc);
  mil_status st = pass_fuse_finish(c, nl);
  if (st == MIL_ERR_NOMEM) {
    r = -(int)st;
    goto done;
  }
  if (st == MIL_OK && mil_type_equal(nl->outputs[0]->type, add->outputs[0]->type)) {
    mil_op *rm[2] = {lin, add};
    r = pass_fuse_replace_and_remove(c, add, add->outputs[0], nl->outputs[0], rm, 2);
  }
  if (r == 0) pass_fuse_rollback(lin, mark);
done:
  pass_np_free(&lb);
  pass_np_free(&b);
  pass_np_free(&nb);
  return nomem ? oom(c) : r;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "linear") != 0 || op->n_outputs < 1) return 0;
  mil_var *out = op->outputs[0];
  if (pass_fuse_is_output_of(out, op->block)) return 0;
  mil_op *child = pass_only_child_op(out);
  if (!child || child->n_outputs != 1 || (strcmp(child->type, "add") != 0 && strcmp(child->type, "sub") != 0))
    return 0;
  return try_fuse(c, op, child);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"linear", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_linear_bias", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"linear", NULL};
const mil_pass_def pass_def_fuse_linear_bias = {"common::fuse_linear_bias",
                                                "fold a constant add/sub after linear into its weight and bias", NULL,
                                                0, run, k_anchors};

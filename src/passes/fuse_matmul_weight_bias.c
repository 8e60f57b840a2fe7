/* common::fuse_matmul_weight_bias — matmul by a constant rank-2 weight
 * followed by the addition of a constant vector becomes linear.
 *
 *   %w: (4, 2, fp32)*(Tensor) = const(val=..., name="w")
 *   %m: (3, 2, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_x=%f, transpose_y=%f, name="m")
 *   %b: (2,fp32)*(Tensor) = const(val=[0.5, 1.5], name="b")
 *   %y: (3, 2, fp32)(Tensor) = add(x=%m, y=%b, name="y")
 *
 * becomes
 *
 *   %transpose_0_perm_0: (2,int32)*(Tensor) = const(val=[1, 0], name="transpose_0_perm_0")
 *   %transpose_0: (2, 4, fp32)*(Tensor) = transpose(x=%w, perm=%transpose_0_perm_0, name="transpose_0")
 *   %y_bias_0: (2,fp32)*(Tensor) = const(val=[0.5, 1.5], name="y_bias_0")
 *   %y: (3, 2, fp32)(Tensor) = linear(x=%x, weight=%transpose_0, bias=%y_bias_0, name="y")
 *
 * A transposed x (transpose_x) gets an explicit transpose of its last two
 * axes; a weight already transposed (transpose_y) is used as is. sub
 * subtracts the negated vector. The bias may have leading dimensions of
 * size 1. Conditions: the matmul output is read exactly once, by the
 * add/sub, and is not a block output; the weight is y, known, of rank 2,
 * read only by this matmul and free of constexpr inputs; x has rank >= 2.
 *
 * Differences from coremltools, which would change the program's result:
 * a constant weight in x (weight @ x) and sub(const, matmul) are left
 * alone; coremltools rewrites both into a linear that computes something
 * else.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_linear.py
 * (fuse_matmul_weight_bias).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

static bool flag(const mil_op *op, const char *name) {
  const mil_value *v = pass_input_value(op, name);
  return v && v->kind == MIL_VAL_TENSOR && v->numel == 1 && mil_value_get_f64(v, 0) != 0;
}

/* transpose(v) swapping the last two axes, before anchor, fresh name. */
static mil_op *swap_last(pass_fuse_ctx *c, mil_op *anchor, mil_var *v, mil_status *st) {
  int32_t r = pass_fuse_rank(v);
  int64_t perm[PASS_NP_MAX_RANK];
  *st = MIL_OK;
  if (r < 2 || r > PASS_NP_MAX_RANK) return NULL;
  for (int32_t i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  mil_value *pv = pass_fuse_ints(c->p, r, perm);
  mil_op *t = pv ? pass_fuse_new_op(c, anchor, "transpose", NULL) : NULL;
  mil_var *pc = t ? pass_fuse_const(c, t, t->name, "perm", pv) : NULL;
  if (!pc) {
    *st = MIL_ERR_NOMEM;
    return NULL;
  }
  mil_op_add_input(t, "x", v);
  mil_op_add_input(t, "perm", pc);
  mil_status s = pass_fuse_finish(c, t);
  *st = s == MIL_ERR_NOMEM ? s : MIL_OK;
  return s == MIL_OK ? t : NULL;
}

static int fuse(pass_fuse_ctx *c, mil_op *mm) {
  if (strcmp(mm->type, "matmul") != 0 || mm->n_outputs != 1) return 0;
  mil_op *add = pass_only_child_op(mm->outputs[0]);
  if (!add || add->n_outputs != 1 || (strcmp(add->type, "add") != 0 && strcmp(add->type, "sub") != 0)) return 0;
  mil_var *x = mil_op_input_var(mm, "x"), *w = mil_op_input_var(mm, "y");
  mil_var *ax = mil_op_input_var(add, "x"), *ay = mil_op_input_var(add, "y");
  if (!x || !w || !ax || !ay) return 0;
  if (!x->val && !w->val) return 0;
  if (!ax->val && !ay->val) return 0;
  if (x->val) return 0; /* weight @ x: see the top */
  bool is_sub = strcmp(add->type, "sub") == 0;
  if (is_sub && ax->val) return 0; /* const - matmul: see the top */
  if (mil_var_is_block_output(mm->outputs[0])) return 0;
  bool tw = flag(mm, "transpose_y"), tx = flag(mm, "transpose_x");
  int nonrep = pass_fuse_nonrep_has(c, w);
  if (nonrep != 0) return nonrep < 0 ? nonrep : 0;
  if (pass_fuse_rank(x) < 2 || pass_fuse_rank(w) != 2) return 0;
  if (pass_n_op_uses(w) > 1) return 0;
  int64_t d_out = w->type->dims[tw ? 0 : 1].size;
  const mil_value *bv = ax->val ? ax->val : ay->val;
  bool nomem = false;
  pass_np b;
  if (!pass_np_from_value(&b, bv, &nomem)) return nomem ? -(int)MIL_ERR_NOMEM : 0;
  int r = 0;
  if (b.rank > 1) {
    for (int32_t i = 0; i + 1 < b.rank; i++)
      if (b.shape[i] != 1) goto done;
    pass_np_squeeze(&b);
  }
  if (b.rank != 1 || b.shape[0] != d_out) goto done;
  if (is_sub)
    for (int64_t i = 0; i < b.n; i++) b.v[i] = -b.v[i];
  b.is_scalar = false;
  const char *name = add->outputs[0]->name;
  mil_op *mark = mm->prev;
  mil_status st = MIL_OK;
  mil_var *xin = x, *win = w;
  if (tx) {
    mil_op *t = swap_last(c, mm, x, &st);
    xin = t ? t->outputs[0] : NULL;
  }
  if (xin && !tw) {
    mil_op *t = swap_last(c, mm, w, &st);
    win = t ? t->outputs[0] : NULL;
  }
  mil_op *lin = NULL;
  if (xin && win) {
    mil_value *bval = pass_np_to_value(c->p, &b, b.dt == MIL_DT_FP64 ? MIL_DT_FP32 : b.dt);
    mil_var *bc = bval ? pass_fuse_const(c, mm, name, "bias", bval) : NULL;
    lin = bc ? pass_fuse_new_op(c, mm, "linear", name) : NULL;
    if (!lin) {
      r = -(int)MIL_ERR_NOMEM;
      goto done;
    }
    mil_op_add_input(lin, "x", xin);
    mil_op_add_input(lin, "weight", win);
    mil_op_add_input(lin, "bias", bc);
    st = pass_fuse_finish(c, lin);
    if (st != MIL_OK) lin = NULL;
  }
  if (st == MIL_ERR_NOMEM) {
    r = -(int)st;
    goto done;
  }
  if (lin && mil_type_equal(lin->outputs[0]->type, add->outputs[0]->type)) {
    mil_op *rm[2] = {mm, add};
    r = pass_fuse_replace_and_remove(c, add, add->outputs[0], lin->outputs[0], rm, 2);
  }
  if (r == 0) pass_fuse_rollback(mm, mark);
done:
  pass_np_free(&b);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  /* the pass builds and removes ops only through the fuse helpers */
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_matmul_weight_bias", .lazy_names = true};
  static const char *const types[] = {"matmul", NULL};
  s = pass_fuse_run_types(&c, fuse, true, false, types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"matmul", NULL};
const mil_pass_def pass_def_fuse_matmul_weight_bias = {"common::fuse_matmul_weight_bias",
                                                       "replace matmul by a const weight + const add/sub by linear",
                                                       NULL, 0, run, k_anchors};

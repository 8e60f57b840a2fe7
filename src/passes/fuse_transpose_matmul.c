/* common::fuse_transpose_matmul — absorb a transpose of the last two
 * dimensions into matmul's transpose_x / transpose_y flags.
 *
 *   %tx: (2, 3, fp32)(Tensor) = transpose(x=%x, perm=%p10, name="tx")     # perm (1, 0)
 *   %y: (3, 5, fp32)(Tensor) = matmul(x=%tx, y=%w, transpose_x=%f, transpose_y=%f, name="y")
 *
 * becomes
 *
 *   %tx: ... (left in place; dead code elimination removes it when unused)
 *   %y_transpose_x_0: (bool)*(Scalar) = const(val=True, name="y_transpose_x_0")
 *   %y_transpose_y_0: (bool)*(Scalar) = const(val=False, name="y_transpose_y_0")
 *   %y: (3, 5, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_x=%y_transpose_x_0, transpose_y=%y_transpose_y_0, name="y")
 *
 * An operand counts when it is the output of a transpose of rank >= 2 whose
 * perm (negative entries made positive) is (0, 1, ..., r-1, r-2): only the
 * last two axes swapped. Each such operand is replaced by the transpose's
 * input and its flag flipped (a missing flag is false). The new matmul
 * keeps the old one's name and is inserted before it; only the matmul is
 * removed. One sweep over every block, nested blocks first. Like
 * coremltools, the perm const of every transpose examined is rewritten in
 * canonical form (entries in [0, r-2) positive, the last two negative:
 * (1, 0, 2) becomes (1, -3, -1)), which denotes the same permutation.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_linear.py
 * (fuse_transpose_matmul).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

/* coremltools canonicalizes the perm array in place while checking it
 * (negative entries made positive, then the last two made negative), so
 * the const feeding the transpose ends up holding that form; the
 * permutation it denotes is unchanged. Done here too, to the const's
 * value. */
static void canonicalize_perm(pass_fuse_ctx *c, const mil_op *t, int32_t rank) {
  mil_var *pv = mil_op_input_var(t, "perm");
  const mil_value *perm = pv ? pv->val : NULL;
  if (!perm || !pv->op || !mil_op_is_const(pv->op) || perm->kind != MIL_VAL_TENSOR || !perm->type ||
      perm->type->rank != 1 || perm->numel < 2 || !mil_dtype_is_int(perm->type->dtype))
    return;
  int64_t n = perm->numel;
  bool changed = false;
  for (int64_t i = 0; i < n && !changed; i++) {
    int64_t p = mil_value_get_i64(perm, i);
    int64_t q = p < 0 ? p + rank : p;
    changed = (i >= n - 2 ? q - rank : q) != p;
  }
  if (!changed) return; /* already canonical */
  mil_value *nv = mil_value_new_tensor(c->p, perm->type->dtype, 1, &n, false, NULL);
  if (!nv) return;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = mil_value_get_i64(perm, i);
    int64_t q = p < 0 ? p + rank : p;
    if (i >= n - 2) q -= rank;
    mil_value_set_i64(nv, i, q);
  }
  mil_var_set_value(pv, nv);
}

static bool swaps_last_two(pass_fuse_ctx *c, const mil_var *v) {
  const mil_op *t = v ? v->op : NULL;
  if (!t || t->type != (const char *)c->ud) return false; /* the interned "transpose" */
  int32_t rank = pass_fuse_rank(v);
  if (rank < 2) return false;
  const mil_value *perm = pass_input_value(t, "perm");
  if (!perm || perm->kind != MIL_VAL_TENSOR || perm->numel != rank) return false;
  bool ok = true;
  for (int32_t i = 0; i < rank && ok; i++) {
    int64_t p = mil_value_get_i64(perm, i);
    if (p < 0) p += rank;
    int64_t want = i < rank - 2 ? i : (i == rank - 2 ? rank - 1 : rank - 2);
    ok = p == want;
  }
  canonicalize_perm(c, t, rank);
  return ok;
}

static bool flag(const mil_op *op, const char *name) {
  const mil_value *v = pass_input_value(op, name);
  return v && v->kind == MIL_VAL_TENSOR && v->numel == 1 && mil_value_get_f64(v, 0) != 0;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "matmul") != 0 || op->n_outputs != 1) return 0;
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (!x || !y) return 0;
  bool fx = swaps_last_two(c, x), fy = swaps_last_two(c, y);
  if (!fx && !fy) return 0;
  bool tx = flag(op, "transpose_x"), ty = flag(op, "transpose_y");
  if (fx) {
    x = mil_op_input_var(x->op, "x");
    tx = !tx;
  }
  if (fy) {
    y = mil_op_input_var(y->op, "x");
    ty = !ty;
  }
  if (!x || !y) return 0;
  mil_op *mark = op->prev;
  mil_value *vx = mil_value_new_bool(c->p, tx), *vy = mil_value_new_bool(c->p, ty);
  mil_var *cx = vx ? pass_fuse_const(c, op, op->name, "transpose_x", vx) : NULL;
  mil_var *cy = cx && vy ? pass_fuse_const(c, op, op->name, "transpose_y", vy) : NULL;
  mil_op *m = cy ? pass_fuse_new_op(c, op, "matmul", op->name) : NULL;
  if (!m) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(m, "x", x);
  mil_op_add_input(m, "y", y);
  mil_op_add_input(m, "transpose_x", cx);
  mil_op_add_input(m, "transpose_y", cy);
  return pass_fuse_replace_one(c, op, m, mark);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"matmul", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"transpose", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_transpose_matmul", .lazy_names = true};
  c.ud = (void *)mil_program_find_string(p, "transpose", (size_t)-1); /* NULL: no transpose, nothing to fold */
  s = pass_fuse_run_types(&c, fuse, false, true, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"matmul", NULL};
const mil_pass_def pass_def_fuse_transpose_matmul = {
    "common::fuse_transpose_matmul", "fold transposes of the last two axes into matmul's transpose flags", NULL, 0,
    run, k_anchors};

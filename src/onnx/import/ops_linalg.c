/* ONNX linear algebra: MatMul, Gemm (transA / transB / alpha / beta),
 * Einsum. Gemm with a known B and C becomes linear (coremltools' torch
 * addmm / linear), otherwise matmul with transposes plus scaling. Einsum
 * of one or two operands (ellipses of equal length, diagonals through an
 * identity mask) becomes reduce_sum / transpose / reshape / matmul, the way
 * coremltools' torch frontend lowers einsum equations MIL's einsum op does
 * not take. */
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_status conv_matmul(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1);
  if (!a || !b) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "matmul", A("x", a), A("y", b)));
}

static mil_status conv_gemm(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1), *cc = onnx_in(n, 2);
  if (!a || !b) return MIL_ERR_INVALID;
  double alpha = onnx_attr_f(n, "alpha", 1), beta = onnx_attr_f(n, "beta", 1);
  bool ta = onnx_attr_i(n, "transA", 0) != 0, tb = onnx_attr_i(n, "transB", 0) != 0;
  mil_dtype dt = onnx_dtype(a);
  mil_var *r;
  bool bias_ok = !cc || (cc->val && onnx_rank(cc) <= 1 && beta == 1);
  if (b->val && !ta && alpha == 1 && bias_ok && onnx_rank(b) == 2) {
    mil_var *w = tb ? b : ONNX_OP(c, "transpose", A("x", b), K("perm", onnx_i32s(c, 2, (int64_t[]){1, 0})));
    int64_t nout = w && w->type->dims[0].size >= 0 ? w->type->dims[0].size : -1;
    if (cc && (nout < 0 || mil_type_numel(cc->type) != nout)) bias_ok = false;
    if (bias_ok && w) {
      r = cc ? ONNX_OP(c, "linear", A("x", a), A("weight", w), A("bias", cc)) : ONNX_OP(c, "linear", A("x", a), A("weight", w));
      return onnx_set_out(c, n, 0, r);
    }
  }
  r = ONNX_OP(c, "matmul", A("x", a), A("y", b), K("transpose_x", onnx_bool(c, ta)), K("transpose_y", onnx_bool(c, tb)));
  if (r && alpha != 1) r = ONNX_OP(c, "mul", A("x", r), K("y", onnx_fscalar(c, dt, alpha)));
  if (r && cc) {
    mil_var *cb = beta == 1 ? cc : ONNX_OP(c, "mul", A("x", cc), K("y", onnx_fscalar(c, dt, beta)));
    r = ONNX_OP(c, "add", A("x", r), A("y", cb));
  }
  return onnx_set_out(c, n, 0, r);
}

typedef struct es_term {
  char idx[16];
  int n;
} es_term;

/* Parses the letters of a term; "..." stands for `ell` dims, named by
 * the placeholders '0', '1', ... (aligned from the right, as numpy
 * broadcasts them). Repeated letters (diagonals) are kept. */
static bool parse_term(const char *s, const char *e, es_term *t, int ell) {
  t->n = 0;
  for (const char *p = s; p < e; p++) {
    if (*p == ' ') continue;
    if (*p == '.' && p + 2 < e + 1 && p[1] == '.' && p[2] == '.') {
      for (int k = 0; k < ell && t->n < 16; k++) t->idx[t->n++] = (char)('0' + (9 - ell + 1 + k));
      p += 2;
      continue;
    }
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || t->n >= 16) return false;
    t->idx[t->n++] = *p;
  }
  return true;
}

/* letters of a term (no ellipsis) */
static int term_letters(const char *s, const char *e) {
  int k = 0;
  for (const char *p = s; p < e; p++) k += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
  return k;
}

/* x's diagonals: a letter repeated in its term keeps one axis, x * eye
 * summed over the other. */
static mil_var *diagonals(onnx_ctx *c, mil_var *x, es_term *t) {
  for (int p = 0; p < t->n && x; p++)
    for (int q = p + 1; q < t->n && x; q++) {
      if (t->idx[p] != t->idx[q]) continue;
      int64_t d = x->type->dims[p].size;
      if (d < 0 || d != x->type->dims[q].size) return NULL;
      int64_t shape[16];
      for (int i = 0; i < t->n; i++) shape[i] = i == p || i == q ? d : 1;
      mil_value *eye = mil_value_new_tensor(c->p, onnx_dtype(x), t->n, shape, false, NULL);
      if (!eye) return NULL;
      int64_t stride_p = 1, stride_q = 1;
      for (int i = t->n - 1; i > p; i--) stride_p *= shape[i];
      for (int i = t->n - 1; i > q; i--) stride_q *= shape[i];
      for (int64_t k = 0; k < d; k++) mil_value_set_f64(eye, k * stride_p + k * stride_q, 1);
      int64_t qa = q;
      x = ONNX_OP(c, "reduce_sum", A("x", ONNX_OP(c, "mul", A("x", x), K("y", eye))), K("axes", onnx_i32s(c, 1, &qa)),
                  K("keep_dims", onnx_bool(c, false)));
      for (int i = q; i < t->n - 1; i++) t->idx[i] = t->idx[i + 1];
      t->n--;
      q--;
    }
  return x;
}

static int find(const es_term *t, char ch) {
  for (int i = 0; i < t->n; i++)
    if (t->idx[i] == ch) return i;
  return -1;
}

/* Sums away the indices of x (term t) that are in neither `keep1` nor
 * `keep2`; t is updated. */
static mil_var *sum_away(onnx_ctx *c, mil_var *x, es_term *t, const es_term *keep1, const es_term *keep2) {
  int64_t axes[16];
  int na = 0;
  es_term r = {{0}, 0};
  for (int i = 0; i < t->n; i++) {
    if (find(keep1, t->idx[i]) < 0 && (!keep2 || find(keep2, t->idx[i]) < 0)) axes[na++] = i;
    else r.idx[r.n++] = t->idx[i];
  }
  *t = r;
  if (!na) return x;
  return ONNX_OP(c, "reduce_sum", A("x", x), K("axes", onnx_i32s(c, na, axes)), K("keep_dims", onnx_bool(c, false)));
}

/* x (term t) transposed to the order of term `to` (same index set) */
static mil_var *reorder(onnx_ctx *c, mil_var *x, const es_term *t, const es_term *to) {
  int64_t perm[16];
  bool id = true;
  for (int i = 0; i < to->n; i++) {
    perm[i] = find(t, to->idx[i]);
    id &= perm[i] == i;
  }
  return id || !x ? x : ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, to->n, perm)));
}

static int64_t dim_of(const mil_var *x, const es_term *t, char ch) { return x->type->dims[find(t, ch)].size; }

static mil_status conv_einsum(onnx_ctx *c, onnx_node *n) {
  const char *eq = onnx_attr_s(c, n, "equation", "");
  const char *arrow = strstr(eq, "->"), *end = arrow ? arrow : eq + strlen(eq);
  const char *comma = memchr(eq, ',', (size_t)(end - eq));
  es_term a, b = {{0}, 0}, o = {{0}, 0};
  int nops = comma ? 2 : 1;
  if (nops != n->n_in) return ONNX_UNSUP(c, "equation '%s' with more than two operands", eq);
  mil_var *x = onnx_req(c, n, 0), *y = nops == 2 ? onnx_req(c, n, 1) : NULL;
  if (!x || (nops == 2 && !y)) return MIL_ERR_INVALID;
  /* the dims an ellipsis stands for in each operand */
  int ea = onnx_rank(x) - term_letters(eq, comma ? comma : end);
  int eb = y ? onnx_rank(y) - term_letters(comma + 1, end) : 0;
  int eo = ea > eb ? ea : eb;
  if (eo > 9 || (y && strstr(eq, "...") && ea != eb)) return ONNX_UNSUP(c, "equation '%s' (broadcast ellipses)", eq);
  if (!parse_term(eq, comma ? comma : end, &a, ea) || (comma && !parse_term(comma + 1, end, &b, eb)))
    return ONNX_UNSUP(c, "equation '%s'", eq);
  if (arrow) {
    if (!parse_term(arrow + 2, eq + strlen(eq), &o, eo)) return ONNX_UNSUP(c, "equation '%s'", eq);
  } else {
    /* implicit output: the indices seen once, in alphabetical order */
    /* (the ellipsis dims first) */
    for (char ch = '0'; ch <= 'z'; ch++) {
      int cnt = (find(&a, ch) >= 0) + (find(&b, ch) >= 0);
      if (cnt == 1 || (ch <= '9' && cnt)) o.idx[o.n++] = ch;
    }
  }
  if (onnx_rank(x) != a.n || (y && onnx_rank(y) != b.n)) return onnx_fail(c, MIL_ERR_INVALID, "ranks do not match '%s'", eq);
  x = diagonals(c, x, &a);
  if (y) y = diagonals(c, y, &b);
  if (!x || (nops == 2 && !y)) return ONNX_UNSUP(c, "diagonals of '%s' over symbolic dims", eq);
  if (nops == 1) {
    x = sum_away(c, x, &a, &o, NULL);
    return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", reorder(c, x, &a, &o))));
  }
  if (!mil_type_is_static(x->type) || !mil_type_is_static(y->type)) return ONNX_UNSUP(c, "einsum on symbolic shapes");
  x = sum_away(c, x, &a, &o, &b);
  y = sum_away(c, y, &b, &o, &a);
  if (!x || !y) return MIL_ERR_TYPE; /* a reduce_sum refused (recorded): no dims to read */
  /* batch (in a, b, o), contracted (a, b), free of a, free of b */
  es_term bt = {{0}, 0}, ct = {{0}, 0}, fa = {{0}, 0}, fb = {{0}, 0};
  for (int i = 0; i < a.n; i++) {
    char ch = a.idx[i];
    if (find(&b, ch) >= 0) {
      if (find(&o, ch) >= 0) bt.idx[bt.n++] = ch;
      else ct.idx[ct.n++] = ch;
    } else fa.idx[fa.n++] = ch;
  }
  for (int i = 0; i < b.n; i++)
    if (find(&a, b.idx[i]) < 0) fb.idx[fb.n++] = b.idx[i];
  int64_t B = 1, C = 1, FA = 1, FB = 1;
  for (int i = 0; i < bt.n; i++) {
    if (dim_of(x, &a, bt.idx[i]) != dim_of(y, &b, bt.idx[i])) return ONNX_UNSUP(c, "broadcast batch indices");
    B *= dim_of(x, &a, bt.idx[i]);
  }
  for (int i = 0; i < ct.n; i++) C *= dim_of(x, &a, ct.idx[i]);
  for (int i = 0; i < fa.n; i++) FA *= dim_of(x, &a, fa.idx[i]);
  for (int i = 0; i < fb.n; i++) FB *= dim_of(y, &b, fb.idx[i]);
  es_term ta = bt, tb = bt, tr = bt;
  for (int i = 0; i < fa.n; i++) ta.idx[ta.n++] = fa.idx[i], tr.idx[tr.n++] = fa.idx[i];
  for (int i = 0; i < ct.n; i++) ta.idx[ta.n++] = ct.idx[i], tb.idx[tb.n++] = ct.idx[i];
  for (int i = 0; i < fb.n; i++) tb.idx[tb.n++] = fb.idx[i], tr.idx[tr.n++] = fb.idx[i];
  mil_var *xa = ONNX_OP(c, "reshape", A("x", reorder(c, x, &a, &ta)), K("shape", onnx_i32s(c, 3, (int64_t[]){B, FA, C})));
  mil_var *yb = ONNX_OP(c, "reshape", A("x", reorder(c, y, &b, &tb)), K("shape", onnx_i32s(c, 3, (int64_t[]){B, C, FB})));
  mil_var *r = ONNX_OP(c, "matmul", A("x", xa), A("y", yb));
  int64_t shape[16];
  for (int i = 0; i < tr.n; i++) {
    char ch = tr.idx[i];
    shape[i] = find(&a, ch) >= 0 ? dim_of(x, &a, ch) : dim_of(y, &b, ch);
  }
  r = ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, tr.n, shape)));
  return onnx_set_out(c, n, 0, reorder(c, r, &tr, &o));
}

const onnx_op_entry onnx_ops_linalg[] = {
    {"MatMul", "", 1, 0, conv_matmul, "matmul"},
    {"Gemm", "", 1, 0, conv_gemm, "linear / matmul"},
    {"Einsum", "", 12, 0, conv_einsum, "reduce_sum, transpose, reshape, matmul"},
    {NULL, NULL, 0, 0, NULL, NULL},
};

/* ONNX Unique (opset 11): the distinct elements (or slices along axis) of
 * X with their first indices, the inverse map and the counts, sorted
 * ascending (lexicographically for slices) or in order of first
 * occurrence. MIL has no unique op; with the n slices along the axis as
 * rows R [n, rest] (every element its own row without axis):
 *   eq[i, j]   = all(R[i] == R[j])                            [n, n]
 *   first[i]   = no j < i with eq[i, j]; uidx = non_zero(first)    [U]
 *   counts     = sum_j eq[uidx, j]; inverse[i] = #first before argmax_j eq[i, j]
 *   sorted:    rank[u] = #{v : R[uidx v] < R[uidx u]} (lexicographic:
 *              compared at the first differing element), order =
 *              argsort(rank), outputs permuted by order, inverse mapped
 *              through rank
 * n must be known at conversion (the [n, n] masks are consts). */
#include <string.h>

#include "onnx/import/import_internal.h"

#define UNIQUE_MAX 4096

/* rank[u] among the distinct rows R [U, rest]: how many rows are less */
static mil_var *lex_rank(onnx_ctx *c, mil_var *rows) {
  mil_var *a = ONNX_OP(c, "expand_dims", A("x", rows), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *b = ONNX_OP(c, "expand_dims", A("x", rows), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  mil_var *neq = onnx_cast(c, ONNX_OP(c, "not_equal", A("x", a), A("y", b)), MIL_DT_INT32);
  mil_var *d = ONNX_OP(c, "reduce_argmax", A("x", neq), K("axis", onnx_i32(c, 2)), K("keep_dims", onnx_bool(c, true)));
  mil_var *less = onnx_cast(c, ONNX_OP(c, "less", A("x", b), A("y", a)), MIL_DT_INT32); /* R[v] < R[u] at [u, v] */
  mil_var *lt = ONNX_OP(c, "gather_along_axis", A("x", less), A("indices", d), K("axis", onnx_i32(c, 2)));
  return ONNX_OP(c, "reduce_sum", A("x", lt), K("axes", onnx_i32s(c, 2, (int64_t[]){1, 2})),
                 K("keep_dims", onnx_bool(c, false)));
}

static mil_status conv_unique(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t r = onnx_rank(x);
  if (r < 0) return ONNX_UNSUP(c, "input of unknown rank");
  bool has_axis = onnx_attr(n, "axis") != NULL, sorted = onnx_attr_i(n, "sorted", 1) != 0;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (has_axis && !onnx_axis(&axis, r)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)r);
  /* the rows: x flattened (one element each), or the slices along axis */
  int64_t nn = 1;
  mil_var *rows, *src; /* src: what the unique rows are gathered from, along gaxis */
  int64_t gaxis = 0;
  if (!has_axis) {
    for (int32_t i = 0; i < r; i++) nn = x->type->dims[i].size < 0 || nn < 0 ? -1 : nn * x->type->dims[i].size;
    src = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
    rows = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 2, (int64_t[]){-1, 1})));
  } else {
    nn = x->type->dims[axis].size;
    src = x;
    gaxis = axis;
    int64_t perm[MIL_INTERP_MAX_RANK_ONNX];
    perm[0] = axis;
    for (int32_t i = 0, k = 1; i < r; i++)
      if (i != axis) perm[k++] = i;
    mil_var *t = axis ? ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, r, perm))) : x;
    rows = ONNX_OP(c, "reshape", A("x", t), K("shape", onnx_i32s(c, 2, (int64_t[]){nn, -1})));
  }
  if (nn < 0) return ONNX_UNSUP(c, "the number of elements (or slices) must be known at conversion");
  if (nn > UNIQUE_MAX) return ONNX_UNSUP(c, "%lld elements (or slices): more than %d", (long long)nn, UNIQUE_MAX);
  if (nn == 0) return ONNX_UNSUP(c, "an empty input");
  /* eq[i, j]: rows i and j are equal in every element */
  mil_var *ra = ONNX_OP(c, "expand_dims", A("x", rows), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *rb = ONNX_OP(c, "expand_dims", A("x", rows), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  mil_var *eq3 = onnx_cast(c, ONNX_OP(c, "equal", A("x", ra), A("y", rb)), MIL_DT_INT32);
  mil_var *eq = ONNX_OP(c, "reduce_min", A("x", eq3), K("axes", onnx_i32s(c, 1, (int64_t[]){2})),
                        K("keep_dims", onnx_bool(c, false)));
  /* first[i]: no equal row before i */
  int64_t shp[2] = {nn, nn};
  mil_value *tri = mil_value_new_tensor(c->p, MIL_DT_INT32, 2, shp, false, NULL);
  if (!tri) return MIL_ERR_NOMEM;
  for (int64_t i = 0; i < nn; i++)
    for (int64_t j = 0; j < nn; j++) mil_value_set_i64(tri, i * nn + j, j < i);
  mil_var *before = ONNX_OP(c, "reduce_sum", A("x", ONNX_OP(c, "mul", A("x", eq), K("y", tri))),
                            K("axes", onnx_i32s(c, 1, (int64_t[]){1})), K("keep_dims", onnx_bool(c, false)));
  mil_var *first = onnx_cast(c, ONNX_OP(c, "equal", A("x", before), K("y", onnx_i32(c, 0))), MIL_DT_INT32);
  mil_var *uidx = ONNX_OP(c, "reshape", A("x", ONNX_OP(c, "non_zero", A("x", first))),
                          K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
  mil_var *counts_all = ONNX_OP(c, "reduce_sum", A("x", eq), K("axes", onnx_i32s(c, 1, (int64_t[]){1})),
                                K("keep_dims", onnx_bool(c, false)));
  mil_var *counts = ONNX_OP(c, "gather", A("x", counts_all), A("indices", uidx), K("axis", onnx_i32(c, 0)));
  /* inverse[i]: the number of first occurrences before i's first occurrence */
  mil_var *first_of = ONNX_OP(c, "reduce_argmax", A("x", eq), K("axis", onnx_i32(c, 1)), K("keep_dims", onnx_bool(c, false)));
  mil_var *pos = ONNX_OP(c, "cumsum", A("x", first), K("axis", onnx_i32(c, 0)), K("exclusive", onnx_bool(c, true)));
  mil_var *inverse = ONNX_OP(c, "gather", A("x", pos), A("indices", first_of), K("axis", onnx_i32(c, 0)));
  mil_var *indices = uidx;
  if (sorted) {
    mil_var *urows = ONNX_OP(c, "gather", A("x", rows), A("indices", uidx), K("axis", onnx_i32(c, 0)));
    mil_var *rank = lex_rank(c, urows);
    mil_var *order = ONNX_OP(c, "argsort", A("x", rank), K("axis", onnx_i32(c, 0)), K("ascending", onnx_bool(c, true)));
    indices = ONNX_OP(c, "gather", A("x", uidx), A("indices", order), K("axis", onnx_i32(c, 0)));
    counts = ONNX_OP(c, "gather", A("x", counts), A("indices", order), K("axis", onnx_i32(c, 0)));
    inverse = ONNX_OP(c, "gather", A("x", rank), A("indices", inverse), K("axis", onnx_i32(c, 0)));
  }
  mil_var *y = ONNX_OP(c, "gather", A("x", src), A("indices", indices), K("axis", onnx_i32(c, gaxis)));
  mil_status st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK) st = onnx_set_out(c, n, 1, indices);
  if (st == MIL_OK) st = onnx_set_out(c, n, 2, inverse);
  if (st == MIL_OK) st = onnx_set_out(c, n, 3, counts);
  return st;
}

const onnx_op_entry onnx_ops_unique[] = {
    {"Unique", "", 11, 0, conv_unique,
     "equal, reduce_min, mul, reduce_sum, non_zero, gather, reduce_argmax, cumsum, not_equal, less, gather_along_axis, argsort"},
    {NULL, NULL, 0, 0, NULL, NULL},
};

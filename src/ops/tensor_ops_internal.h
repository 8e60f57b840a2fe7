/* Helpers shared by the tensor op families (tensor_transformation*.c,
 * tensor_operation*.c, scatter_gather*.c) and the compression families
 * (constexpr_ops.c, compression*.c, quantization_ops.c):
 *
 *  - element-level folding on mil_values (index maps, element copies);
 *  - coremltools' symbolic values ("sym_val": the value of a shape-like
 *    tensor whose elements may be symbols, printed with the '^' marker),
 *    recomputed on demand from the producers of a var;
 *  - reading "known" integer inputs (const values or values a const
 *    subgraph computes);
 *  - the slice_by_index shape solver and slice plans;
 *  - constexpr materialization (the dequantized value of a constexpr_* op).
 *
 * Mirrors coremltools/converters/mil/mil/ops/defs/_utils.py
 * (solve_slice_by_index_shape, solve_slice_by_index_slice, compute_gather),
 * operation.py (precondition, _auto_val) and types/symbolic.py. */
#ifndef MIL_TENSOR_OPS_INTERNAL_H
#define MIL_TENSOR_OPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops_internal.h"

/* Largest rank the tensor ops handle (coremltools has no limit; its pass
 * tests use rank-20 tensors). */
#define TOP_RANK 32

/* ---------------- shapes and elements ---------------- */

/* Product of shape[0..rank); 1 for rank 0; -1 on overflow or a negative size. */
OP_HIDDEN int64_t op_numel(int32_t rank, const int64_t *shape);
/* Constant sizes of a static tensor type; false when t is not a tensor,
 * has unknown rank / a non-constant dim, or rank > TOP_RANK. */
OP_HIDDEN bool op_static_shape(const mil_type *t, int64_t *shape, int32_t *rank);
/* Row-major strides (in elements). */
OP_HIDDEN void op_strides(int32_t rank, const int64_t *shape, int64_t *strides);
/* True for dtypes folding can move element by element (everything but
 * string and complex). */
OP_HIDDEN bool op_foldable_dtype(mil_dtype dt);
/* dst[di] = src[si]; both of the same dtype. */
OP_HIDDEN void op_copy_elem(mil_value *dst, int64_t di, const mil_value *src, int64_t si);
/* Scratch memory: a free block of the context's pool (op_tmp_pool) when n
 * fits, else through the program's allocator (NULL on failure / n == 0). */
OP_HIDDEN void *op_tmp_alloc(mil_infer_ctx *c, size_t n);
OP_HIDDEN void op_tmp_free(mil_infer_ctx *c, void *p, size_t n);
/* A new value of dtype dt and the given shape whose element k is
 * src[map[k]], or fill[0] when map[k] < 0 (fill may be NULL: zero). */
OP_HIDDEN mil_value *op_value_from_map(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                                       const mil_value *src, const int64_t *map, const mil_value *fill);
/* Static shape of a tensor value (from its type) into shape[TOP_RANK];
 * false (nothing written) when its rank is larger than TOP_RANK. */
OP_HIDDEN bool op_value_shape(const mil_value *v, int64_t *shape, int32_t *rank);
/* True when output i's type is static and equal to (rank, shape). */
OP_HIDDEN bool op_out_shape_is(const mil_infer_ctx *c, int i, int32_t rank, const int64_t *shape);
/* Stores v as output i's folded value, when its shape matches the inferred
 * output type (otherwise leaves the output unfolded). */
OP_HIDDEN void op_set_val(mil_infer_ctx *c, int i, mil_value *v);

/* Index maps (out[k] = in[map[k]]) of the data-movement ops, shared by
 * numeric and symbolic folding. */
/* coremltools' compute_gather (np.take with batch_dims): out shape
 * x[:axis] + indices[batch_dims:] + x[axis+1:]. map may be NULL to get only
 * the shape. False for an out-of-range index or bad axis / batch_dims. */
OP_HIDDEN bool op_map_gather(int32_t xr, const int64_t *xs, int32_t ir, const int64_t *is, const int64_t *ind,
                             int64_t axis, int64_t batch_dims, int64_t *map, int32_t *orank, int64_t *oshape);
/* Strided slice: output dim d has len[d] elements start[d] + j*step[d]. */
OP_HIDDEN void op_map_slice(int32_t rank, const int64_t *shape, const int64_t *start, const int64_t *step,
                            const int64_t *len, int64_t *map);
/* The strided slice of src (shape, start, step, len as op_map_slice) as a
 * new value of dtype dt shaped (orank, oshape) (the same elements: squeezed
 * dims of length 1 dropped), copied run by run (memcpy where step is 1 on
 * the last dim) without an index map; NULL when dt is sub-byte or src has
 * no data (the caller then maps elements). */
OP_HIDDEN mil_value *op_value_slice(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape,
                                    const int64_t *start, const int64_t *step, const int64_t *len, int32_t orank,
                                    const int64_t *oshape, bool scalar, const mil_value *src);
/* np.transpose(x, perm). */
OP_HIDDEN void op_map_transpose(int32_t rank, const int64_t *shape, const int64_t *perm, int64_t *map);
/* np.transpose(x, perm) on raw bytes: dst (numel * es bytes) gets the
 * elements of the row-major src of the given shape, es bytes each, in the
 * transposed order. perm holds each of 0..rank-1 once. */
OP_HIDDEN void op_transpose_data(void *dst, const void *src, size_t es, int32_t rank, const int64_t *shape,
                                 const int64_t *perm);
/* True when data (numel * es bytes) already holds what op_transpose_data
 * would write. */
OP_HIDDEN bool op_transpose_equal(const void *data, const void *src, size_t es, int32_t rank, const int64_t *shape,
                                  const int64_t *perm);

/* ---------------- symbolic values ---------------- */

#define OP_SYMV_MAX 64

enum { OP_SYM_KNOWN = 0, OP_SYM_NAMED = 1, OP_SYM_ANON = 2 };

/* One element of a symbolic value: a known number, a named symbol
 * ("is0", "batch"), or an anonymous symbol (a fresh symbol coremltools
 * would have created; equal to nothing else). */
typedef struct op_sym {
  double x;
  const char *sym;
  int kind;
} op_sym;

/* A known element as an integer (saturated, NaN -> 0). */
static inline int64_t op_sym_i64(double x) {
  if (x != x) return 0;
  if (x >= 4.6e18) return INT64_C(4600000000000000000);
  if (x <= -4.6e18) return -INT64_C(4600000000000000000);
  return (int64_t)x;
}

/* A small tensor whose elements may be symbolic (coremltools' sym_val).
 * opaque: the elements are placeholders for a symbolic value the IR does
 * not record (e.g. a var printed with '^' by an unknown producer). */
typedef struct op_symval {
  mil_dtype dtype;
  int32_t rank;
  bool scalar;
  bool opaque;
  int64_t shape[TOP_RANK];
  int64_t n;
  op_sym e[OP_SYMV_MAX];
} op_symval;

/* Scratch the inference driver lends op_tmp_alloc for one op (on its
 * stack): a few blocks of a symbolic value's size, so that the usual folds
 * and shape inferences need no heap. */
#define OP_TMP_SLOTS 4
typedef struct op_tmp_pool {
  unsigned used; /* bit i: slot i is lent out */
  union {
    op_symval sv;
    max_align_t align;
  } slot[OP_TMP_SLOTS];
} op_tmp_pool;

/* The value or symbolic value of input `name` (binding `arg`, for tuple
 * inputs) of c->op: its known value, or what coremltools' value inference
 * would have given its producer chain (shape, cast, concat, gather,
 * slice_by_index, ...). False when there is none, or it is larger than
 * OP_SYMV_MAX elements. Bounded in depth and work. */
OP_HIDDEN bool op_in_symval(mil_infer_ctx *c, const char *name, int arg, op_symval *out);
/* Same for a var. */
OP_HIDDEN bool op_var_symval(mil_infer_ctx *c, const mil_var *v, op_symval *out);
/* The symbolic value of output `out_index` of c->op itself. */
OP_HIDDEN bool op_self_symval(mil_infer_ctx *c, int out_index, op_symval *out);
/* True when some element is a symbol. */
OP_HIDDEN bool op_symval_has_sym(const op_symval *sv);
/* Output i gets sv: a value when every element is known, else the '^'
 * marker. */
OP_HIDDEN void op_symval_publish(mil_infer_ctx *c, int i, const op_symval *sv);
/* A dim from an element: a constant size, the named symbol, or a fresh symbol. */
OP_HIDDEN mil_dim op_sym_dim(mil_infer_ctx *c, const op_sym *s);
/* Fold helper for ops whose coremltools value inference accepts symbolic
 * inputs: computes c->op's symbolic outputs and publishes them. */
OP_HIDDEN mil_status op_fold_symbolic(mil_infer_ctx *c);

/* Known integer vector input (const, literal, or computed by a const
 * subgraph): count, or -1 when unknown / longer than max. */
OP_HIDDEN int op_known_ints(mil_infer_ctx *c, const char *name, int64_t *out, int max);
/* Known scalar (or 1-element) integer input; false when unknown/absent. */
OP_HIDDEN bool op_known_int(mil_infer_ctx *c, const char *name, int64_t *out);
/* Known bool vector input; count or -1. */
OP_HIDDEN int op_known_bools(mil_infer_ctx *c, const char *name, bool *out, int max);
/* Like op_known_ints, but records "input 'name' must be a known ..." and
 * returns -1 when the value is unknown, absent or too long. */
OP_HIDDEN int op_need_ints(mil_infer_ctx *c, const char *name, int64_t *out, int max);
OP_HIDDEN bool op_need_int(mil_infer_ctx *c, const char *name, int64_t *out);
/* Known int input, or dflt when the input is absent; false (after op_fail)
 * when present but unknown. */
OP_HIDDEN bool op_int_or(mil_infer_ctx *c, const char *name, int64_t dflt, int64_t *out);
/* Known bool input or dflt when absent; false (after op_fail) when unknown. */
OP_HIDDEN bool op_bool_or(mil_infer_ctx *c, const char *name, bool dflt, bool *out);
/* The known value of a tensor input: its const value, or (for small
 * tensors) the value a const subgraph computes. NULL when unknown. */
OP_HIDDEN const mil_value *op_in_value(mil_infer_ctx *c, const char *name);
/* True when every element of a tensor input is known (value or const subgraph). */
OP_HIDDEN bool op_in_known(mil_infer_ctx *c, const char *name);

/* Common dtype sets. */
#define OP_DTS_T15 (MIL_DTS_FLOAT | MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_BOOL))
#define OP_DTS_T17                                                                                                  \
  (MIL_DTS_FLOAT | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_UINT8) | \
   MIL_DTB(MIL_DT_UINT16) | MIL_DTB(MIL_DT_BOOL))
#define OP_DTS_I17 (MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_INT32))

/* Dim arithmetic as coremltools does it on sympy dims, with a fresh symbol
 * standing for any expression over symbols. */
OP_HIDDEN mil_dim op_dim_mul(mil_infer_ctx *c, mil_dim d, int64_t k);
OP_HIDDEN mil_dim op_dim_div(mil_infer_ctx *c, mil_dim d, int64_t k);
OP_HIDDEN mil_dim op_dim_add(mil_infer_ctx *c, mil_dim d, int64_t k);
/* The element dtype of a tensor / scalar type (UNUSED otherwise). */
static inline mil_dtype op_dt(const mil_type *t) { return t && t->kind == MIL_TYPE_TENSOR ? t->dtype : MIL_DT_UNUSED; }
/* Records the failure "input 'name' must have known rank" when t has unknown rank. */
OP_HIDDEN bool op_need_rank(mil_infer_ctx *c, const char *name, const mil_type *t);

/* ---------------- slicing ---------------- */

/* coremltools' solve_slice_by_index_shape: output dims of x[begin:end:stride]
 * with masks. begin/end may be NULL (not known). Returns the output rank or
 * -1 after op_fail. */
OP_HIDDEN int op_slice_shape(mil_infer_ctx *c, const mil_type *x, const int64_t *begin, int nbegin, const int64_t *end,
                             int nend, const int64_t *stride, const bool *bmask, const bool *emask, const bool *smask,
                             mil_dim *out);
/* Python slice semantics for one dim of size n; start/step/len of the result. */
OP_HIDDEN void op_py_slice(int64_t n, bool has_begin, int64_t begin, bool has_end, int64_t end, int64_t step,
                           int64_t *start, int64_t *len);

/* ---------------- constexpr ---------------- */

/* The materialized (decompressed) value of output `out_index` of a
 * constexpr_* op (iOS16 and iOS18 variants), coremltools'
 * materialized_val_inference; inputs produced by other constexpr ops are
 * materialized recursively. NULL with a message in d when the op cannot be
 * materialized. */
OP_HIDDEN const mil_value *op_constexpr_materialize(mil_op *op, int out_index, mil_diag *d);

#endif

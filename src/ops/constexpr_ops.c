/* Op family "constexpr_ops" (coremltools ops/defs/iOS16/constexpr_ops.py):
 * constexpr_affine_dequantize, constexpr_cast, constexpr_lut_to_dense and
 * constexpr_sparse_to_dense in their iOS16 form (every parameter a const),
 * and op_constexpr_materialize, the decompressed value of any constexpr_*
 * op (iOS16 and iOS18 variants; coremltools' materialized_val_inference).
 *
 * coremltools gives constexpr outputs no value during type inference (they
 * are decompressed on device), so these ops have no fold: their outputs
 * carry no '*' marker. Passes that need the weights call
 * op_constexpr_materialize. */
#include <math.h>
#include <string.h>

#include "ops/compression_internal.h"

/* ---- constexpr_affine_dequantize ---- */

static mil_status infer_affine_dequantize(mil_infer_ctx *c) {
  const mil_type *q = op_type(c, "quantized_data"), *zp = op_type(c, "zero_point"), *sc = op_type(c, "scale");
  int64_t axis;
  if (!op_need_rank(c, "quantized_data", q) || !op_need_int(c, "axis", &axis)) return MIL_ERR_TYPE;
  if (axis < -q->rank || axis >= q->rank)
    return op_fail(c,
                   "Parameter axis needs to be in the range -quantized_data.rank <= axis < quantized_data.rank (axis "
                   "%lld, quantized_data %s)",
                   (long long)axis, op_tstr(c, q));
  const mil_type *ps[2] = {sc, zp};
  const char *pn[2] = {"scale", "zero_point"};
  for (int i = 0; i < 2; i++)
    if (ps[i]->rank != 0 && ps[i]->rank != 1)
      return op_fail(c, "Parameter %s needs to be either a scalar or vector, got %s", pn[i], op_tstr(c, ps[i]));
  int64_t ax = axis < 0 ? axis + q->rank : axis;
  for (int i = 0; i < 2; i++)
    if (ps[i]->rank == 1 && ps[i]->dims[0].size != q->dims[ax].size)
      return op_fail(c,
                     "Parameter %s, if vector, needs to have same size as the dimension size along the parameter "
                     "quantized_data (%s vs %s)",
                     pn[i], op_tstr(c, ps[i]), op_tstr(c, q));
  op_set_out(c, 0, op_tensor(c, sc->dtype, q->rank, q->dims));
  return MIL_OK;
}

/* ---- constexpr_cast (iOS16 and iOS18) ---- */

mil_status cx_infer_cast(mil_infer_ctx *c) {
  const mil_type *s = op_type(c, "source_val");
  const char *dt = op_str(c, "output_dtype", NULL);
  mil_dtype out;
  if (!dt) return op_fail(c, "input 'output_dtype' must be a known string");
  if (!mil_dtype_from_name(dt, strlen(dt), &out) || out != MIL_DT_FP32)
    return op_fail(c, "Only output_dtype = fp32 is supported, got \"%s\"", dt);
  op_set_out(c, 0, op_tensor(c, MIL_DT_FP32, s->rank, s->dims));
  return MIL_OK;
}

/* ---- constexpr_lut_to_dense (iOS16) ---- */

static bool rank1(mil_infer_ctx *c, const char *name) {
  const mil_type *t = op_type(c, name);
  if (t->rank == 1) return true;
  op_fail(c, "Parameter %s needs to have rank == 1, got %s", name, op_tstr(c, t));
  return false;
}

static int read_shape(mil_infer_ctx *c, int64_t *shape) {
  int n = op_need_ints(c, "shape", shape, TOP_RANK);
  for (int i = 0; i < n; i++)
    if (shape[i] < 0) return op_fail(c, "input 'shape' must be non-negative, got %lld", (long long)shape[i]), -1;
  return n;
}

static mil_status infer_lut16(mil_infer_ctx *c) {
  int64_t shape[TOP_RANK];
  if (!rank1(c, "indices") || !rank1(c, "lut")) return MIL_ERR_TYPE;
  const mil_type *lut = op_type(c, "lut"), *ind = op_type(c, "indices");
  int64_t ls = lut->dims[0].size;
  if (ls != 2 && ls != 4 && ls != 16 && ls != 64 && ls != 256)
    return op_fail(c, "Parameter lut should be a vector of size from one of {2, 4, 16, 64, 256}, got %s",
                   op_tstr(c, lut));
  int n = read_shape(c, shape);
  if (n < 0) return MIL_ERR_TYPE;
  int nbits = 0;
  while ((1 << nbits) < ls) nbits++;
  int64_t out = op_numel(n, shape);
  if (ind->dims[0].size != (int64_t)ceil(nbits * (out / 8.0)))
    return op_fail(c,
                   "Constraint violated, M = ceil(n_bits * product(shape) / 8) where M = indices.size (M = %lld, "
                   "n_bits = %d, product(shape) = %lld)",
                   (long long)ind->dims[0].size, nbits, (long long)out);
  mil_dim d[TOP_RANK];
  for (int i = 0; i < n; i++) d[i] = op_dim(shape[i]);
  op_set_out(c, 0, op_tensor(c, lut->dtype, n, d));
  return MIL_OK;
}

/* ---- constexpr_sparse_to_dense (iOS16) ---- */

static mil_status infer_sparse16(mil_infer_ctx *c) {
  int64_t shape[TOP_RANK];
  if (!rank1(c, "nonzero_data") || !rank1(c, "mask")) return MIL_ERR_TYPE;
  const mil_type *nz = op_type(c, "nonzero_data"), *mt = op_type(c, "mask");
  int n = read_shape(c, shape);
  if (n < 0) return MIL_ERR_TYPE;
  int64_t out = op_numel(n, shape);
  const mil_value *mask = op_in_value(c, "mask");
  if (mask) {
    int64_t bits = mil_bits_count(mil_value_data(mask), (int64_t)mask->nbytes * 8);
    if (bits != nz->dims[0].size)
      return op_fail(c,
                     "Number of set bits in mask needs to be equal to number of elements in parameter nonzero_data "
                     "(%lld vs %s)",
                     (long long)bits, op_tstr(c, nz));
  }
  if (mt->dims[0].size != (int64_t)ceil(out / 8.0))
    return op_fail(c, "Constraint Violated: M = ceil( product(shape) / 8) where M = mask.size (M = %lld, product %lld)",
                   (long long)mt->dims[0].size, (long long)out);
  for (int64_t i = out; mask && i < (int64_t)mask->nbytes * 8; i++)
    if (mil_bits_get(mil_value_data(mask), i, 1)) return op_fail(c, "Padded bits in mask should be unset or equals to zero");
  mil_dim d[TOP_RANK];
  for (int i = 0; i < n; i++) d[i] = op_dim(shape[i]);
  op_set_out(c, 0, op_tensor(c, nz->dtype, n, d));
  return MIL_OK;
}

/* ---- materialization ---- */

#define CX_MAX_DEPTH 16

static const mil_value *materialize(mil_op *op, int out_index, mil_diag *d, int depth);

static const mil_function *op_func(const mil_op *op) {
  const mil_block *b = op->block;
  while (b && !b->func && b->parent) b = b->parent->block;
  return b ? b->func : NULL;
}

/* Value of input `name`: a literal, a const, or a materialized constexpr output. */
static const mil_value *in_val(mil_op *op, const char *name, mil_diag *d, int depth) {
  const mil_input *in = mil_op_find_input(op, name);
  if (!in || in->n_args == 0) return NULL;
  const mil_arg *a = &in->args[0];
  if (a->value) return a->value;
  mil_var *v = a->use.var;
  if (!v) return NULL;
  if (v->val) return v->val;
  if (v->op && strncmp(v->op->type, "constexpr_", 10) == 0) return materialize(v->op, v->out_index, d, depth + 1);
  return NULL;
}

static bool in_int(mil_op *op, const char *name, int64_t *out) {
  const mil_value *v = in_val(op, name, NULL, CX_MAX_DEPTH);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1 || v->type->dtype == MIL_DT_STRING) return false;
  *out = mil_value_get_i64(v, 0);
  return true;
}

static const mil_value *need(mil_op *op, const char *name, mil_diag *d, int depth) {
  const mil_value *v = in_val(op, name, d, depth);
  if (!v && d)
    mil_diag_error(d, MIL_ERR_INVALID, "op '%s' (%s): input '%s' has no known value to materialize", op->name,
                   op->type, name);
  return v;
}

static const mil_value *materialize(mil_op *op, int oi, mil_diag *d, int depth) {
  mil_program *p = op->program;
  const char *t = op->type;
  if (depth > CX_MAX_DEPTH) {
    if (d) mil_diag_error(d, MIL_ERR_INVALID, "op '%s' (%s): constexpr chain too deep", op->name, t);
    return NULL;
  }
  const mil_function *f = op_func(op);
  int ver = f ? mil_opset_version(f->opset) : MIL_IOS18;
  if (ver < 0) ver = MIL_IOS18;
  bool ios18 = ver >= MIL_IOS18;
  if (!strcmp(t, "constexpr_affine_dequantize")) {
    const mil_value *q = need(op, "quantized_data", d, depth), *zp = need(op, "zero_point", d, depth),
                    *s = need(op, "scale", d, depth);
    int64_t axis;
    if (!q || !zp || !s || !in_int(op, "axis", &axis)) return NULL;
    return oi == 0 ? cx_dequantize(p, q, zp, s, axis, d) : NULL;
  }
  if (!strcmp(t, "constexpr_cast")) {
    const mil_value *s = need(op, "source_val", d, depth);
    return s && oi == 0 ? cx_cast(p, s, MIL_DT_FP32, d) : NULL;
  }
  if (!strcmp(t, "dequantize")) {
    const mil_value *q = need(op, "input", d, depth), *s = need(op, "scale", d, depth);
    const mil_value *zp = mil_op_find_input(op, "zero_point") ? need(op, "zero_point", d, depth) : NULL;
    int64_t axis = 0;
    if (!q || !s || (mil_op_find_input(op, "zero_point") && !zp)) return NULL;
    if (mil_op_find_input(op, "axis") && !in_int(op, "axis", &axis)) return NULL;
    return cx_dequantize(p, q, zp, s, axis, d);
  }
  int64_t va = 0;
  bool has_va = mil_op_find_input(op, "vector_axis") != NULL;
  if (has_va && !in_int(op, "vector_axis", &va)) return NULL;
  if (!strcmp(t, "constexpr_lut_to_dense")) {
    const mil_value *ind = need(op, "indices", d, depth), *lut = need(op, "lut", d, depth);
    if (!ind || !lut || oi != 0) return NULL;
    if (!ios18 || mil_op_find_input(op, "shape")) {
      const mil_value *sh = need(op, "shape", d, depth);
      int64_t shape[TOP_RANK];
      if (!sh || sh->numel > TOP_RANK) return NULL;
      for (int64_t i = 0; i < sh->numel; i++) shape[i] = mil_value_get_i64(sh, i);
      return cx_lut16(p, ind, lut, (int32_t)sh->numel, shape, d);
    }
    return cx_lut18(p, ind, lut, has_va, va, d);
  }
  if (!strcmp(t, "constexpr_sparse_to_dense")) {
    const mil_value *nz = need(op, "nonzero_data", d, depth), *mask = need(op, "mask", d, depth);
    if (!nz || !mask || oi != 0) return NULL;
    if (!ios18 || mil_op_find_input(op, "shape")) {
      const mil_value *sh = need(op, "shape", d, depth);
      int64_t shape[TOP_RANK];
      if (!sh || sh->numel > TOP_RANK) return NULL;
      for (int64_t i = 0; i < sh->numel; i++) shape[i] = mil_value_get_i64(sh, i);
      return cx_sparse16(p, nz, mask, (int32_t)sh->numel, shape, d);
    }
    return cx_sparse18(p, nz, mask, d);
  }
  if (!strcmp(t, "constexpr_blockwise_shift_scale")) {
    const mil_value *data = need(op, "data", d, depth), *s = need(op, "scale", d, depth);
    const mil_value *off = mil_op_find_input(op, "offset") ? need(op, "offset", d, depth) : NULL;
    if (!data || !s || (mil_op_find_input(op, "offset") && !off) || oi != 0) return NULL;
    return cx_blockwise(p, data, s, off, d);
  }
  if (!strcmp(t, "constexpr_lut_to_sparse")) {
    const mil_value *mask = need(op, "indices_mask", d, depth), *nz = need(op, "indices_nonzero_data", d, depth),
                    *lut = need(op, "lut", d, depth);
    if (!mask || !nz || !lut) return NULL;
    mil_value *ind = cx_sparse18(p, nz, mask, d);
    mil_value *dense = ind ? cx_lut18(p, ind, lut, has_va, va, d) : NULL;
    int64_t ls[TOP_RANK + 2];
    int32_t lr;
    if (!op_value_shape(lut, ls, &lr)) return NULL;
    mil_value *m = NULL, *vals = dense ? cx_pick_nonzero(p, dense, mask, has_va, va, ls[lr - 1], &m, d) : NULL;
    return vals ? (oi == 0 ? m : vals) : NULL;
  }
  if (!strcmp(t, "constexpr_sparse_blockwise_shift_scale")) {
    const mil_value *mask = need(op, "data_mask", d, depth), *nz = need(op, "nonzero_data", d, depth),
                    *s = need(op, "scale", d, depth);
    const mil_value *off = mil_op_find_input(op, "offset") ? need(op, "offset", d, depth) : NULL;
    if (!mask || !nz || !s || (mil_op_find_input(op, "offset") && !off)) return NULL;
    mil_value *dense = cx_sparse18(p, nz, mask, d);
    mil_value *deq = dense ? cx_blockwise(p, dense, s, off, d) : NULL;
    mil_value *m = NULL, *vals = deq ? cx_pick_nonzero(p, deq, mask, false, 0, 1, &m, d) : NULL;
    return vals ? (oi == 0 ? mask : vals) : NULL;
  }
  if (d) mil_diag_error(d, MIL_ERR_UNSUPPORTED, "op '%s' (%s) is not a constexpr op", op->name, t);
  return NULL;
}

const mil_value *op_constexpr_materialize(mil_op *op, int out_index, mil_diag *d) {
  if (!op || out_index < 0) return NULL;
  return materialize(op, out_index, d, 0);
}

/* ---- input specs ---- */

#define TCN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST, NULL)
#define U8 MIL_DTB(MIL_DT_UINT8)
#define U32 MIL_DTB(MIL_DT_UINT32)
#define LUT_T (MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_UINT8) | MIL_DTS_FLOAT)

static const mil_input_spec in_affine[] = {
    TCN("quantized_data", MIL_DTB(MIL_DT_UINT8) | MIL_DTB(MIL_DT_INT8), "SrcT"),
    TCN("zero_point", MIL_DTB(MIL_DT_UINT8) | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_FP32), "ZeroPointT"),
    TCN("scale", MIL_DTS_FLOAT, "DstT"), TCN("axis", MIL_DTS_INT32, NULL)};
static const mil_input_spec in_cast[] = {TCN("source_val", MIL_DTB(MIL_DT_FP16), NULL),
                                         TCN("output_dtype", MIL_DTS_STRING, NULL)};
static const mil_input_spec in_lut[] = {TCN("indices", U8, NULL), TCN("lut", LUT_T, "T"), TCN("shape", U32, NULL)};
static const mil_input_spec in_sparse[] = {TCN("nonzero_data", LUT_T, "T"), TCN("mask", U8, NULL),
                                           TCN("shape", U32, NULL)};

#define N(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(t, in, inf, doc) {t, MIL_IOS16, "constexpr_ops", in, N(in), 1, inf, NULL, NULL, doc}

const mil_op_def op_defs_constexpr_ops[] = {
    ROW("constexpr_affine_dequantize", in_affine, infer_affine_dequantize,
        "Weights decompressed on load: (quantized_data - zero_point) * scale along axis."),
    ROW("constexpr_cast", in_cast, cx_infer_cast, "An fp16 weight cast to fp32 on load."),
    ROW("constexpr_lut_to_dense", in_lut, infer_lut16, "Palettized weights: lut[packed n-bit indices], reshaped."),
    ROW("constexpr_sparse_to_dense", in_sparse, infer_sparse16,
        "Sparse weights: nonzero_data scattered where the bit mask is set."),
};
OP_FAMILY_COUNT(constexpr_ops);

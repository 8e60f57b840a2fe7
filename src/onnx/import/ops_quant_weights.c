/* ONNX DequantizeLinear of an initializer -> Core ML's compression ops, so
 * the weight reaches weight.bin in its quantized dtype:
 *
 *   iOS18+:   constexpr_blockwise_shift_scale(data, scale, offset)
 *             per tensor, per axis and opset 21's block_size; int8,
 *             uint8, int4, uint4 data (coremltools iOS18/compression.py)
 *   iOS16/17: constexpr_affine_dequantize(quantized_data, zero_point,
 *             scale, axis): per tensor / per axis; int4 / uint4 data
 *             stored as int8 / uint8 (iOS16/constexpr_ops.py)
 *
 * ONNX's y = (x - zero_point) * scale is the same map as both ops'
 * (data - offset) * scale. Blocked scales before iOS18 are refused naming
 * --target iOS18; iOS15 (no compression ops) keeps the fp arithmetic.
 * Mirrors what coremltools' dequantize_to_constexpr builds from a
 * dequantize of a const. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "onnx/import/ops_quant_internal.h"

mil_dtype onnx_quant_dtype(int onnx_type) {
  switch (onnx_type) {
  case MIL_ONNX_INT8: return MIL_DT_INT8;
  case MIL_ONNX_UINT8: return MIL_DT_UINT8;
  case MIL_ONNX_INT4: return MIL_DT_INT4;
  case MIL_ONNX_UINT4: return MIL_DT_UINT4;
  default: return MIL_DT_UNUSED;
  }
}

bool onnx_quantized_only(const Onnx__GraphProto *g, const char *name) {
  if (!g || !name || !name[0]) return false;
  bool used = false;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *m = g->node[i];
    for (size_t a = 0; a < m->n_attribute; a++)
      if (m->attribute[a]->g || m->attribute[a]->n_graphs) return false;
    bool ms = m->domain && !strcmp(m->domain, "com.microsoft");
    bool onnx = !m->domain || !m->domain[0] || !strcmp(m->domain, "ai.onnx");
    for (size_t j = 0; j < m->n_input; j++) {
      if (!m->input[j] || strcmp(m->input[j], name) != 0) continue;
      bool ok = (onnx && j == 0 && !strcmp(m->op_type, "DequantizeLinear")) ||
                (ms && j == 1 && !strcmp(m->op_type, "MatMulNBits")) ||
                (ms && j == 0 && !strcmp(m->op_type, "GatherBlockQuantized"));
      if (!ok) return false;
      used = true;
    }
  }
  for (size_t i = 0; i < g->n_output; i++)
    if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return false;
  return used;
}

/* v's elements as a new tensor of dtype dt and the given shape. */
static mil_value *retype(onnx_ctx *c, const mil_value *v, mil_dtype dt, int32_t rank, const int64_t *shape) {
  mil_value *w = mil_value_new_tensor(c->p, dt, rank, shape, rank == 0, NULL);
  if (!w) return NULL;
  if (mil_dtype_is_float(dt))
    for (int64_t i = 0; i < v->numel; i++) mil_value_set_f64(w, i, mil_value_get_f64(v, i));
  else
    for (int64_t i = 0; i < v->numel; i++) mil_value_set_i64(w, i, mil_value_get_i64(v, i));
  return w;
}

mil_var *onnx_blockwise_weight(onnx_ctx *c, const mil_value *data, const mil_value *scale, const mil_value *offset) {
  if (offset && pass_bld_all_zero(offset)) offset = NULL;
  if (offset) return ONNX_OP(c, "constexpr_blockwise_shift_scale", K("data", data), K("scale", scale), K("offset", offset));
  return ONNX_OP(c, "constexpr_blockwise_shift_scale", K("data", data), K("scale", scale));
}

static bool all_shape(const mil_value *v, int32_t rank, const int64_t *shape) {
  if (!v->type || v->type->rank != rank) return false;
  for (int32_t i = 0; i < rank; i++)
    if (v->type->dims[i].size != shape[i]) return false;
  return true;
}

int onnx_dequantize_weight(onnx_ctx *c, onnx_node *n, mil_var **out) {
  mil_var *x = onnx_in(n, 0), *s = onnx_in(n, 1), *z = onnx_in(n, 2);
  const mil_value *xv = onnx_val(x), *sv = onnx_val(s), *zv = onnx_val(z);
  *out = NULL;
  if (!xv || !sv || (z && !zv) || xv->kind != MIL_VAL_TENSOR || sv->kind != MIL_VAL_TENSOR || !xv->type ||
      !sv->type)
    return 0;
  mil_dtype qdt = onnx_quant_dtype(onnx_declared_elem_type(c, n->proto->input[0]));
  int32_t r = xv->type->rank;
  if (qdt == MIL_DT_UNUSED || r < 1 || r > MIL_INTERP_MAX_RANK_ONNX || xv->numel == 0) return 0;
  int64_t shape[MIL_INTERP_MAX_RANK_ONNX], sshape[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < r; i++) shape[i] = sshape[i] = xv->type->dims[i].size;
  int64_t axis = onnx_attr_i(n, "axis", 1), block = onnx_attr_i(n, "block_size", 0);
  /* the layout: per tensor (one scale), per axis (a vector along axis) or blocked */
  enum { PER_TENSOR, PER_AXIS, BLOCKED } kind;
  if (sv->numel == 1 && block == 0) {
    kind = PER_TENSOR;
    for (int32_t i = 0; i < r; i++) sshape[i] = 1;
  } else {
    if (!onnx_axis(&axis, r)) {
      return -(int)onnx_fail(c, MIL_ERR_INVALID, "axis %lld is out of range for x of rank %d", (long long)onnx_attr_i(n, "axis", 1), (int)r);
    }
    if (block > 0) {
      kind = BLOCKED;
      sshape[axis] = (shape[axis] + block - 1) / block;
      if (!all_shape(sv, r, sshape)) {
        return -(int)onnx_fail(c, MIL_ERR_INVALID, "blocked x_scale must have x's shape with dim %lld = ceil(%lld / block_size %lld)",
                  (long long)axis, (long long)shape[axis], (long long)block);
      }
    } else {
      kind = PER_AXIS;
      if (sv->type->rank != 1 || sv->numel != shape[axis]) {
        return -(int)onnx_fail(c, MIL_ERR_INVALID, "x_scale must be a scalar or a vector of x's dim %lld (%lld values), got %lld values",
                  (long long)axis, (long long)shape[axis], (long long)sv->numel);
      }
      for (int32_t i = 0; i < r; i++) sshape[i] = i == axis ? shape[axis] : 1;
    }
  }
  if (zv && zv->numel != sv->numel) {
    return -(int)onnx_fail(c, MIL_ERR_INVALID, "x_zero_point has %lld values, x_scale %lld", (long long)zv->numel, (long long)sv->numel);
  }
  if (kind == BLOCKED && c->target < MIL_IOS18) {
    return -(int)onnx_fail(c, MIL_ERR_UNSUPPORTED,
              "blocked quantization (block_size %lld) needs constexpr_blockwise_shift_scale (iOS18): convert with "
              "--target iOS18",
              (long long)block);
  }
  if (c->target < MIL_IOS16) {
    mil_diag_add(c->d, MIL_SEV_WARNING,
                 "%s: node '%s' (DequantizeLinear): the weight is stored decompressed: iOS15 has no compression ops "
                 "(--target iOS16 or later keeps it quantized)",
                 c->path, n->name);
    return 0;
  }
  mil_dtype fdt = sv->type->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32;
  if (c->target >= MIL_IOS18) {
    if (kind == BLOCKED && shape[axis] % block != 0) {
      return -(int)onnx_fail(c, MIL_ERR_UNSUPPORTED,
                "block_size %lld does not divide dim %lld of x (%lld): constexpr_blockwise_shift_scale needs whole blocks",
                (long long)block, (long long)axis, (long long)shape[axis]);
    }
    mil_value *data = xv->type->dtype == qdt ? (mil_value *)xv : retype(c, xv, qdt, r, shape);
    mil_value *scale = retype(c, sv, fdt, r, sshape);
    mil_value *off = zv ? retype(c, zv, qdt, r, sshape) : NULL;
    if (!data || !scale || (zv && !off)) return -(int)MIL_ERR_NOMEM;
    *out = onnx_blockwise_weight(c, data, scale, off);
    return *out ? 1 : -(int)MIL_ERR_INVALID;
  }
  mil_dtype adt = qdt == MIL_DT_INT4 || qdt == MIL_DT_INT8 ? MIL_DT_INT8 : MIL_DT_UINT8;
  int64_t nv = sv->numel;
  int32_t pr = kind == PER_TENSOR ? 0 : 1;
  mil_value *data = xv->type->dtype == adt ? (mil_value *)xv : retype(c, xv, adt, r, shape);
  mil_value *scale = retype(c, sv, fdt, pr, &nv);
  mil_value *zp = zv ? retype(c, zv, adt, pr, &nv) : mil_value_new_scalar_i64(c->p, adt, 0);
  if (!data || !scale || !zp) return -(int)MIL_ERR_NOMEM;
  *out = ONNX_OP(c, "constexpr_affine_dequantize", K("quantized_data", data), K("zero_point", zp), K("scale", scale),
                 K("axis", onnx_i32(c, kind == PER_AXIS ? axis : 0)));
  return *out ? 1 : -(int)MIL_ERR_INVALID;
}

mil_var *onnx_integer_weight(onnx_ctx *c, const onnx_node *n, int32_t idx, const mil_value *zp, int64_t axis) {
  const mil_value *q = idx < n->n_in ? onnx_val(n->in[idx]) : NULL;
  if (c->target < MIL_IOS16 || !q || q->kind != MIL_VAL_TENSOR || !q->type || q->numel == 0) return NULL;
  mil_dtype qdt = onnx_quant_dtype(onnx_declared_elem_type(c, n->proto->input[idx]));
  int32_t r = q->type->rank;
  if ((qdt != MIL_DT_INT8 && qdt != MIL_DT_UINT8) || r < 1 || r > MIL_INTERP_MAX_RANK_ONNX || axis < 0 || axis >= r)
    return NULL;
  int64_t shape[MIL_INTERP_MAX_RANK_ONNX], sshape[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < r; i++) shape[i] = q->type->dims[i].size, sshape[i] = 1;
  int64_t nz = zp ? zp->numel : 1;
  if (zp && (zp->kind != MIL_VAL_TENSOR || (nz != 1 && nz != shape[axis]))) return NULL;
  if (nz > 1) sshape[axis] = nz;
  mil_value *data = q->type->dtype == qdt ? (mil_value *)q : retype(c, q, qdt, r, shape);
  if (c->target >= MIL_IOS18) {
    mil_value *scale = mil_value_new_tensor(c->p, MIL_DT_FP32, r, sshape, false, NULL);
    mil_value *off = zp ? retype(c, zp, qdt, r, sshape) : NULL;
    if (!data || !scale || (zp && !off)) return NULL;
    for (int64_t i = 0; i < scale->numel; i++) mil_value_set_f64(scale, i, 1.0);
    return onnx_blockwise_weight(c, data, scale, off);
  }
  int32_t pr = nz > 1 ? 1 : 0;
  mil_value *scale = mil_value_new_tensor(c->p, MIL_DT_FP32, pr, &nz, pr == 0, NULL);
  mil_value *z = zp ? retype(c, zp, qdt, pr, &nz) : mil_value_new_scalar_i64(c->p, qdt, 0);
  if (!data || !scale || !z) return NULL;
  for (int64_t i = 0; i < scale->numel; i++) mil_value_set_f64(scale, i, 1.0);
  return ONNX_OP(c, "constexpr_affine_dequantize", K("quantized_data", data), K("zero_point", z), K("scale", scale),
                 K("axis", onnx_i32(c, nz > 1 ? axis : 0)));
}

/* v (rank r, shape `shape`) transposed by perm: out[i] = v[perm-mapped i]. */
static mil_value *permute(onnx_ctx *c, const mil_value *v, int32_t r, const int64_t *perm) {
  int64_t in_shape[MIL_INTERP_MAX_RANK_ONNX], out_shape[MIL_INTERP_MAX_RANK_ONNX], stride[MIL_INTERP_MAX_RANK_ONNX];
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->rank != r) return NULL;
  for (int32_t i = 0; i < r; i++) in_shape[i] = v->type->dims[i].size;
  int64_t acc = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= in_shape[i];
  }
  for (int32_t i = 0; i < r; i++) out_shape[i] = in_shape[perm[i]];
  mil_value *w = mil_value_new_tensor(c->p, v->type->dtype, r, out_shape, v->type->is_scalar, NULL);
  if (!w) return NULL;
  bool flt = mil_dtype_is_float(v->type->dtype);
  int64_t idx[MIL_INTERP_MAX_RANK_ONNX] = {0};
  for (int64_t k = 0; k < w->numel; k++) {
    int64_t src = 0;
    for (int32_t i = 0; i < r; i++) src += idx[i] * stride[perm[i]];
    if (flt) mil_value_set_f64(w, k, mil_value_get_f64(v, src));
    else mil_value_set_i64(w, k, mil_value_get_i64(v, src));
    for (int32_t i = r - 1; i >= 0 && ++idx[i] == out_shape[i]; i--) idx[i] = 0;
  }
  return w;
}

static const mil_value *input_value(const mil_op *op, const char *name) {
  const mil_input *in = mil_op_find_input(op, name);
  if (!in || in->n_args != 1) return NULL;
  return in->args[0].value ? in->args[0].value : in->args[0].use.var ? in->args[0].use.var->val : NULL;
}

mil_var *onnx_transpose_weight(onnx_ctx *c, mil_var *x, int32_t r, const int64_t *perm) {
  if (!x || !x->op || strcmp(x->op->type, "constexpr_blockwise_shift_scale") != 0 || r < 1 ||
      r > MIL_INTERP_MAX_RANK_ONNX)
    return NULL;
  bool seen[MIL_INTERP_MAX_RANK_ONNX] = {false};
  for (int32_t i = 0; i < r; i++) {
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return NULL;
    seen[perm[i]] = true;
  }
  const mil_op *op = x->op;
  const mil_value *d = input_value(op, "data"), *s = input_value(op, "scale"), *o = input_value(op, "offset");
  if (!d || !s || (mil_op_find_input(op, "offset") && !o) || d->numel > (INT64_C(1) << 31)) return NULL;
  mil_value *pd = permute(c, d, r, perm), *ps = permute(c, s, r, perm), *po = o ? permute(c, o, r, perm) : NULL;
  if (!pd || !ps || (o && !po)) return NULL;
  return onnx_blockwise_weight(c, pd, ps, po);
}

/* Initializers and Constant tensors -> MIL values, through the ONNX tensor
 * layer (onnx_tensor_internal.h: raw_data, typed fields, external data
 * mapped, coremltools' narrowing int64 -> int32, double -> fp32 with
 * clipping like coremltools' const). The importer then widens the small
 * integer dtypes (int8, uint8, int16, uint16) to int32 and bf16 / fp8 to
 * fp32, as the ops it emits take int32 and fp16 / fp32 only (int4 / uint4
 * widen to int32 too; DequantizeLinear of an initializer narrows them back
 * for the compression ops). */
#include <stdint.h>
#include <stdio.h>

#include "onnx/import/import_internal.h"
#include "onnx/tensor/onnx_tensor_internal.h"
#include "onnx/import/ops_quant_internal.h"

mil_dtype onnx_mil_dtype(int onnx_dt) {
  mil_dtype dt = mil_onnx_dtype_to_mil(onnx_dt, 0);
  if (dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_BOOL || dt == MIL_DT_INT32) return dt;
  if (mil_dtype_is_int(dt)) return MIL_DT_INT32; /* int4 / uint4 too (DequantizeLinear narrows them back) */
  if (mil_dtype_is_float(dt)) return MIL_DT_FP32;
  return MIL_DT_UNUSED;
}

/* A large raw_data tensor whose bytes are already MIL's layout (fp32,
 * fp16, int32, bool on a little-endian host) is viewed in place, not
 * copied: the decoded message then stays with the program. */
static mil_value *view_raw(onnx_ctx *c, const Onnx__TensorProto *t, bool native) {
  static const uint16_t probe = 1;
  if (!t->has_raw_data || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
      t->segment || t->raw_data.len < 4096 || *(const uint8_t *)&probe != 1 || t->n_dims > MIL_INTERP_MAX_RANK_ONNX)
    return NULL;
  mil_dtype dt;
  switch (t->data_type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: dt = MIL_DT_FP32; break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: dt = MIL_DT_FP16; break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: dt = MIL_DT_INT32; break;
  default:
    /* quantized weights in their own dtype (int4 / uint4 packed low
     * nibble first, as MIL packs them) */
    dt = native ? onnx_quant_dtype(t->data_type) : MIL_DT_UNUSED;
    if (dt == MIL_DT_UNUSED) return NULL;
  }
  int64_t numel = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0 || (t->dims[i] && numel > INT64_MAX / t->dims[i])) return NULL;
    numel *= t->dims[i];
  }
  if (((uint64_t)numel * (uint64_t)mil_dtype_bits(dt) + 7) / 8 != t->raw_data.len || ((uintptr_t)t->raw_data.data % 8) != 0) return NULL;
  mil_value *v = mil_value_new_view(c->p, dt, (int32_t)t->n_dims, t->dims, t->raw_data.data, t->raw_data.len);
  if (v) c->views = v->stable_view = true; /* the message stays with the program */
  return v;
}

/* An int64 / uint64 tensor narrowed to int32 with an element at int32's
 * limits: read exactly once more to know whether it was clipped, and
 * remember the first clipped element (shape inputs refuse it). */
static void note_clipped(onnx_ctx *c, const Onnx__TensorProto *t, const mil_value *v, const char *where) {
  if ((t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT64) ||
      v->kind != MIL_VAL_TENSOR || v->type->dtype != MIL_DT_INT32 || v->numel > (1 << 16))
    return;
  int64_t at = -1;
  for (int64_t i = 0; i < v->numel && at < 0; i++) {
    int64_t x = mil_value_get_i64(v, i);
    if (x == INT32_MAX || x == INT32_MIN) at = i;
  }
  if (at < 0) return;
  mil_value *e = NULL;
  mil_diag quiet;
  mil_diag_init(&quiet);
  mil_status st = onnx_tensor_to_mil_value(c->p, t, c->dir, MIL_ONNX_EXACT, where, &e, &quiet);
  mil_diag_clear(&quiet);
  if (st != MIL_OK || !e || e->numel != v->numel) return;
  for (int64_t i = at; i < v->numel; i++) {
    long double o = t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ? (long double)mil_value_get_f64(e, i)
                                                                          : (long double)mil_value_get_i64(e, i);
    if (o == (long double)mil_value_get_i64(v, i)) continue;
    onnx_clip *k = mil_program_alloc(c->p, sizeof *k);
    if (!k) return;
    *k = (onnx_clip){v, i, o, c->clips};
    c->clips = k;
    return;
  }
}

mil_status onnx_refuse_clipped(onnx_ctx *c, const onnx_node *n, int32_t i, const char *what) {
  const mil_var *x = onnx_in(n, i);
  const mil_value *v = x ? x->val : NULL;
  if (!v) return MIL_OK;
  for (const onnx_clip *k = c->clips; k; k = k->next)
    if (k->v == v)
      return onnx_fail(c, MIL_ERR_UNSUPPORTED,
                       "input %d ('%s', the %s) holds %.0Lf at element %lld, outside int32 (MIL's shape and count "
                       "dtype); it would be clipped to %lld",
                       (int)i, n->proto->input[i], what, k->orig, (long long)k->index,
                       (long long)mil_value_get_i64(v, k->index));
  return MIL_OK;
}

static mil_status tensor_value(onnx_ctx *c, const Onnx__TensorProto *t, bool native, mil_value **out) {
  if ((*out = view_raw(c, t, native))) return MIL_OK;
  char where[512];
  snprintf(where, sizeof where, "%s", c->path); /* the decoder adds "tensor '<name>'" */
  mil_value *v = NULL;
  /* the narrowing notes are not worth a message per initializer */
  mil_diag quiet;
  mil_diag_init(&quiet);
  mil_status st = onnx_tensor_to_mil_value(c->p, t, c->dir, MIL_ONNX_CLAMP | OT_SIZED_STRINGS, where, &v, &quiet);
  for (size_t i = 0; i < quiet.count; i++)
    if (quiet.msgs[i].severity != MIL_SEV_NOTE) mil_diag_add(c->d, quiet.msgs[i].severity, "%s", quiet.msgs[i].text);
  mil_diag_clear(&quiet);
  if (st != MIL_OK) return st;
  note_clipped(c, t, v, where);
  mil_dtype dt = v->type->dtype, want = onnx_mil_dtype(t->data_type);
  if (want == MIL_DT_UNUSED)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: tensor '%s': %s tensors are not converted", where,
                          t->name ? t->name : "", mil_dtype_name(dt));
  if (dt != want && !(native && onnx_quant_dtype(t->data_type) == dt)) {
    int64_t shape[MIL_INTERP_MAX_RANK_ONNX];
    for (int32_t i = 0; i < v->type->rank && i < MIL_INTERP_MAX_RANK_ONNX; i++) shape[i] = v->type->dims[i].size;
    mil_value *w = mil_value_new_tensor(c->p, want, v->type->rank, shape, v->type->is_scalar, NULL);
    if (!w) return MIL_ERR_NOMEM;
    for (int64_t i = 0; i < v->numel; i++) {
      if (want == MIL_DT_INT32) mil_value_set_i64(w, i, mil_value_get_i64(v, i));
      else mil_value_set_f64(w, i, mil_value_get_f64(v, i));
    }
    v = w;
  }
  *out = v;
  return MIL_OK;
}

mil_status onnx_tensor_value(onnx_ctx *c, const Onnx__TensorProto *t, mil_value **out) {
  return tensor_value(c, t, false, out);
}

mil_status onnx_tensor_value_quantized(onnx_ctx *c, const Onnx__TensorProto *t, mil_value **out) {
  return tensor_value(c, t, true, out);
}

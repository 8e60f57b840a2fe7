/* compression::linear_quantize_weights — every const weight the config
 * selects (more than weight_threshold elements, rank > 1, not feeding a
 * constexpr op, see src/compress/select.c) is quantized linearly to
 * int8 / uint8 / int4 / uint4 with a scale (and zero point) per tensor,
 * per output channel or per block:
 *
 *   %w: (64, 32, fp16)*(Tensor) = const(val=[...], name="w")
 *
 * becomes, before iOS18 (int8 / uint8, per tensor or per channel only),
 *
 *   %w_quantized: (64, 32, fp16)(Tensor) = constexpr_affine_dequantize(
 *       quantized_data=<int8 [64, 32]>, zero_point=<[64] or scalar>,
 *       scale=<[64] or scalar>, axis=0, name="w_quantized")
 *
 * and from iOS18 on
 *
 *   %w_quantized = constexpr_blockwise_shift_scale(data=<int8/int4 [64, 32]>,
 *       scale=<[64, 1]>, offset=<[64, 1], only with a zero point>)
 *
 * With fake_compression the dequantized values go into a const named
 * "<w>_fake_quantized". Weights holding inf are skipped, as are int8 /
 * uint8 weights whose values span less than 2.
 *
 * Mirrors coremltools/optimize/coreml/_quantization_passes.py
 * (linear_quantize_weights) and optimize/_utils.py (compute_qparams_by_dtype,
 * ios18_quant_params_to_ios16, dequantize_by_scale_and_zp).
 *
 * joint_compression (iOS18): a const that is the LUT of a lut op (per-tensor
 * quantization only) is quantized like any weight (the size compared with
 * weight_threshold is the final dense weight's); the nonzero data of a
 * constexpr_sparse_to_dense is quantized as the dense weight and becomes a
 * constexpr_sparse_blockwise_shift_scale feeding the sparse op.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "passes/pass_internal.h"

#define PASS "compression::linear_quantize_weights"

/* iOS18 joint compression: the lut of a lut op or the nonzero data of a
 * sparse op may be quantized further. */
static bool joint_child_ok(cw_pass *c, const mil_op *op) {
  if (!c->joint || pass_op_opset(op) < MIL_IOS18) return false;
  mil_op *k[2];
  if (cw_children(op->outputs[0], k, 2) != 1) return false;
  mil_var *v = op->outputs[0];
  if ((strcmp(k[0]->type, "constexpr_lut_to_dense") == 0 || strcmp(k[0]->type, "constexpr_lut_to_sparse") == 0) &&
      mil_op_input_var(k[0], "lut") == v)
    return true;
  return strcmp(k[0]->type, "constexpr_sparse_to_dense") == 0 && mil_op_input_var(k[0], "nonzero_data") == v;
}

/* Joint: the quantized nonzero data of a sparse weight, in
 * constexpr_sparse_blockwise_shift_scale before the sparse op. */
static int emit_sparse(cw_pass *c, mil_op *op, mil_op *child, const cw_weight *w, const cw_qparams *qp,
                       mil_dtype qdt) {
  mil_program *p = c->bld.p;
  mil_var *mask = mil_op_input_var(child, "mask");
  mil_value *data = cw_int_value(p, qdt, w->rank, w->shape, false, qp->q);
  mil_value *nz = data && mask && mask->val ? cw_masked(p, data, mask->val) : NULL;
  mil_value *scale = cw_float_value(p, w->dtype, w->rank, qp->scale_shape, false, qp->scale);
  mil_value *off = qp->zp ? cw_int_value(p, qdt, w->rank, qp->scale_shape, false, qp->zp) : NULL;
  if (!nz || !scale || (qp->zp && !off)) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  char name[512];
  snprintf(name, sizeof name, "%s_quantized", op->name);
  mil_status st = MIL_OK;
  pass_barg args[] = {PASS_BV("data_mask", mask), PASS_BK("nonzero_data", nz), PASS_BK("scale", scale),
                      PASS_BK("offset", off)};
  mil_op *nop = pass_bld_op(&c->bld, NULL, child, "constexpr_sparse_blockwise_shift_scale", name, off ? 4 : 3, args,
                            &st);
  if (!nop) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  return cw_replace(c, op, nop->outputs[1]);
}

static int emit(cw_pass *c, mil_op *op, const cw_weight *w, const cw_qparams *qp, mil_dtype qdt) {
  mil_program *p = c->bld.p;
  mil_dtype fdt = w->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32;
  char name[512];
  mil_status st = MIL_OK;
  if (c->fake) {
    float *x = malloc((size_t)(w->n ? w->n : 1) * sizeof *x);
    if (!x) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    /* dequantize_by_scale_and_zp: (float(q) - float(zp)) * scale, cast to the scale's dtype */
    int64_t idx[MIL_CFG_MAX_RANK] = {0};
    for (int64_t i = 0; i < w->n; i++) {
      int64_t b = 0;
      for (int32_t a = 0; a < w->rank; a++)
        b = b * qp->scale_shape[a] + (qp->scale_shape[a] > 1 ? idx[a] / (w->shape[a] / qp->scale_shape[a]) : 0);
      float q = (float)qp->q[i] - (qp->zp ? (float)qp->zp[b] : 0.0f);
      x[i] = cw_r(w, q * qp->scale[b]);
      cw_next_index(idx, w->shape, w->rank);
    }
    int r = cw_replace_with_const(c, op, "_fake_quantized", w, x);
    free(x);
    return r;
  }
  snprintf(name, sizeof name, "%s_quantized", op->name);
  mil_op *nop;
  if (pass_op_opset(op) < MIL_IOS18) {
    /* ios18_quant_params_to_ios16: axis = first axis with more than one
     * scale, scale and zero point squeezed, zero point 0 when None */
    int64_t axis = 0, sq[MIL_CFG_MAX_RANK];
    int32_t n_non1 = 0;
    for (int32_t a = 0; a < w->rank; a++)
      if (qp->scale_shape[a] > 1) {
        if (!n_non1) axis = a;
        sq[n_non1++] = qp->scale_shape[a];
      }
    if (n_non1 > 1)
      return -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                                  PASS ": constexpr_affine_dequantize does not support a scale with more than one "
                                       "non-single dimension (op %s)",
                                  op->name);
    int32_t *zp0 = NULL;
    if (!qp->zp && !(zp0 = calloc((size_t)qp->n_scale, sizeof *zp0)))
      return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    mil_value *data = cw_int_value(p, qdt, w->rank, w->shape, false, qp->q);
    mil_value *zp = cw_int_value(p, qdt, n_non1, sq, false, qp->zp ? qp->zp : zp0);
    mil_value *scale = cw_float_value(p, fdt, n_non1, sq, false, qp->scale);
    mil_value *ax = pass_bld_i32(p, axis);
    free(zp0);
    if (!data || !zp || !scale || !ax) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    pass_barg args[] = {PASS_BK("quantized_data", data), PASS_BK("zero_point", zp), PASS_BK("scale", scale),
                        PASS_BK("axis", ax)};
    nop = pass_bld_op(&c->bld, NULL, op, "constexpr_affine_dequantize", name, 4, args, &st);
  } else {
    mil_value *data = cw_int_value(p, qdt, w->rank, w->shape, false, qp->q);
    mil_value *scale = cw_float_value(p, fdt, w->rank, qp->scale_shape, false, qp->scale);
    mil_value *off = qp->zp ? cw_int_value(p, qdt, w->rank, qp->scale_shape, false, qp->zp) : NULL;
    if (!data || !scale || (qp->zp && !off)) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    pass_barg args[] = {PASS_BK("data", data), PASS_BK("scale", scale), PASS_BK("offset", off)};
    nop = pass_bld_op(&c->bld, NULL, op, "constexpr_blockwise_shift_scale", name, off ? 3 : 2, args, &st);
  }
  if (!nop) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  return cw_replace(c, op, nop->outputs[0]);
}

static int transform(cw_pass *c, mil_op *op) {
  mil_status st;
  const mil_op_compress_config *cfg = cw_const_config(c, op, &st);
  if (!cfg) return st == MIL_OK ? 0 : -(int)st;
  if (!cw_need_compress(c, op, cfg, op->outputs[0]->val, joint_child_ok)) return 0;
  if (pass_op_opset(op) < MIL_IOS18) {
    const char *what = cfg->granularity == MIL_GRAN_PER_BLOCK                          ? "per_block"
                       : cfg->dtype == MIL_DT_INT4 || cfg->dtype == MIL_DT_UINT4 ? "4-bit"
                                                                                   : NULL;
    if (what)
      return -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                                  PASS ": the %s quantization is supported since iOS18; re-convert the model with "
                                       "minimum_deployment_target set to at least iOS18 (weight %s)",
                                  what, op->name);
  }
  const mil_value *val = op->outputs[0]->val;
  cw_weight w;
  if (!cw_weight_read(val, &w)) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  int r = 0;
  bool is_int = !mil_dtype_is_float(w.dtype);
  float lo, hi;
  if (cw_weight_range(&w, &lo, &hi)) {
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": const %s has inf/-inf, which quantization does not support; skipped",
                 op->name);
    goto done;
  }
  if (is_int) {
    if (hi - lo < 2) goto done; /* an int8 0/1 mask: left as is */
    r = -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                             PASS ": only floating-point weights can be quantized (const %s is %s)", op->name,
                             mil_dtype_name(w.dtype));
    goto done;
  }
  mil_op *sparse = NULL;
  if (c->joint) {
    mil_op *k[1];
    if (cw_children(op->outputs[0], k, 1) >= 1) {
      if (strcmp(k[0]->type, "constexpr_sparse_to_dense") == 0) {
        /* the nonzero data is quantized as the dense weight it stands for */
        mil_var *m = mil_op_input_var(k[0], "mask");
        if (!m || !m->val || !cw_weight_densify(&w, m->val)) {
          r = -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID, PASS ": cannot restore the dense weight of %s", op->name);
          goto done;
        }
        sparse = k[0];
      } else if (strncmp(k[0]->type, "constexpr_lut_to_", 17) == 0 && cfg->granularity != MIL_GRAN_PER_TENSOR) {
        r = -(int)mil_diag_error(c->bld.d, MIL_ERR_UNSUPPORTED,
                                 PASS ": joint compression of a palettization's LUT needs per_tensor quantization "
                                      "(the LUT's axes are not the weight's) (const %s)",
                                 op->name);
        goto done;
      }
    }
  }
  int64_t bs[MIL_CFG_MAX_RANK];
  int32_t ch;
  if (!cw_block_sizes(c, op, cfg, w.rank, w.shape, bs, &ch, &st)) {
    if (st != MIL_OK) r = -(int)st;
    else
      mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": cannot infer the channel axes of %s; skipped", op->name);
    goto done;
  }
  cw_qparams qp;
  bool oom;
  if (!cw_quantize(&w, cfg->dtype, cfg->mode, bs, &qp, &oom)) {
    if (oom) r = -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    else mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": block sizes do not divide the shape of %s; skipped", op->name);
    goto done;
  }
  r = sparse && !c->fake ? emit_sparse(c, op, sparse, &w, &qp, cfg->dtype) : emit(c, op, &w, &qp, cfg->dtype);
  cw_qparams_free(&qp);
done:
  cw_weight_free(&w);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  static const mil_cfg_type types[] = {MIL_CFG_LINEAR_QUANTIZER};
  return cw_pass_main(p, o, stats, d, PASS, MIL_CFG_LINEAR_QUANTIZER, 1, types, NULL, transform);
}

const mil_pass_def pass_def_compression_linear_quantize_weights = {
    PASS, "linearly quantize const weights (int8/uint8/int4/uint4)", cw_options, CW_N_OPTIONS, run, NULL};

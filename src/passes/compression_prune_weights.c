/* compression::prune_weights — every const weight the config selects (see
 * src/compress/select.c) is sparsified: by threshold (|w| <= threshold,
 * OpThresholdPrunerConfig, kept dense when the sparsity stays below
 * minimum_sparsity_percentile), by magnitude (the target_sparsity
 * fraction of smallest |w|, optionally in blocks of block_size along dim)
 * or n:m (the n smallest of every m along dim), OpMagnitudePrunerConfig:
 *
 *   %w: (32, 64, fp16)*(Tensor) = const(val=[...], name="w")
 *
 * becomes, before iOS18,
 *
 *   %w_sparsified = constexpr_sparse_to_dense(nonzero_data=<fp16 [nnz]>,
 *       mask=<uint8 bits, LSB first>, shape=<uint32 [32, 64]>, name="w_sparsified")
 *
 * and from iOS18 on constexpr_sparse_to_dense(nonzero_data, mask=<uint1
 * [32, 64]>). Block and n:m pruning apply only to conv and linear weights
 * (other consts are skipped unless op_name_configs names them). With
 * fake_compression the pruned dense weight goes into a const named
 * "<w>_fake_sparsified".
 *
 * Mirrors coremltools/optimize/coreml/_quantization_passes.py
 * (prune_weights) and _config.py (OpMagnitudePrunerConfig.
 * _check_const_op_is_valid).
 *
 * joint_compression (iOS18): constexpr_blockwise_shift_scale and
 * constexpr_lut_to_dense ops are pruned on their decompressed weight: the
 * quantized data / palette indices where the mask is set go into
 * constexpr_sparse_blockwise_shift_scale / constexpr_lut_to_sparse (same
 * scale, offset, LUT) followed by constexpr_sparse_to_dense.
 */
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "passes/pass_internal.h"

#define PASS "compression::prune_weights"

/* _check_const_op_is_valid: structural pruning only for the weight of
 * conv and linear. */
static bool structural_ok(const mil_op *op) {
  mil_var *v = op->outputs[0];
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) continue;
    if (strcmp(u->op->type, "conv") != 0 && strcmp(u->op->type, "linear") != 0) return false;
    if (mil_op_input_var(u->op, "weight") != v) return false;
  }
  return true;
}

/* The weight an op holds: a const's value, or (joint compression) the
 * decompressed value of a quantization / palettization op. */
static const mil_value *val_of(cw_pass *c, const mil_op *op) {
  if (mil_op_is_const(op)) return op->outputs[0]->val;
  return mil_op_materialize((mil_op *)op, 0, c->bld.d);
}

/* prune_weights.is_valid_op: consts, or with joint compression the ops
 * whose decompressed weight may be pruned further. */
static bool valid(cw_pass *c, const mil_op *op) {
  if (!c->joint) return cw_is_weight_const(op);
  if (pass_op_opset(op) < MIL_IOS18) return false;
  if (strcmp(op->type, "constexpr_blockwise_shift_scale") != 0 && strcmp(op->type, "constexpr_lut_to_dense") != 0)
    return false;
  mil_diag d = {0};
  const mil_value *v = mil_op_materialize((mil_op *)op, 0, &d);
  mil_diag_clear(&d);
  return cw_is_weight_value(v);
}

/* Joint: the quantized data (or palette indices) where the mask is set, in
 * the sparse form of the op, and a constexpr_sparse_to_dense on its
 * outputs (_create_constexpr_var with joint_compression). */
static int emit_joint(cw_pass *c, mil_op *op, mil_value *mask) {
  mil_program *p = c->bld.p;
  bool q = strcmp(op->type, "constexpr_blockwise_shift_scale") == 0;
  mil_var *src = mil_op_input_var(op, q ? "data" : "indices");
  if (!q && mil_op_input_var(op, "vector_axis"))
    return -(int)mil_diag_error(c->bld.d, MIL_ERR_UNSUPPORTED,
                                PASS ": joint pruning of vector-palettized %s is not supported", op->name);
  mil_value *nz = mask && src && src->val ? cw_masked(p, src->val, mask) : NULL;
  if (!nz) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  mil_status st = MIL_OK;
  mil_op *sp;
  if (q) {
    mil_var *off = mil_op_input_var(op, "offset");
    pass_barg a[] = {PASS_BK("data_mask", mask), PASS_BK("nonzero_data", nz), PASS_BV("scale", mil_op_input_var(op, "scale")),
                     PASS_BV("offset", off)};
    sp = pass_bld_op(&c->bld, NULL, op, "constexpr_sparse_blockwise_shift_scale", NULL, off ? 4 : 3, a, &st);
  } else {
    pass_barg a[] = {PASS_BK("indices_mask", mask), PASS_BK("indices_nonzero_data", nz),
                     PASS_BV("lut", mil_op_input_var(op, "lut"))};
    sp = pass_bld_op(&c->bld, NULL, op, "constexpr_lut_to_sparse", NULL, 3, a, &st);
  }
  if (!sp) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  char name[512];
  snprintf(name, sizeof name, "%s_sparsified", op->name);
  pass_barg a2[] = {PASS_BV("nonzero_data", sp->outputs[1]), PASS_BV("mask", sp->outputs[0])};
  mil_op *nop = pass_bld_op(&c->bld, NULL, op, "constexpr_sparse_to_dense", name, 2, a2, &st);
  if (!nop) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  return cw_replace(c, op, nop->outputs[0]);
}

/* The mask value of a weight of the given shape: packbits (LSB first)
 * before iOS18, uint1 in the weight's shape after; both are the same bit
 * stream. Its bytes are left for the caller to write. */
static mil_value *new_mask(cw_pass *c, const mil_op *op, int32_t rank, const int64_t *shape, int64_t n) {
  bool ios16 = pass_op_opset(op) < MIL_IOS18 && mil_op_is_const(op);
  int64_t nbytes = (n + 7) / 8;
  return ios16 ? mil_value_new_tensor_uninit(c->bld.p, MIL_DT_UINT8, 1, &nbytes, false)
               : mil_value_new_tensor_uninit(c->bld.p, MIL_DT_UINT1, rank, shape, false);
}

/* Replaces const op by constexpr_sparse_to_dense(nonzero_data=nzv,
 * mask[, shape]) (NULL values: out of memory). */
static int emit_sparse(cw_pass *c, mil_op *op, int32_t rank, const int64_t *shape, mil_value *mask,
                       mil_value *nzv) {
  mil_program *p = c->bld.p;
  char name[512];
  snprintf(name, sizeof name, "%s_sparsified", op->name);
  mil_status st = MIL_OK;
  mil_op *nop = NULL;
  if (!mask || !nzv) {
    st = MIL_ERR_NOMEM;
  } else if (pass_op_opset(op) < MIL_IOS18) {
    mil_value *sh = mil_value_new_tensor(p, MIL_DT_UINT32, 1, (int64_t[]){rank}, false, NULL);
    if (sh) {
      for (int32_t a = 0; a < rank; a++) mil_value_set_i64(sh, a, shape[a]);
      pass_barg args[] = {PASS_BK("nonzero_data", nzv), PASS_BK("mask", mask), PASS_BK("shape", sh)};
      nop = pass_bld_op(&c->bld, NULL, op, "constexpr_sparse_to_dense", name, 3, args, &st);
    } else {
      st = MIL_ERR_NOMEM;
    }
  } else {
    pass_barg args[] = {PASS_BK("nonzero_data", nzv), PASS_BK("mask", mask)};
    nop = pass_bld_op(&c->bld, NULL, op, "constexpr_sparse_to_dense", name, 2, args, &st);
  }
  if (!nop) {
    if (st == MIL_ERR_NOMEM) mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  }
  return cw_replace(c, op, nop->outputs[0]);
}

static int emit(cw_pass *c, mil_op *op, const cw_weight *w, const float *val) {
  if (c->fake) {
    /* sparse_to_dense: pruned elements come back as +0 */
    float *x = malloc((size_t)w->n * sizeof *x);
    if (!x) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    for (int64_t i = 0; i < w->n; i++) x[i] = val[i] != 0 ? val[i] : 0.0f;
    int r = cw_replace_with_const(c, op, "_fake_sparsified", w, x);
    free(x);
    return r;
  }
  mil_value *mask = new_mask(c, op, w->rank, w->shape, w->n);
  uint8_t *mb = mask ? mil_value_data_mut(mask) : NULL;
  float *nz = malloc((size_t)(w->n ? w->n : 1) * sizeof *nz);
  if (!mb || !nz) {
    free(nz);
    return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  }
  memset(mb, 0, mask->nbytes);
  int64_t nnz = 0;
  for (int64_t i = 0; i < w->n; i++) { /* branch-free: the mask is as likely set as not */
    bool set = val[i] != 0;
    mb[i >> 3] |= (uint8_t)(set << (i & 7));
    nz[nnz] = val[i];
    nnz += set;
  }
  if (!mil_op_is_const(op)) {
    free(nz);
    return emit_joint(c, op, mask);
  }
  mil_value *nzv = cw_float_value(c->bld.p, w->dtype, 1, &nnz, false, nz);
  free(nz);
  return emit_sparse(c, op, w->rank, w->shape, mask, nzv);
}

/* Magnitude pruning of an fp32 / fp16 const without block sparsity,
 * streamed from the weight's bytes (mapped from the weight file): the mask
 * is built, the nonzero data is a deferred gather of the weight through
 * the mask (computed piecewise by the weight writer): no dense copy. 2 when not handled here (the dense
 * path then runs), else as transform. */
static int prune_streamed(cw_pass *c, mil_op *op, const mil_value *v, const mil_op_compress_config *cfg) {
  const mil_type *t = v->type;
  if (!t || t->rank < 0 || t->rank > MIL_CFG_MAX_RANK) return 2;
  int64_t shape[MIL_CFG_MAX_RANK];
  for (int32_t a = 0; a < t->rank; a++) shape[a] = t->dims[a].size;
  const void *raw = mil_value_data(v);
  if (!raw) return 2;
  cw_sparse_cut cut;
  int r = cw_prune_magnitude_cut(raw, t->dtype, v->numel, cfg->target_sparsity * 100, &cut);
  if (r == 0) return 2;
  if (r < 0) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  mil_value *mask = new_mask(c, op, t->rank, shape, v->numel);
  uint8_t *mb = mask ? mil_value_data_mut(mask) : NULL;
  if (!mb) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  /* the nonzero data is gathered from the weight when it is written */
  mil_value *nzv = NULL;
  if (!cut.nan) {
    cw_sparse_mask(raw, t->dtype, v->numel, &cut, mb);
    nzv = mil_value_new_deferred_masked(c->bld.p, v, mask, cut.nnz);
  }
  if (!nzv) {
    nzv = mil_value_new_tensor_uninit(c->bld.p, t->dtype, 1, &cut.nnz, false);
    void *nz = nzv ? mil_value_data_mut(nzv) : NULL;
    if (!nz && cut.nnz) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    cw_sparse_split(raw, t->dtype, v->numel, &cut, mb, nz);
  }
  /* the weight is replaced: its pages need not stay resident */
  mil_value_release_pages(v);
  return emit_sparse(c, op, t->rank, shape, mask, nzv);
}

static int transform(cw_pass *c, mil_op *op) {
  mil_status st;
  const mil_op_compress_config *cfg = cw_const_config(c, op, &st);
  if (!cfg) return st == MIL_OK ? 0 : -(int)st;
  if (!cw_need_compress(c, op, cfg, val_of(c, op), NULL)) return 0;
  bool structural = cfg->type == MIL_CFG_MAGNITUDE_PRUNER && (cfg->has_prune_block_size || cfg->has_n_m_ratio);
  if (structural && !structural_ok(op) && !compress_config_find(c->cfg->op_name, c->cfg->n_op_name, op->name)) {
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": op named %s not applicable for %s configuration; skipped",
                 op->name, mil_cfg_type_name(cfg->type));
    return 0;
  }
  const mil_value *v = val_of(c, op);
  if (v && mil_op_is_const(op) && !c->fake && cfg->type == MIL_CFG_MAGNITUDE_PRUNER && cfg->has_target_sparsity &&
      !cfg->has_prune_block_size) {
    int r = prune_streamed(c, op, v, cfg);
    if (r != 2) return r;
  }
  cw_weight w;
  if (!v || !cw_weight_read(v, &w)) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  float *val = malloc((size_t)(w.n ? w.n : 1) * sizeof *val);
  int r = -1;
  if (val) {
    if (cfg->type == MIL_CFG_THRESHOLD_PRUNER) r = cw_prune_threshold(&w, cfg, val);
    else if (cfg->has_target_sparsity) r = cw_prune_magnitude(&w, cfg, val);
    else r = cw_prune_n_m(&w, cfg, val);
  }
  if (r < 0) r = -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  else if (r == 0)
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": op named %s not applicable for %s configuration; skipped",
                 op->name, mil_cfg_type_name(cfg->type));
  else r = emit(c, op, &w, val);
  free(val);
  cw_weight_free(&w);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  static const mil_cfg_type types[] = {MIL_CFG_MAGNITUDE_PRUNER, MIL_CFG_THRESHOLD_PRUNER};
  return cw_pass_main(p, o, stats, d, PASS, MIL_CFG_THRESHOLD_PRUNER, 2, types, valid, transform);
}

const mil_pass_def pass_def_compression_prune_weights = {PASS, "sparsify const weights", cw_options, CW_N_OPTIONS,
                                                         run, NULL};

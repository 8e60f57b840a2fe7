/* compression::palettize_weights — every const weight the config selects
 * (see src/compress/select.c) is replaced by a look-up table of 2^nbits
 * values (k-means, uniform or unique values; per tensor or per group of
 * group_size output channels; scalars or vectors of cluster_dim along the
 * channel axis; optionally after dividing by a per-channel scale) and an
 * index per element:
 *
 *   %w: (32, 64, fp16)*(Tensor) = const(val=[...], name="w")
 *
 * becomes, before iOS18 (per tensor, scalars only),
 *
 *   %w_palettized = constexpr_lut_to_dense(indices=<uint8, nbits per index
 *       packed LSB first>, lut=<fp16 [2^nbits]>, shape=<uint32 [32, 64]>)
 *
 * and from iOS18 on constexpr_lut_to_dense(indices=<uintN [32, 64]>,
 * lut=<fp16 [groups, 1, 2^nbits, cluster_dim]>[, vector_axis]) followed,
 * with enable_per_channel_scale, by constexpr_blockwise_shift_scale(data,
 * scale) named "<w>_palettized_pcs". fake_compression stores the
 * decompressed weight in a const "<w>_fake_palettized".
 *
 * k-means is the optimal 1-D k-means (kmeans1d) for fp16 weights of at
 * least 10000 elements per group and scalar LUTs, and scikit-learn's
 * seeded k-means++ / Lloyd otherwise (src/compress/kmeans.c).
 *
 * Mirrors coremltools/optimize/coreml/_quantization_passes.py
 * (palettize_weights), optimize/_utils.py (infer_block_sizes,
 * is_cluster_dim_valid, ios18_lut_params_to_ios16,
 * pack_elements_into_bits) and frontend/_utils.py
 * (_construct_constexpr_lut_op).
 *
 * joint_compression (iOS18): the data of a constexpr_blockwise_shift_scale
 * (an int8 weight, palettized with an int8 LUT) and the nonzero data of a
 * constexpr_sparse_to_dense (palettized as the dense weight; becomes
 * constexpr_lut_to_sparse on the sparse op's mask, the sparse op made anew
 * on its outputs) may be palettized further.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "passes/pass_internal.h"

#define PASS "compression::palettize_weights"

static bool cluster_dim_ok(const mil_op *op, int64_t cd, int32_t ch) {
  mil_var *v = op->outputs[0];
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op || (strcmp(u->op->type, "conv") != 0 && strcmp(u->op->type, "conv_transpose") != 0)) continue;
    int64_t dim = v->type->dims[ch].size;
    const mil_value *g = pass_input_value(u->op, "groups");
    if (ch == 0 && g && g->numel == 1 && mil_value_get_i64(g, 0) > 1) dim /= mil_value_get_i64(g, 0);
    if (dim % cd != 0) return false;
  }
  return true;
}

/* iOS18 joint compression: the nonzero data of a sparse op, or the data of
 * a quantization op, may be palettized further. */
static bool joint_child_ok(cw_pass *c, const mil_op *op) {
  if (!c->joint || pass_op_opset(op) < MIL_IOS18) return false;
  mil_op *k = cw_only_child(op);
  mil_var *v = op->outputs[0];
  return k && ((strcmp(k->type, "constexpr_sparse_to_dense") == 0 && mil_op_input_var(k, "nonzero_data") == v) ||
               (strcmp(k->type, "constexpr_blockwise_shift_scale") == 0 && mil_op_input_var(k, "data") == v));
}

static mil_status oom(cw_pass *c) { return mil_diag_error(c->bld.d, MIL_ERR_NOMEM, PASS ": out of memory"); }

static int emit(cw_pass *c, mil_op *op, const cw_weight *w, const cw_lut *l, const float *pcs,
                const int64_t *pcs_shape, mil_op *sparse) {
  mil_program *p = c->bld.p;
  mil_dtype fdt = w->dtype;
  char name[512];
  int64_t P = (int64_t)1 << l->nbits, nidx = w->n / l->cd;
  if (c->fake) {
    float *x = malloc((size_t)w->n * sizeof *x);
    if (!x) return -(int)oom(c);
    /* lut_to_dense: element e of the weight reads lut[group(e)][idx(e)][j] */
    int32_t ch = l->vector_axis, rank = w->rank;
    int64_t gs = w->shape[ch] / l->groups, idx[MIL_CFG_MAX_RANK] = {0};
    for (int64_t i = 0; i < w->n; i++) {
      int64_t io = 0;
      for (int32_t a = 0; a < rank; a++) io = io * l->idx_shape[a] + (a == ch ? idx[a] / l->cd : idx[a]);
      int64_t g = idx[ch] / gs;
      float v = l->lut[(g * P + l->idx[io]) * l->cd + idx[ch] % l->cd];
      if (pcs) {
        int64_t so = 0;
        for (int32_t a = 0; a < rank; a++) so = so * pcs_shape[a] + (a == ch ? 0 : idx[a]);
        v = cw_r(w, v * pcs[so]);
      }
      x[i] = v;
      cw_next_index(idx, w->shape, rank);
    }
    int r = cw_replace_with_const(c, op, "_fake_palettized", w, x);
    free(x);
    return r;
  }
  snprintf(name, sizeof name, "%s_palettized", op->name);
  mil_status st = MIL_OK;
  mil_op *nop;
  if (pass_op_opset(op) < MIL_IOS18) {
    if (l->groups > 1 || l->cd > 1)
      return -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                                  PASS ": per-group and vector palettization need iOS18 (weight %s)", op->name);
    int64_t nbytes = (nidx * l->nbits + 7) / 8, rank1 = w->rank;
    mil_value *ind = mil_value_new_tensor(p, MIL_DT_UINT8, 1, &nbytes, false, NULL);
    mil_value *lut = cw_float_value(p, fdt, 1, &P, false, l->lut);
    mil_value *shape = mil_value_new_tensor(p, MIL_DT_UINT32, 1, &rank1, false, NULL);
    uint8_t *ib = ind ? mil_value_data_mut(ind) : NULL;
    if (!ib || !lut || !shape) return -(int)oom(c);
    for (int64_t i = 0; i < nidx; i++) mil_bits_set(ib, i, l->nbits, l->idx[i]);
    for (int32_t a = 0; a < w->rank; a++) mil_value_set_i64(shape, a, w->shape[a]);
    pass_barg args[] = {PASS_BK("indices", ind), PASS_BK("lut", lut), PASS_BK("shape", shape)};
    nop = pass_bld_op(&c->bld, NULL, op, "constexpr_lut_to_dense", name, 3, args, &st);
  } else {
    static const mil_dtype k_udt[9] = {MIL_DT_UNUSED, MIL_DT_UINT1, MIL_DT_UINT2, MIL_DT_UINT3, MIL_DT_UINT4,
                                       MIL_DT_UNUSED, MIL_DT_UINT6, MIL_DT_UNUSED, MIL_DT_UINT8};
    int32_t *ii = malloc((size_t)(nidx ? nidx : 1) * sizeof *ii);
    if (!ii) return -(int)oom(c);
    for (int64_t i = 0; i < nidx; i++) ii[i] = l->idx[i];
    mil_value *ind = cw_int_value(p, k_udt[l->nbits], l->idx_rank, l->idx_shape, false, ii);
    free(ii);
    mil_value *lut = cw_float_value(p, fdt, l->lut_rank, l->lut_shape, false, l->lut);
    mil_value *va = l->cd > 1 ? pass_bld_i32(p, l->vector_axis) : NULL;
    if (!ind || !lut || (l->cd > 1 && !va)) return -(int)oom(c);
    if (sparse) {
      /* joint: constexpr_lut_to_sparse on the sparse op's mask, and the
       * sparse op made again on its outputs (coremltools re-creates it) */
      mil_var *mask = mil_op_input_var(sparse, "mask");
      mil_value *nz = mask && mask->val ? cw_masked(p, ind, mask->val) : NULL;
      if (!nz) return -(int)oom(c);
      pass_barg a1[] = {PASS_BV("indices_mask", mask), PASS_BK("indices_nonzero_data", nz), PASS_BK("lut", lut),
                        PASS_BK("vector_axis", va)};
      mil_op *ls = pass_bld_op(&c->bld, NULL, sparse, "constexpr_lut_to_sparse", name, va ? 4 : 3, a1, &st);
      if (!ls) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
      pass_barg a2[] = {PASS_BV("nonzero_data", ls->outputs[1]), PASS_BV("mask", ls->outputs[0])};
      mil_op *sd = pass_bld_op(&c->bld, NULL, sparse, "constexpr_sparse_to_dense", sparse->name, 2, a2, &st);
      if (!sd) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
      pass_replace_uses_after(sparse, sparse->outputs[0], sd->outputs[0]);
      if ((st = pass_remove_ops(&sparse, 1, c->bld.d)) != MIL_OK) return -(int)st;
      return cw_replace(c, op, ls->outputs[1]);
    }
    pass_barg args[] = {PASS_BK("indices", ind), PASS_BK("lut", lut), PASS_BK("vector_axis", va)};
    nop = pass_bld_op(&c->bld, NULL, op, "constexpr_lut_to_dense", name, va ? 3 : 2, args, &st);
  }
  if (!nop) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
  mil_var *nv = nop->outputs[0];
  if (pcs) {
    if (pass_op_opset(op) < MIL_IOS18)
      return -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                                  PASS ": palettization with per-channel scale is only supported since iOS18");
    mil_value *sv = cw_float_value(p, fdt, w->rank, pcs_shape, false, pcs);
    if (!sv) return -(int)oom(c);
    snprintf(name, sizeof name, "%s_palettized_pcs", op->name);
    pass_barg args[] = {PASS_BV("data", nv), PASS_BK("scale", sv)};
    mil_op *sop = pass_bld_op(&c->bld, NULL, op, "constexpr_blockwise_shift_scale", name, 2, args, &st);
    if (!sop) return -(int)(st != MIL_OK ? st : MIL_ERR_INVALID);
    nv = sop->outputs[0];
  }
  return cw_replace(c, op, nv);
}

static int transform(cw_pass *c, mil_op *op) {
  mil_status st;
  const mil_op_compress_config *cfg = cw_const_config(c, op, &st);
  if (!cfg) return st == MIL_OK ? 0 : -(int)st;
  if (!cw_need_compress(c, op, cfg, op->outputs[0]->val, joint_child_ok)) return 0;
  if (pass_op_opset(op) < MIL_IOS18 && (cfg->granularity == MIL_GRAN_PER_GROUPED_CHANNEL || cfg->cluster_dim > 1))
    return -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                                PASS ": the %s palettization is supported since iOS18; re-convert the model with "
                                     "minimum_deployment_target set to at least iOS18 (weight %s)",
                                cfg->granularity == MIL_GRAN_PER_GROUPED_CHANNEL ? "per_grouped_channel" : "vector",
                                op->name);
  cw_weight w;
  if (!cw_weight_read(op->outputs[0]->val, &w)) return -(int)oom(c);
  int r = 0;
  float *pcs = NULL;
  mil_op *sparse = NULL;
  if (c->joint) {
    mil_op *k = cw_only_child(op);
    if (k && strcmp(k->type, "constexpr_sparse_to_dense") == 0) {
      /* palettized as the dense weight the nonzero data stands for */
      mil_var *m = mil_op_input_var(k, "mask");
      if (cfg->cluster_dim > 1 || !m || !m->val || !cw_weight_densify(&w, m->val)) {
        r = -(int)mil_diag_error(c->bld.d, MIL_ERR_UNSUPPORTED,
                                 PASS ": joint palettization of the sparse weight %s (vector LUTs are not supported)",
                                 op->name);
        goto done;
      }
      sparse = k;
    }
  }
  int64_t pcs_shape[MIL_CFG_MAX_RANK];
  int64_t bs[MIL_CFG_MAX_RANK];
  int32_t ch;
  if (!cw_block_sizes(c, op, cfg, w.rank, w.shape, bs, &ch, &st)) {
    if (st != MIL_OK) r = -(int)st;
    else mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": cannot infer the channel axes of %s; skipped", op->name);
    goto done;
  }
  if (cfg->cluster_dim > 1 && !cluster_dim_ok(op, cfg->cluster_dim, ch)) {
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": the cluster_dim is invalid for %s; skipped", op->name);
    goto done;
  }
  if (cfg->enable_per_channel_scale) {
    /* np.max(np.abs(w), axis=channel_axis, keepdims=True), 0 -> 1, w /= it */
    int64_t inner = 1, chn = w.shape[ch], outer = 1;
    for (int32_t a = 0; a < w.rank; a++) {
      pcs_shape[a] = a == ch ? 1 : w.shape[a];
      if (a < ch) outer *= w.shape[a];
      if (a > ch) inner *= w.shape[a];
    }
    if (!(pcs = malloc((size_t)(outer * inner) * sizeof *pcs))) {
      r = -(int)oom(c);
      goto done;
    }
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        float m = 0;
        for (int64_t k = 0; k < chn; k++) m = fmaxf(m, fabsf(w.w[(o * chn + k) * inner + i]));
        if (m == 0) m = 1;
        pcs[o * inner + i] = m;
        for (int64_t k = 0; k < chn; k++) {
          float *x = &w.w[(o * chn + k) * inner + i];
          *x = cw_r(&w, *x / m);
        }
      }
  }
  /* blockwise_compress: the channel axis and group size from the block sizes */
  int64_t gsz = 0;
  for (int32_t a = 0; a < w.rank; a++)
    if (bs[a] != 0 && bs[a] != w.shape[a]) {
      if (ch >= 0 && ch != a) {
        r = -(int)mil_diag_error(c->bld.d, MIL_ERR_UNSUPPORTED,
                                 PASS ": general block-wise palettization is not supported; use per_grouped_channel "
                                      "or per_tensor granularity");
        goto done;
      }
      ch = a, gsz = bs[a];
    }
  if (ch < 0) {
    if (cfg->cluster_dim > 1) {
      r = -(int)mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                               PASS ": cannot infer the channel axis, which vector palettization needs (weight %s)",
                               op->name);
      goto done;
    }
    ch = 0;
  }
  cw_lut l;
  int pr = cw_palettize(&w, cfg, ch, gsz, &l);
  if (pr < 0) r = -(int)oom(c);
  else if (pr == 0)
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, PASS ": cannot perform palettization on %s; skipped", op->name);
  else {
    r = emit(c, op, &w, &l, pcs, pcs_shape, c->fake ? NULL : sparse);
    cw_lut_free(&l);
  }
done:
  free(pcs);
  cw_weight_free(&w);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  static const mil_cfg_type types[] = {MIL_CFG_PALETTIZER};
  return cw_pass_main(p, o, stats, d, PASS, MIL_CFG_PALETTIZER, 1, types, NULL, transform);
}

const mil_pass_def pass_def_compression_palettize_weights = {
    PASS, "palettize const weights (lookup-table compression)", cw_options, CW_N_OPTIONS, run, NULL};

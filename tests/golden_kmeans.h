/* The golden comparison rule for palettization cases whose LUTs
 * coremltools computed with scikit-learn's KMeans (float32 runs whose last
 * bits no other implementation reproduces): such a case passes when, for
 * every constexpr_lut_to_dense of the result and the expected op of the
 * same name, the cluster assignments are equal up to the order of the LUT
 * entries and the LUTs agree within 1e-3 relative. golden_kmeans_snap
 * checks that per LUT group and then gives the result the expected indices
 * and LUT, so that the ordinary equivalence check covers everything else.
 *
 * The rule applies to the LUTs scikit-learn made: every k-means LUT except
 * those of fp16 weights with at least 10000 elements per group and scalar
 * entries, which coremltools computes with kmeans1d (exact, compared
 * bit for bit). The cases are those of compression_palettize_weights whose
 * config uses mode "kmeans" (the default): CompressionOperations.*,
 * OptimizationConfig.test_set_op_name_for_const and the kmeans
 * PalettizeWeights.test_vector_palettization cases.
 *
 * Header-only, for tests/golden_util.h. */
#ifndef MIL_TESTS_GOLDEN_KMEANS_H
#define MIL_TESTS_GOLDEN_KMEANS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mil/mil.h"

static inline mil_op *gk_find(mil_program *p, const char *name) {
  for (int32_t f = 0; f < p->n_functions; f++)
    for (mil_op *op = mil_function_body(p->functions[f])->first; op; op = op->next)
      if (strcmp(op->name, name) == 0) return op;
  return NULL;
}

/* index i of the indices value (iOS16: packed bits of nbits; iOS18: uintN) */
static inline int64_t gk_index(const mil_value *v, bool packed, int nbits, int64_t i) {
  if (packed) return mil_bits_get(mil_value_data(v), i, nbits);
  return mil_value_get_i64(v, i);
}

typedef struct gk_ent {
  const mil_value *lut;
  int64_t base;
  int cd;
  int64_t k;
} gk_ent;

static inline int gk_cmp(const void *a, const void *b) {
  const gk_ent *x = a, *y = b;
  for (int j = 0; j < x->cd; j++) {
    double u = mil_value_get_f64(x->lut, (x->base + x->k) * x->cd + j);
    double v = mil_value_get_f64(y->lut, (y->base + y->k) * y->cd + j);
    if (u != v) return u < v ? -1 : 1;
  }
  return x->k < y->k ? -1 : x->k > y->k;
}

/* rank[k] = position of entry k of group g in sorted order */
static inline void gk_ranks(const mil_value *lut, int64_t g, int64_t P, int cd, int64_t *rank) {
  gk_ent *e = malloc((size_t)P * sizeof *e);
  for (int64_t k = 0; k < P; k++) e[k] = (gk_ent){lut, g * P, cd, k};
  qsort(e, (size_t)P, sizeof *e, gk_cmp);
  for (int64_t k = 0; k < P; k++) rank[e[k].k] = k;
  free(e);
}

static inline mil_value *gk_copy(mil_program *p, const mil_value *v) {
  int64_t shape[16];
  for (int32_t a = 0; a < v->type->rank; a++) shape[a] = v->type->dims[a].size;
  return mil_value_new_tensor(p, v->type->dtype, v->type->rank, shape, v->type->is_scalar, mil_value_data(v));
}

/* Returns the number of LUTs snapped, or -1 with the reason in why. */
static inline int golden_kmeans_snap(mil_program *res, mil_program *ex, char *why, size_t n) {
  int snapped = 0;
  for (int32_t f = 0; f < res->n_functions; f++)
    for (mil_op *op = mil_function_body(res->functions[f])->first; op; op = op->next) {
      if (strcmp(op->type, "constexpr_lut_to_dense") != 0) continue;
      mil_op *eo = gk_find(ex, op->name);
      if (!eo || strcmp(eo->type, op->type) != 0) continue;
      mil_var *ri = mil_op_input_var(op, "indices"), *rl = mil_op_input_var(op, "lut");
      mil_var *ei = mil_op_input_var(eo, "indices"), *el = mil_op_input_var(eo, "lut");
      if (!ri || !rl || !ei || !el || !ri->val || !rl->val || !ei->val || !el->val) continue;
      const mil_value *rlv = rl->val, *elv = el->val, *riv = ri->val, *eiv = ei->val;
      if (!mil_type_equal(rlv->type, elv->type) || !mil_type_equal(riv->type, eiv->type)) continue;
      bool packed = mil_op_input_var(op, "shape") != NULL;
      int32_t lr = rlv->type->rank;
      int64_t P = packed ? rlv->numel : rlv->type->dims[lr - 2].size;
      int cd = packed ? 1 : (int)rlv->type->dims[lr - 1].size;
      int nbits = 0;
      while ((1 << nbits) < P) nbits++;
      int64_t G = rlv->numel / (P * cd);
      int64_t nidx = packed ? mil_type_numel(op->outputs[0]->type) : riv->numel;
      if (rlv->type->dtype == MIL_DT_FP16 && cd == 1 && nidx / G * cd >= 10000) continue; /* kmeans1d: exact */
      int64_t *rr = malloc((size_t)(G * P) * sizeof *rr), *er = malloc((size_t)(G * P) * sizeof *er);
      for (int64_t g = 0; g < G; g++) {
        gk_ranks(rlv, g, P, cd, rr + g * P);
        gk_ranks(elv, g, P, cd, er + g * P);
      }
      /* group of each index: iOS18 luts repeat over the indices' axes */
      int32_t ir = packed ? 1 : riv->type->rank;
      int64_t idx[16] = {0};
      bool ok = true;
      for (int64_t i = 0; i < nidx && ok; i++) {
        int64_t g = 0;
        if (!packed)
          for (int32_t a = 0; a < ir; a++) {
            int64_t b = rlv->type->dims[a].size, s = riv->type->dims[a].size;
            g = g * b + idx[a] / (s / b);
          }
        int64_t x = gk_index(riv, packed, nbits, i), y = gk_index(eiv, packed, nbits, i);
        if (rr[g * P + x] != er[g * P + y]) {
          snprintf(why, n, "%s: cluster assignment of element %lld differs from coremltools' (k-means rule)",
                   op->name, (long long)i);
          ok = false;
        }
        if (!packed)
          for (int32_t a = ir - 1; a >= 0; a--) {
            if (++idx[a] < riv->type->dims[a].size) break;
            idx[a] = 0;
          }
      }
      for (int64_t g = 0; g < G && ok; g++)
        for (int64_t k = 0; k < P && ok; k++) {
          int64_t ka = 0, kb = 0;
          for (int64_t t = 0; t < P; t++) {
            if (rr[g * P + t] == k) ka = t;
            if (er[g * P + t] == k) kb = t;
          }
          for (int j = 0; j < cd && ok; j++) {
            double a = mil_value_get_f64(rlv, (g * P + ka) * cd + j), b = mil_value_get_f64(elv, (g * P + kb) * cd + j);
            if (fabs(a - b) > 1e-3 * fmax(fabs(a), fabs(b))) {
              snprintf(why, n, "%s: LUT entry %g differs from coremltools' %g by more than 1e-3 relative", op->name, a,
                       b);
              ok = false;
            }
          }
        }
      free(rr), free(er);
      if (!ok) return -1;
      mil_var_set_value(ri, gk_copy(res, eiv));
      mil_var_set_value(rl, gk_copy(res, elv));
      snapped++;
    }
  return snapped;
}

#endif

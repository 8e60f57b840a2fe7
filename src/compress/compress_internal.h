/* Internal interface of src/compress/ (weight compression) shared with the
 * compression passes (src/passes/compression_*.c).
 *
 * Mirrors coremltools/optimize/coreml/_quantization_passes.py
 * (AbstractCompressionPass: which consts, in which order), _config.py
 * (_get_const_op_config) and coremltools/optimize/_utils.py (channel axes,
 * block sizes, the quantization / sparse / LUT parameter arithmetic).
 *
 * Weights are handled as float arrays: an fp16 weight is widened exactly
 * and every arithmetic step that numpy does on fp16 arrays is rounded back
 * to half (cw_h), so results are numpy's bit for bit. */
#ifndef MIL_COMPRESS_INTERNAL_H
#define MIL_COMPRESS_INTERNAL_H

#include <cjson/cJSON.h>

#include "mil/compress.h"
#include "mil/ir.h"
#include "mil/ops.h"
#include "mil/passes.h"

#include "build/build.h"

/* ---------- config (config.c) ---------- */

mil_status compress_config_from_cjson(const cJSON *root, const char *src, mil_cfg_type default_type,
                                      mil_compress_config **out, mil_diag *d);
const mil_compress_entry *compress_config_find(const mil_compress_entry *e, int32_t n, const char *key);

/* ---------- the pass frame (select.c) ---------- */

/* What a compression pass carries. */
typedef struct cw_pass {
  pass_bld bld;               /* program, diag, names, pass name */
  mil_compress_config *cfg;   /* parsed `config` option (owned) */
  bool joint, fake;           /* joint_compression, fake_compression */
  int64_t n_done;             /* weights compressed */
} cw_pass;

/* The options of every compression pass: config (JSON), joint_compression
 * and fake_compression (bools, default false). */
#define CW_N_OPTIONS 3
extern const mil_pass_option_def cw_options[CW_N_OPTIONS];

/* Reads the options every compression pass has (config, joint_compression,
 * fake_compression) and checks the config's classes. default_type is the
 * class assumed when the config names none. */
mil_status cw_pass_init(cw_pass *c, mil_program *p, const mil_pass_options *o, mil_diag *d, const char *pass,
                        mil_cfg_type default_type, int n_types, const mil_cfg_type *types);
void cw_pass_free(cw_pass *c);

/* Per-const transform; returns 1 when compressed, 0 when skipped,
 * -(status) on error. */
typedef int (*cw_transform_fn)(cw_pass *c, mil_op *op);
/* coremltools' AbstractCompressionPass.apply: for every block (nested
 * blocks first, as each op is reached), collects the ops `valid` accepts
 * (NULL: const ops whose value is a weight, cw_is_weight_const), then
 * transforms them in order. Blocks of functions whose opset is older than
 * iOS16 are skipped (coremltools warns). Adds the count to st->changes. */
mil_status cw_pass_run(cw_pass *c, bool (*valid)(cw_pass *, const mil_op *), cw_transform_fn fn,
                       mil_pass_stats *st);

/* should_use_weight_file: a tensor of >= 10 elements of fp16 / fp32 /
 * uint8 / int8. */
bool cw_is_weight_value(const mil_value *v);
bool cw_is_weight_const(const mil_op *op);

/* _get_const_op_config: by the const's name, else (op-type configs may not
 * name "const") from the ops consuming it, following a chain of constexpr
 * consumers; NULL for None (also when it only feeds block outputs).
 * Errors (returned through *st): a config set for op type "const", a
 * conflict between consumers. */
const mil_op_compress_config *cw_const_config(cw_pass *c, const mil_op *op, mil_status *st);
/* need_compress_const: no constexpr consumer (joint rules per pass through
 * child_ok), rank > 1 unless the first consumer is a constexpr, more than
 * weight_threshold elements. */
bool cw_need_compress(cw_pass *c, const mil_op *op, const mil_op_compress_config *cfg, const mil_value *v,
                      bool (*child_ok)(cw_pass *, const mil_op *));

/* select_input_output_channel_axis: -1 when the consumers disagree. */
void cw_channel_axes(const mil_op *op, int32_t *in_axis, int32_t *out_axis);
/* infer_block_sizes for a weight of rank `rank` / shape: false for None
 * (unknown axes); *channel_axis receives the output channel axis (-1 for
 * None). Errors (MIL_ERR_INVALID, through *st): a block_size list of the
 * wrong length. */
bool cw_block_sizes(cw_pass *c, const mil_op *op, const mil_op_compress_config *cfg, int32_t rank,
                    const int64_t *shape, int64_t *sizes, int32_t *channel_axis, mil_status *st);

/* The consumers of v (op uses; a block output is not a consumer). */
int32_t cw_children(const mil_var *v, mil_op **out, int32_t max);

/* ---------- weights as floats (weights.c) ---------- */

/* A weight read as float: fp16 widened exactly (is_half), fp32 as is,
 * int8 / uint8 converted. */
typedef struct cw_weight {
  float *w;
  int64_t n;
  int32_t rank;
  int64_t shape[MIL_CFG_MAX_RANK];
  mil_dtype dtype; /* the const's dtype */
  bool is_half;
} cw_weight;
/* false on out of memory or a rank above MIL_CFG_MAX_RANK. */
bool cw_weight_read(const mil_value *v, cw_weight *out);
/* The smallest and largest of x[0..n) (NaN ignored; the sign of a zero
 * extreme is either), and whether an element is NaN / +-inf (either out
 * pointer may be NULL). Eight lanes, vectorizable. */
void cw_scan_range(const float *x, int64_t n, float *lo, float *hi, bool *nan, bool *inf);
/* The smallest and largest element of w (NaN ignored; the sign of a zero
 * extreme is either); true when an element is +inf or -inf (coremltools'
 * linear quantization skips such a weight). */
bool cw_weight_range(const cw_weight *w, float *lo, float *hi);
void cw_weight_free(cw_weight *w);
/* Rounds to the nearest half and back (numpy's fp16 result of one op). */
float cw_h(float x);
/* x rounded to the weight's precision (cw_h for half weights). */
static inline float cw_r(const cw_weight *w, float x) { return w->is_half ? cw_h(x) : x; }
/* A float tensor value of dtype dt (fp16 / fp32) from floats. */
mil_value *cw_float_value(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                          const float *x);
/* An integer tensor value of dtype dt from int32 elements (sub-byte packed). */
mil_value *cw_int_value(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                        const int32_t *x);

/* Replaces every use of op's output after op by new_var and removes op
 * (replace_uses_of_var_after_op + remove_ops). */
int cw_replace(cw_pass *c, mil_op *op, mil_var *new_var);
/* fake_compression: replaces op by a const "<op name><suffix>" holding x
 * (w's shape, w's dtype). 1, or -(status). */
int cw_replace_with_const(cw_pass *c, mil_op *op, const char *suffix, const cw_weight *w, const float *x);
/* Advances the row-major multi-index idx over shape (rank axes). */
static inline void cw_next_index(int64_t *idx, const int64_t *shape, int32_t rank) {
  for (int32_t a = rank - 1; a >= 0; a--) {
    if (++idx[a] < shape[a]) return;
    idx[a] = 0;
  }
}

/* A whole compression pass: options read (cw_pass_init), every selected
 * const transformed by fn (cw_pass_run), freed. */
mil_status cw_pass_main(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d,
                        const char *pass, mil_cfg_type default_type, int n_types, const mil_cfg_type *types,
                        bool (*valid)(cw_pass *, const mil_op *), cw_transform_fn fn);

/* ---------- joint compression (joint.c) ---------- */

/* _get_weight_to_compress_size: with joint compression, the element count
 * at the end of the chain of constexpr consumers; else op's own. */
int64_t cw_weight_size(const cw_pass *c, const mil_op *op);
/* The only consumer of op's output when it is one op, else NULL. */
mil_op *cw_only_child(const mil_op *op);
/* The elements of src (any numeric dtype, sub-byte too) where mask (same
 * element count) is non-zero, as a rank-1 value of src's dtype. */
mil_value *cw_masked(mil_program *p, const mil_value *src, const mil_value *mask);
/* w (the nonzero data of a sparse weight) spread over mask's shape (zeros
 * elsewhere): sparse_to_dense. Replaces w's array and shape. false on out
 * of memory or a count mismatch. */
bool cw_weight_densify(cw_weight *w, const mil_value *mask);

/* ---------- arithmetic ---------- */

/* compute_qparams_by_dtype: quantizes w with one scale (and zero point) per
 * block (block_sizes: 0 = whole axis). q gets n int32 values; scale /
 * zero_point get one value per block in scale_shape (rank of w; the
 * number of blocks per axis). has_zp false when coremltools has no zero
 * point (symmetric, signed). false when a block size does not divide its
 * axis (coremltools skips the weight). quantize.c */
typedef struct cw_qparams {
  int32_t *q;
  float *scale;
  int32_t *zp; /* NULL when None */
  int64_t n_scale;
  int64_t scale_shape[MIL_CFG_MAX_RANK];
} cw_qparams;
bool cw_quantize(const cw_weight *w, mil_dtype dt, mil_cmode mode, const int64_t *block_sizes, cw_qparams *out,
                 bool *oom);
void cw_qparams_free(cw_qparams *q);

/* Pruning (prune.c). Each writes the pruned weight (w's elements with the
 * pruned ones set to 0) to val (w->n floats) and returns 1, or 0 when
 * coremltools skips the weight (sparsity below minimum_sparsity_percentile,
 * block_size / m more than half the channels, rank outside 2..5), or -1 on
 * out of memory. */
int cw_prune_threshold(const cw_weight *w, const mil_op_compress_config *cfg, float *val);
int cw_prune_magnitude(const cw_weight *w, const mil_op_compress_config *cfg, float *val);
int cw_prune_n_m(const cw_weight *w, const mil_op_compress_config *cfg, float *val);

/* Magnitude pruning streamed over an fp32 / fp16 weight's bytes (prune.c),
 * the same result as cw_prune_magnitude without a block size, without a
 * dense copy: an element is kept (its mask bit set, its bits in the
 * nonzero data) when its magnitude key (bit pattern without the sign) is
 * above `key`; nnz of them are. */
typedef struct cw_sparse_cut {
  uint32_t key;
  int64_t nnz;
  bool nan; /* an fp16 weight has NaN elements (they are rewritten through fp32) */
} cw_sparse_cut;
/* The cut for target sparsity q (percent) of the n elements at raw (dtype
 * dt): np.percentile of the magnitudes found by a radix select on the
 * keys (two reading passes for fp32, one for fp16, 768 KB of counts).
 * 1 done, 0 not handled here (q >= 100, other dtypes: use
 * cw_prune_magnitude), -1 out of memory. */
int cw_prune_magnitude_cut(const void *raw, mil_dtype dt, int64_t n, double q, cw_sparse_cut *cut);
/* One pass: the packed mask (LSB first, (n + 7) / 8 bytes, every byte
 * written) and the cut->nnz kept elements, in order, to nz. */
void cw_sparse_split(const void *raw, mil_dtype dt, int64_t n, const cw_sparse_cut *cut, uint8_t *mask, void *nz);
/* The packed mask alone (for a nonzero data gathered later, see
 * mil_value_new_deferred_masked). */
void cw_sparse_mask(const void *raw, mil_dtype dt, int64_t n, const cw_sparse_cut *cut, uint8_t *mask);

/* Palettization (palettize.c): LUTs per group of group_size channels along
 * ch_axis (0 = one group), of 2^nbits entries of cluster_dim values, and
 * an index per element (per vector of cluster_dim along ch_axis). */
typedef struct cw_lut {
  int nbits;
  int64_t groups;
  int cd;
  float *lut;   /* groups x 2^nbits x cd, at the weight's precision */
  uint8_t *idx; /* n / cd indices in the weight's layout, ch_axis divided by cd */
  int32_t idx_rank, lut_rank;
  int64_t idx_shape[MIL_CFG_MAX_RANK];
  int64_t lut_shape[MIL_CFG_MAX_RANK + 2]; /* iOS18 lut shape: [1.., groups at ch_axis, .., 2^nbits, cd] */
  int32_t vector_axis;
} cw_lut;
/* 1 done, 0 skipped as coremltools skips (group size does not divide the
 * channels, more than 256 unique values, ...), -1 out of memory. */
int cw_palettize(const cw_weight *w, const mil_op_compress_config *cfg, int32_t ch_axis, int64_t group_size,
                 cw_lut *out);
void cw_lut_free(cw_lut *l);
/* Optimal 1-D k-means of n sorted distinct values x with weights wt into
 * k clusters (kmeans1d.c); cluster ids ascending with the values. */
bool cw_kmeans1d(const double *x, const double *wt, size_t n, size_t k, uint32_t *clusters, double *centroids);
/* scikit-learn's KMeans(k, k-means++, tol=1e-2, n_init=1, random_state=0)
 * on n points of d floats (kmeans.c). false on out of memory or n < k. */
bool cw_kmeans_sklearn(const float *pts, int64_t n, int d, int k, float *centers_out, int32_t *labels);

#endif

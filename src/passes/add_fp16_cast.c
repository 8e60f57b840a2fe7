/* common::add_fp16_cast — run fp32 ops in fp16: every fp32 input of an op
 * is cast to fp16, the op is rebuilt on the casts as "<op>_cast_fp16", and
 * each output that became fp16 is cast back to fp32 (cast_optimization
 * later removes the back-and-forth pairs between neighbouring ops).
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %c: (fp32)*(Scalar) = const(val=2.0, name="c")
 *       %d: (10, 20, fp32)(Tensor) = real_div(x=%x, y=%c, name="d")
 *     } -> (%d)
 *   }
 *
 * becomes
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %c: (fp32)*(Scalar) = const(val=2.0, name="c")
 *       %x_to_fp16_dtype_0: (string)*(Scalar) = const(val="fp16", name="x_to_fp16_dtype_0")
 *       %x_to_fp16: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%x_to_fp16_dtype_0, name="x_to_fp16")
 *       %c_to_fp16_dtype_0: (string)*(Scalar) = const(val="fp16", name="c_to_fp16_dtype_0")
 *       %c_to_fp16: (fp16)*(Scalar) = cast(x=%c, dtype=%c_to_fp16_dtype_0, name="c_to_fp16")
 *       %d_cast_fp16: (10, 20, fp16)(Tensor) = real_div(x=%x_to_fp16, y=%c_to_fp16, name="d_cast_fp16")
 *       %d_cast_fp16_to_fp32_dtype_0: (string)*(Scalar) = const(val="fp32", name="d_cast_fp16_to_fp32_dtype_0")
 *       %d: (10, 20, fp32)(Tensor) = cast(x=%d_cast_fp16, dtype=%d_cast_fp16_to_fp32_dtype_0, name="d_cast_fp16_to_fp32")
 *     } -> (%d)
 *   }
 *
 * Left alone: cast, while_loop, cond, the list ops, read_state,
 * coreml_update_state; ops with an fp32 const input holding a finite value
 * beyond fp16's range (|v| > 65504 and < 1e38; larger ones count as
 * infinities); inputs whose type domain has no fp16; from iOS17 on, the
 * alpha/beta of the activations that take them in fp32 and the epsilon of
 * inverse, log and rsqrt. A var read by several ops gets one cast per
 * block. A cast of a known value saturates finite values that overflow to
 * +-65504 and, for fewer than 400 elements, nudges non-zero values that
 * underflow to 0 to the smallest fp16 subnormal of their sign.
 *
 * Options: op_selector (C API: only ops it accepts are cast) or
 * skip_ops_by_type (op types left in fp32, "mul,const"); not both.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/quantization.py
 * (add_fp16_cast, FP16ComputePrecision, CastTypeQuantization).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "passes/cast_quantization_internal.h"

#define PASS "add_fp16_cast"

static bool in_list(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

static const char *const k_unsupported[] = {"cast",       "while_loop",  "cond",      "make_list",
                                            "list_gather", "list_scatter", "list_read", "list_write",
                                            "list_length", "read_state",   "coreml_update_state", NULL};
static const char *const k_alpha_ops[] = {"elu", "leaky_relu", "prelu", "thresholded_relu", NULL};
static const char *const k_alpha_beta_ops[] = {"clamped_relu", "linear_activation", "scaled_tanh", "sigmoid_hard",
                                               "softplus_parametric", NULL};
static const char *const k_epsilon_ops[] = {"inverse", "log", "rsqrt", NULL};

/* The bit patterns of float32(65504) and float32(1e38). */
#define F32_BITS_65504 0x477fe000u
#define F32_BITS_1E38 0x7e967699u

/* What the fp16 cast of an fp32 weight needs to know of its magnitudes,
 * read off the bit patterns (with the sign cleared, |v| orders like its
 * bits; infinities and NaN lie above every finite value):
 *   below: the largest |v| under float32(1e38), which coremltools' overflow
 *          check compares with 65504 (larger ones count as infinities);
 *   huge:  some finite |v| >= 65520, which the cast rounds to infinity. */
typedef struct mag {
  uint32_t below;
  bool huge;
} mag;

#define F32_BITS_65520 0x477ff000u
#define F32_BITS_INF 0x7f800000u

static mag scan_serial(const uint32_t *u, size_t n) {
  uint32_t below = 0, huge = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t a = u[i] & 0x7fffffffu;
    if (a < F32_BITS_1E38 && a > below) below = a;
    huge |= (a - F32_BITS_65520) < (F32_BITS_INF - F32_BITS_65520);
  }
  return (mag){below, huge != 0};
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* Eight elements a step; the magnitudes are below 2^31, so signed
 * comparisons order them. */
__attribute__((target("avx2"))) static mag scan_avx2(const uint32_t *u, size_t n) {
  const __m256i abs = _mm256_set1_epi32(0x7fffffff), lim = _mm256_set1_epi32((int)F32_BITS_1E38),
                lo = _mm256_set1_epi32((int)F32_BITS_65520 - 1), inf = _mm256_set1_epi32((int)F32_BITS_INF);
  __m256i below = _mm256_setzero_si256(), huge = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(u + i)), abs);
    below = _mm256_max_epi32(below, _mm256_and_si256(a, _mm256_cmpgt_epi32(lim, a)));
    huge = _mm256_or_si256(huge, _mm256_and_si256(_mm256_cmpgt_epi32(a, lo), _mm256_cmpgt_epi32(inf, a)));
  }
  uint32_t b[8];
  _mm256_storeu_si256((__m256i *)(void *)b, below);
  mag m = scan_serial(u + i, n - i);
  for (int k = 0; k < 8; k++) m.below = b[k] > m.below ? b[k] : m.below;
  m.huge |= !_mm256_testz_si256(huge, huge);
  return m;
}

static mag scan_range(const uint32_t *u, size_t n) {
  static int avx2 = -1;
  if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  return avx2 ? scan_avx2(u, n) : scan_serial(u, n);
}
#else
static mag scan_range(const uint32_t *u, size_t n) { return scan_serial(u, n); }
#endif

typedef struct scan_job {
  const uint32_t *u;
  size_t n;
  mag m;
} scan_job;

static void *scan_job_run(void *arg) {
  scan_job *j = arg;
  j->m = scan_range(j->u, j->n);
  return NULL;
}

/* Elements per piece: 32 MiB of fp32, read by two threads (reading a
 * weight is bound by page faults and memory, which two cores share out),
 * then given back to the file. */
#define SCAN_PIECE ((size_t)8 << 20)
#define SCAN_SPLIT_MIN ((size_t)1 << 20)

/* A deferred weight (a cast, a transpose, a fused conv weight's scaling),
 * read in pieces that stay in the L2 cache (never computed whole, no
 * buffer to allocate and fault in per weight). */
static mag scan_deferred(const mil_value *w) {
  enum { N = 1 << 14 };
  uint32_t buf[N];
  mag m = {0, false};
  size_t n = (size_t)w->numel;
  for (size_t at = 0; at < n; at += N) {
    size_t len = n - at < N ? n - at : N;
    if (!mil_value_read(w, at * 4, len * 4, buf)) break;
    mag a = scan_range(buf, len);
    if (a.below > m.below) m.below = a.below;
    m.huge |= a.huge;
  }
  return m;
}

static mag scan_weight(const mil_program *p, const mil_value *w) {
  if (mil_value_is_deferred(w)) return scan_deferred(w);
  const uint32_t *u = mil_value_data(w);
  size_t n = (size_t)w->numel;
  mag m = {0, false};
  if (!u) return m;
  for (size_t at = 0; at < n; at += SCAN_PIECE) {
    size_t len = n - at < SCAN_PIECE ? n - at : SCAN_PIECE, lo = len / 2;
    scan_job upper = {u + at + lo, len - lo, {0, false}};
    pthread_t th;
    bool threaded = len >= SCAN_SPLIT_MIN && pthread_create(&th, NULL, scan_job_run, &upper) == 0;
    mag a = scan_range(u + at, threaded ? lo : len);
    if (threaded) {
      pthread_join(th, NULL);
      if (upper.m.below > a.below) a.below = upper.m.below;
      a.huge |= upper.m.huge;
    }
    if (a.below > m.below) m.below = a.below;
    m.huge |= a.huge;
    mil_program_release_value_pages(p, w, at * 4, len * 4);
  }
  return m;
}

/* The scans of one run, by weight: the overflow check and the cast of the
 * same weight read it once. Open addressing on the value's address, sized
 * for the program's consts (at most half full; past that, weights are
 * scanned without being remembered). */
static _Thread_local struct {
  const mil_value **key;
  mag *val;
  size_t cap, n;
} g_mags;

static void mags_begin(const mil_program *p) {
  size_t want = 2 * (size_t)mil_program_count_op_type(p, "const") + 64, cap = 64;
  while (cap < want) cap *= 2;
  g_mags.key = calloc(cap, sizeof *g_mags.key);
  g_mags.val = malloc(cap * sizeof *g_mags.val);
  g_mags.cap = g_mags.key && g_mags.val ? cap : 0;
  g_mags.n = 0;
}

static void mags_end(void) {
  free(g_mags.key);
  free(g_mags.val);
  memset(&g_mags, 0, sizeof g_mags);
}

static mag weight_mag(const mil_program *p, const mil_value *w) {
  /* a transposed weight not computed yet: its source has the same elements */
  if (mil_value_deferred_is_permutation(w)) w = mil_value_deferred_source(w);
  /* a weight rounded through fp16 (cast down and back up): when every
   * finite element of its source lies within fp16's range, so do its own,
   * which is all the checks ask */
  if (mil_value_deferred_is_fp16_rounding(w)) {
    mag s = weight_mag(p, mil_value_deferred_source(w));
    if (s.below <= F32_BITS_65504 && !s.huge) return s;
  }
  if (!g_mags.cap) return scan_weight(p, w);
  size_t s = (size_t)(((uintptr_t)w >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (g_mags.cap - 1);
  for (; g_mags.key[s]; s = (s + 1) & (g_mags.cap - 1))
    if (g_mags.key[s] == w) return g_mags.val[s];
  mag m = scan_weight(p, w);
  if ((g_mags.n + 1) * 2 <= g_mags.cap) {
    g_mags.key[s] = w;
    g_mags.val[s] = m;
    g_mags.n++;
  }
  return m;
}

/* Up front, the weights of the program's fp32 consts of PRESCAN_MIN bytes
 * and more are scanned on two threads (each taking a contiguous half, by
 * bytes, of them in program order), filling the table before the walk
 * asks: a model of many mid-sized weights would otherwise read them one
 * at a time on one thread. The results are the same scans' (only when
 * and where they run differ). */
#define PRESCAN_MIN ((size_t)16 << 10)
#define PRESCAN_TOTAL_MIN ((uint64_t)8 << 20)

typedef struct prescan {
  const mil_value **w;
  size_t *slot;
  size_t n, cap;
  uint64_t bytes;
} prescan;

static int collect_weight(mil_op *op, void *ud) {
  prescan *ps = ud;
  if (op->n_outputs != 1 || strcmp(op->type, "const") != 0) return 0;
  const mil_value *w = op->outputs[0]->val;
  if (!w || w->kind != MIL_VAL_TENSOR || !w->type || w->type->dtype != MIL_DT_FP32) return 0;
  if (mil_value_deferred_is_permutation(w)) w = mil_value_deferred_source(w);
  /* a deferred fp32 weight left is a fused conv weight's scaling (scanned
   * in pieces, never computed whole); an fp16 rounding goes by its source
   * in weight_mag */
  bool deferred = mil_value_is_deferred(w);
  if (w->nbytes < PRESCAN_MIN || (deferred ? mil_value_deferred_is_fp16_rounding(w) : !mil_value_data(w))) return 0;
  if ((g_mags.n + 1) * 2 > g_mags.cap) return 0;
  size_t s = (size_t)(((uintptr_t)w >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (g_mags.cap - 1);
  for (; g_mags.key[s]; s = (s + 1) & (g_mags.cap - 1))
    if (g_mags.key[s] == w) return 0;
  if (ps->n == ps->cap) {
    size_t nc = ps->cap ? ps->cap * 2 : 256;
    const mil_value **nw = realloc(ps->w, nc * sizeof *nw);
    if (nw) ps->w = nw;
    size_t *ns = nw ? realloc(ps->slot, nc * sizeof *ns) : NULL;
    if (ns) ps->slot = ns;
    if (!nw || !ns) return 0; /* left to the walk */
    ps->cap = nc;
  }
  g_mags.key[s] = w;
  g_mags.n++;
  ps->w[ps->n] = w;
  ps->slot[ps->n++] = s;
  ps->bytes += w->nbytes;
  return 0;
}

typedef struct prescan_job {
  const prescan *ps;
  size_t from, to;
  mag *val;
  bool keep; /* mil_program_keeps_weight_pages */
} prescan_job;

static void *prescan_run(void *arg) {
  prescan_job *j = arg;
  for (size_t i = j->from; i < j->to; i++) {
    const mil_value *w = j->ps->w[i];
    if (mil_value_is_deferred(w)) { /* its reads give the source's pages back (deferred.c) */
      j->val[j->ps->slot[i]] = scan_deferred(w);
      continue;
    }
    j->val[j->ps->slot[i]] = scan_range(mil_value_data(w), (size_t)w->numel);
    if (!j->keep) mil_value_release_range(w, 0, w->nbytes); /* read: a weight-file mapping's pages go back */
  }
  return NULL;
}

static void mags_prescan(mil_program *p) {
  prescan ps = {0};
  if (!g_mags.cap) return;
  uint32_t zero = 0;
  (void)scan_range(&zero, 1); /* settles the kernel choice before the threads run */
  mil_program_walk(p, collect_weight, &ps);
  size_t half = 0;
  for (uint64_t acc = 0; half < ps.n && acc < ps.bytes / 2; half++) acc += ps.w[half]->nbytes;
  bool keep = mil_program_keeps_weight_pages(p);
  prescan_job lo = {&ps, 0, half, g_mags.val, keep}, hi = {&ps, half, ps.n, g_mags.val, keep};
  pthread_t th;
  bool threaded = ps.bytes >= PRESCAN_TOTAL_MIN && pthread_create(&th, NULL, prescan_run, &hi) == 0;
  prescan_run(&lo);
  if (threaded) pthread_join(th, NULL);
  else prescan_run(&hi);
  mil_program_release_mappings(p); /* and the neighbouring pages the reads mapped */
  free(ps.w);
  free(ps.slot);
}

/* coremltools' fp16_overflow: an fp32 const input holds a finite value
 * (|v| < 1e38) beyond fp16's largest. numpy compares the float32 array
 * with float32(1e38) and 65504. */
static bool fp16_overflow(const mil_op *op) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      if (!v || !v->val || !pass_castq_is_of(v, MIL_DT_FP32) || !pass_var_is_const(v)) continue;
      if (v->val->kind != MIL_VAL_TENSOR || !v->val->type || v->val->type->dtype != MIL_DT_FP32) continue;
      if (weight_mag(op->program, v->val).below > F32_BITS_65504) return true;
    }
  return false;
}

static bool type_ok(const char *type) { return !in_list(type, k_unsupported); }

static bool is_valid_op(const pass_castq *q, const mil_op *op) { return !fp16_overflow(op); }

static const char *should_cast(const pass_castq *q, pass_castq_state *r, const mil_op *op, const mil_input *param) {
  if (!pass_castq_dtype_allowed(r, op, param->name, q->target)) return NULL;
  if (pass_op_opset(op) >= MIL_IOS17) {
    const char *n = param->name;
    if (strcmp(n, "alpha") == 0 && (in_list(op->type, k_alpha_ops) || in_list(op->type, k_alpha_beta_ops)))
      return NULL;
    if (strcmp(n, "beta") == 0 && in_list(op->type, k_alpha_beta_ops)) return NULL;
    if (strcmp(n, "epsilon") == 0 && in_list(op->type, k_epsilon_ops)) return NULL;
  }
  return q->target;
}

/* Smallest fp16 subnormal 2^-24 and smallest fp32 subnormal 2^-149. */
#define FP16_TINY 5.9604644775390625e-08
#define FP32_TINY 1.401298464324817e-45

/* coremltools' _check_overflow_to_inf then _check_underflow_to_zero on the
 * value of a new cast. */
static bool fix_value(const pass_castq *q, mil_program *p, mil_var *x, const mil_var *src) {
  const mil_value *nv = x->val, *ov = src->val;
  if (!nv || !ov || nv->kind != MIL_VAL_TENSOR || ov->kind != MIL_VAL_TENSOR || nv->numel != ov->numel) return true;
  if (!nv->type || nv->type->dtype != MIL_DT_FP16) return true;
  int64_t n = nv->numel;
  bool overflow = false, tiny = false;
  if (ov->type && ov->type->dtype == MIL_DT_FP32) {
    /* the usual case, from the source's bits alone (the result of a weight
     * may not be computed yet): a finite value overflows to infinity from
     * |v| >= 65520 on (round to nearest even) */
    overflow = weight_mag(p, ov).huge;
    /* results with |v| <= 2^-24 only matter for small values */
    if (n < 400) {
      const uint16_t *h = mil_value_data(nv);
      for (int64_t i = 0; h && i < n && !tiny; i++) tiny = (h[i] & 0x7fffu) <= 1u;
    }
  } else
    for (int64_t i = 0; i < n; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
      if (isfinite(o) && isinf(v)) overflow = true;
      if (fabs(v) <= FP16_TINY) tiny = true;
    }
  bool underflow = false;
  if (n < 400 && tiny)
    for (int64_t i = 0; i < n && !underflow; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
      underflow = !(fabs(o) <= FP32_TINY) && fabs(v) <= FP16_TINY;
    }
  if (!overflow && !underflow) return true;
  mil_value *out = pass_bld_astype(p, nv, MIL_DT_FP16);
  if (!out) return false;
  for (int64_t i = 0; i < n; i++) {
    double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
    if (isfinite(o) && isinf(v)) v = o > 0 ? 65504.0 : (o < 0 ? -65504.0 : v);
    mil_value_set_f64(out, i, v);
  }
  if (n < 400 && tiny)
    for (int64_t i = 0; i < n; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(out, i);
      if (!(fabs(o) <= FP32_TINY) && fabs(v) <= FP16_TINY) mil_value_set_f64(out, i, o > 0 ? FP16_TINY : -FP16_TINY);
    }
  mil_var_set_value(x, out);
  return true;
}

static const pass_castq k_fp16 = {PASS, "fp32", "fp16", MIL_DT_FP32, type_ok, is_valid_op, should_cast, fix_value};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mags_begin(p);
  mags_prescan(p);
  mil_status st = pass_castq_run(&k_fp16, p, o, true, stats, d);
  mags_end();
  return st;
}

static const mil_pass_option_def k_options[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only ops it accepts are cast (C API only)"},
    {"skip_ops_by_type", MIL_POPT_STRING_LIST, "", false, false, 0, 0,
     "op types left in fp32 (comma-separated, e.g. \"mul,const\")"},
};

const mil_pass_def pass_def_add_fp16_cast = {"common::" PASS,
                                             "run fp32 ops in fp16: cast fp32 inputs to fp16 and results back",
                                             k_options, 2, run, NULL};

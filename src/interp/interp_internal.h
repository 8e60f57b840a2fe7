/* Internal table of contents of the reference interpreter (src/interp).
 *
 *   interp.c          public API (mil/interp.h): inputs, outputs, states
 *   exec.c            the executor: per-run program copy, op dispatch
 *                     (kernel, else the registry's value inference), blocks
 *   util.c            value helpers: fp32 views, output values, errors
 *   cache.c           caches kept across runs (fp32 copies of fp16 consts,
 *                     decompressed constexpr weights)
 *   kernels.c         the kernel table (interp_kernel_find, families.def)
 *   vmath.c           vectorized exp / sigmoid / silu (vmath.h)
 *   threads.c         intra-op thread count (interp_threads), interp_parallel
 *   fuse.c            the plan of convs that apply their activation
 *   conv_act.c        the activation such a conv applies to its output
 *   bufpool.c         memory an interpreter keeps between runs: freed
 *                     blocks of its run copies, kernels' work buffers
 *   bufplan.c         the memory plan of its large blocks (one arena)
 *   <family>.c        kernels, one file per op family: linear.c, conv.c,
 *                     pool.c, normalization.c, activation.c, elementwise.c
 *                     (+ elementwise_internal.h), tensor.c, gather.c,
 *                     detection.c, image.c, control_flow.c, list.c, state.c,
 *                     random.c, recurrent.c, constexpr.c, image_sample.c,
 *                     classify.c, complex.c
 *
 * A kernel receives the op's inference context (ops/ops_internal.h): its
 * inputs are the vars' runtime values (var->val, read with op_val and
 * friends), c->out[i] holds the output types that type inference computed
 * from the concrete input types (unless the kernel is INTERP_K_SELF), and
 * the kernel stores output values in c->val[i]. A kernel may return
 * INTERP_DECLINE to let the op's value inference compute the outputs (fast
 * paths handle the common dtypes and leave the rest to the fold). */
#ifndef MIL_INTERP_INTERNAL_H
#define MIL_INTERP_INTERNAL_H

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mil/interp.h"
#include "ops/ops_internal.h"

#define INTERP_HIDDEN OP_HIDDEN

/* Returned by a kernel that leaves the op to value inference. */
#define INTERP_DECLINE ((mil_status)1000)

/* Deepest nesting of blocks executed: the function body and
 * MIL_MAX_BLOCK_DEPTH levels of cond / while_loop blocks in it. */
#define INTERP_MAX_DEPTH (MIL_MAX_BLOCK_DEPTH + 1)

typedef struct interp_state_slot {
  const char *name; /* state input name (in the shared program copy) */
  const mil_type *elem; /* the wrapped tensor type (in the shared program copy) */
  mil_dtype dtype;
  int32_t rank;
  int64_t shape[MIL_INTERP_MAX_RANK];
  mil_tensor t;     /* t.shape -> shape, t.data -> malloc'ed buffer */
  void *buf;
} interp_state_slot;

struct mil_interp_state {
  const void *family; /* the interp_shared of the interpreters it serves (holds a reference) */
  int32_t n;
  interp_state_slot *slots;
};

typedef struct interp_cache interp_cache;
typedef struct interp_profile interp_profile;
typedef struct interp_plan interp_plan;
typedef struct interp_bufpool interp_bufpool;

/* An activation a conv applies to its output (fuse.c). */
enum {
  INTERP_FUSE_NONE = 0,
  INTERP_FUSE_RELU = 1,
  INTERP_FUSE_CLIP = 2,
  INTERP_FUSE_SILU = 3,
  INTERP_FUSE_HSWISH = 4,
  INTERP_FUSE_ADD = 5 /* a residual add of another value of the conv's output type, then `post` */
};
typedef struct interp_fuse_ent {
  int32_t kind;     /* INTERP_FUSE_*; SILU / HSWISH: x * sigmoid(x) / x * sigmoid_hard(x) as a gate op and a mul */
  int32_t post;     /* ADD: INTERP_FUSE_NONE, _RELU or _CLIP (lo, hi) applied to the sum by the op reading it */
  int32_t partner;  /* index in the body of the other op of the pair (the conv's entry: the activation's / the add's) */
  int32_t partner2; /* the conv's entry of SILU: the sigmoid's index; of ADD: post's op, or -1; else -1 */
  bool is_conv;     /* this entry is the conv's (else an activation op's) */
  bool fp16;        /* the conv's output is fp16 (SILU then rounds as the separate ops do) */
  bool take_y;      /* an add's entry: the conv's output is its y (the op takes y's value, else x's) */
  float lo, hi;     /* CLIP: min(max(x, lo), hi); HSWISH: the gate's alpha and beta */
} interp_fuse_ent;
typedef struct interp_fuse_plan interp_fuse_plan;

/* One run: the private copy of the program and what the kernels need. */
typedef struct interp_run {
  mil_interp *ip;
  mil_program *prog;     /* per-run copy; every runtime value lives in its arena */
  mil_function *fn;
  int opset;             /* spec version of the function */
  mil_diag *d;
  mil_interp_state *state;
  uint64_t seed;
  int64_t iters_left;    /* while_loop iterations still allowed */
  int64_t ip_max_iters;  /* the limit iters_left started from */
  int64_t max_value_bytes; /* the largest value the run materializes (mil_interp_set_max_value_bytes) */
  int depth;             /* current block nesting */
  interp_cache *cache;   /* the interpreter's caches (cache.c), may be NULL */
  interp_bufpool *pool;  /* the interpreter's own memory (bufpool.c), may be NULL */
  const interp_fuse_ent *fuse; /* while a conv of the body runs: the activation it may apply, else NULL */
  bool fused;            /* set by that conv when it applied r->fuse to its output */
  const mil_value *fuse_skip; /* r->fuse of kind ADD: the add's other operand (the conv's output type) */
  int nhwc;              /* while a conv of the body runs: its INTERP_NHWC_* flags (fuse.c), else 0 */
  interp_profile *prof;  /* per-op times (profile.c) when profiling, else NULL */
  mil_interp_observer observer; /* mil_interp_set_observer, or NULL */
  void *observer_ud;
  struct interp_tmp *scratch; /* the ops' scratch buffers, newest first (interp_scratch_f32) */
} interp_run;

typedef mil_status (*interp_kernel_fn)(interp_run *r, mil_infer_ctx *c);

enum {
  /* The kernel computes its own output types (type inference is not run
   * first): control flow, lists, states, constexpr. */
  INTERP_K_SELF = 1u << 0,
};

typedef struct interp_kernel {
  const char *type;
  interp_kernel_fn fn;
  uint32_t flags;
} interp_kernel;

/* Family tables: const interp_kernel interp_kernels_<fam>[]; + _count. */
#define INTERP_FAMILY_DECL(fam)                                  \
  extern const interp_kernel interp_kernels_##fam[];             \
  extern const size_t interp_kernels_##fam##_count;
#define INTERP_FAMILY_COUNT(fam) \
  const size_t interp_kernels_##fam##_count = sizeof interp_kernels_##fam / sizeof interp_kernels_##fam[0]

/* ---- kernels.c ---- */
/* The kernel for op type `type`, or NULL. */
INTERP_HIDDEN const interp_kernel *interp_kernel_find(const char *type);

/* ---- exec.c ---- */
/* Executes the ops of block b in order (values bound to b's inputs
 * already). Nested blocks recurse, bounded by INTERP_MAX_DEPTH. */
INTERP_HIDDEN mil_status interp_exec_block(interp_run *r, mil_block *b);
/* Binds a runtime value to a var (val, and type: the value's concrete type). */
INTERP_HIDDEN void interp_bind(mil_var *v, const mil_value *val);

/* ---- cache.c ---- */
INTERP_HIDDEN interp_cache *interp_cache_new(void);
INTERP_HIDDEN void interp_cache_free(interp_cache *c);
/* Records that the bytes at ptr stay allocated and unchanged for the
 * interpreter's lifetime (its const data). */
INTERP_HIDDEN void interp_cache_mark_stable(interp_cache *c, const void *ptr);
/* fp32 copy of a stable float value (converted once, owned by the cache),
 * or NULL when v's bytes are not stable or small. */
INTERP_HIDDEN const float *interp_cache_f32(interp_cache *c, const mil_value *v);
/* A view in p of the cached decompressed value of var `name`, or NULL. */
INTERP_HIDDEN mil_value *interp_cache_get_value(interp_cache *c, mil_program *p, const char *name);
/* Copies v into the cache under `name` (its bytes become stable). */
INTERP_HIDDEN void interp_cache_put_value(interp_cache *c, const char *name, const mil_value *v);
/* True when ptr is the start of a stable buffer (unchanged while the
 * interpreter family lives). */
INTERP_HIDDEN bool interp_cache_is_stable(interp_cache *c, const void *ptr);
/* A kernel's cached object (a compiled primitive) under the key bytes, or
 * NULL. Objects are shared by the family's threads: read-only after put. */
INTERP_HIDDEN void *interp_cache_get_obj(interp_cache *c, const void *key, size_t keylen);
/* Stores obj (freed with free_fn when the cache is) under key and returns
 * the object now cached for it: obj, or the one another thread put first
 * (obj then freed), or NULL when obj could not be stored (the caller still
 * owns it; so also with c NULL). */
INTERP_HIDDEN void *interp_cache_put_obj(interp_cache *c, const void *key, size_t keylen, void *obj,
                                         void (*free_fn)(void *));
/* ---- fuse.c ---- */
/* The fusion plan of the function body (made once per interpreter family
 * and cached), or NULL: no cache, MIL_INTERP_NO_FUSE set, an observer
 * set, or out of memory. */
INTERP_HIDDEN const interp_fuse_plan *interp_fuse_plan_get(interp_run *r, const mil_block *body);
/* The entry of op number `index` of the body, or NULL when it is in no pair. */
INTERP_HIDDEN const interp_fuse_ent *interp_fuse_at(const interp_fuse_plan *fp, int32_t index);
INTERP_HIDDEN int32_t interp_fuse_n_ops(const interp_fuse_plan *fp);
/* The layout flags of op number `index` (a conv of a chain, fuse.c):
 * INTERP_NHWC_IN (its x arrives in NHWC order) and INTERP_NHWC_OUT (it
 * writes its result in NHWC order); 0 for every other op or without a plan. */
#define INTERP_NHWC_IN 1
#define INTERP_NHWC_OUT 2
INTERP_HIDDEN int interp_fuse_nhwc(const interp_fuse_plan *fp, int32_t index);

/* ---- bufpool.c ---- */
/* Memory of one interpreter (not shared with its forks: used by one thread
 * at a time). NULL when out of memory. */
INTERP_HIDDEN interp_bufpool *interp_bufpool_new(void);
INTERP_HIDDEN void interp_bufpool_free(interp_bufpool *p);
/* The allocator for a run's program copy: blocks the copy frees wait in
 * the pool for a request of their size (bounded; the oldest are given
 * back). Lives as long as p. */
INTERP_HIDDEN const mil_allocator *interp_bufpool_allocator(interp_bufpool *p);
/* A run of the interpreter starts (before its program copy is made) and
 * ends (after the copy is freed): the memory plan of its large blocks
 * follows and records them (bufplan.c). */
INTERP_HIDDEN void interp_bufpool_run_begin(interp_bufpool *p);
INTERP_HIDDEN void interp_bufpool_run_end(interp_bufpool *p);
/* Work buffer number `slot` (0..5) of at least n bytes, 64-byte aligned,
 * contents unspecified; kept by p (grown when needed) until the next
 * request of the same slot. NULL when p is NULL or out of memory. */
INTERP_HIDDEN void *interp_bufpool_work(interp_bufpool *p, int slot, size_t n);
/* The object kept under key by p (this interpreter's alone), or NULL
 * (none, or p NULL). */
INTERP_HIDDEN void *interp_bufpool_obj(interp_bufpool *p, const void *key);
/* Keeps obj under key until p is freed (then free_fn(obj)). False when p
 * or key is NULL, key already has an object, or out of memory: the caller
 * still owns obj. */
INTERP_HIDDEN bool interp_bufpool_put_obj(interp_bufpool *p, const void *key, void *obj, void (*free_fn)(void *));

/* ---- bufplan.c ---- */
/* The memory plan of an interpreter's blocks (see bufplan.c). Blocks
 * outside its arena come from sys.get (n bytes, NULL when out of memory)
 * and go back through sys.put (the block and its size). */
typedef struct interp_bufplan interp_bufplan;
typedef struct interp_bufplan_sys {
  void *(*get)(void *ud, size_t n);
  void (*put)(void *ud, void *p, size_t n);
  void *ud;
} interp_bufplan_sys;
/* NULL when out of memory. free puts back every block it still holds and
 * frees the arena. */
INTERP_HIDDEN interp_bufplan *interp_bufplan_new(const interp_bufplan_sys *sys);
INTERP_HIDDEN void interp_bufplan_free(interp_bufplan *pl);
/* begin / end bracket a run (end makes the next run's plan from this
 * run's trace when every block came back). */
INTERP_HIDDEN void interp_bufplan_begin(interp_bufplan *pl);
INTERP_HIDDEN void interp_bufplan_end(interp_bufplan *pl);
/* A block of n bytes: in the arena while the run follows the plan (64-byte
 * aligned), else sys.get's; NULL when out of memory. */
INTERP_HIDDEN void *interp_bufplan_alloc(interp_bufplan *pl, size_t n);
/* Takes back a block alloc gave; false (nothing done) for any other. */
INTERP_HIDDEN bool interp_bufplan_release(interp_bufplan *pl, void *p);
/* Whether a plan with its arena is there for the next run. */
INTERP_HIDDEN bool interp_bufplan_ready(const interp_bufplan *pl);

/* ---- linear_dnnl.c ---- */
/* out (M, N) = x (M, K) times the weight wv, plus bias (N) when not NULL,
 * in fp32, through a cached oneDNN matmul primitive with the weight
 * reordered once. wv (K * N elements, any float dtype) must be a stable
 * value (a const, interp_weight_stable: its bytes key the cache), laid out
 * (N, K) when w_nk, else (K, N). Returns false (out untouched or partly
 * written) when the primitive is not available or not the faster path: no
 * oneDNN, no cache, a weight that is not stable, one row (m = 1), an empty
 * size, MIL_INTERP_NO_DNNL_MATMUL set, out of memory; the caller then runs
 * interp_sgemm. */
INTERP_HIDDEN bool interp_linear_dnnl(interp_run *r, const float *x, const mil_value *wv, bool w_nk,
                                      const float *bias, float *out, int64_t m, int64_t k, int64_t n);

/* ---- conv_dnnl.c ---- */
/* 1D/2D conv through a cached oneDNN convolution primitive: out (N, Cout,
 * OH, OW) from x (N, Cin, H, W) fp32 and weight w, (Cout, Cin/groups, KH,
 * KW), a const of any float dtype (interp_weight_stable: its bytes key the
 * cache; reordered to fp32 once, when the primitive is made, and then its
 * weight-file pages given back); bias fp32 or NULL. When r->fuse is set the
 * primitive applies that activation too, and r->fused is set. Returns
 * false when the primitive is not available (no oneDNN, a weight that is
 * not a const, unsupported): the caller then runs its own loops. */
INTERP_HIDDEN bool interp_conv_dnnl(interp_run *r, const float *x, const uint16_t *xh, const mil_value *w,
                                    const float *bias, float *out, uint16_t *outh, int64_t n, int64_t cin,
                                    int64_t cout, int64_t groups, const int64_t in[3], const int64_t outsz[3],
                                    const int64_t k[3], const int64_t s[3], const int64_t d[3], const int64_t pb[3]);
/* Whether interp_conv_dnnl runs such an NCHW conv in bands of rows (a
 * large one with a spatial kernel). The banded paths are the only ones
 * that take fp16 buffers: xh (the fp16 input, x NULL) and outh (the fp16
 * output, out NULL; each band's sums rounded once, as an fp16 op's output
 * is); a conv of a chain (r->nhwc, one image) runs banded whenever it has
 * them. False without oneDNN. */
INTERP_HIDDEN bool interp_conv_dnnl_bands(int64_t n, int64_t cin, int64_t cout, const int64_t in[3],
                                          const int64_t outsz[3], const int64_t k[3]);

/* ---- util.c: ops ---- */
/* The var bound to input `name` of op (one argument), or NULL. */
INTERP_HIDDEN const mil_var *interp_input_var(const mil_op *op, const char *name);

/* ---- util.c: the CPU ---- */
/* Instruction sets the vector kernels may use (x86, with gcc or clang:
 * __builtin_cpu_supports, checked once; elsewhere none). */
enum { INTERP_CPU_AVX = 1, INTERP_CPU_AVX2_FMA = 2, INTERP_CPU_AVX512F = 4 };
/* Whether this CPU has every set of `features` (INTERP_CPU_* bits). */
INTERP_HIDDEN bool interp_cpu(int features);

/* ---- conv_act.c ---- */
/* Applies r->fuse's activation (when set) in place to the n floats of a
 * conv's fp32 output, unless post_op (oneDNN applied a relu / clip
 * already), and sets r->fused. off: where out starts in the conv's whole
 * output, in elements (a residual add, INTERP_FUSE_ADD, adds r->fuse_skip's
 * elements from there: same layout). Returns true. */
INTERP_HIDDEN bool interp_conv_act(interp_run *r, bool post_op, float *out, int64_t n, int64_t off);

/* ---- memplan.c ---- */
/* The liveness plan of block b (the function body): which vars die after
 * each op. NULL when out of memory (then nothing is freed early). Uses
 * var->aux of b's vars while the run lasts. */
INTERP_HIDDEN interp_plan *interp_plan_new(mil_block *b);
INTERP_HIDDEN void interp_plan_free(interp_plan *p);
/* After op number `index` of the body ran (or was skipped): records the
 * buffers its outputs hold and frees those whose last reader it was. */
INTERP_HIDDEN void interp_plan_after(interp_plan *p, interp_run *r, mil_op *op, int32_t index);
/* The largest number of bytes of large values (activations the plan
 * frees) held at once so far in the run. */
INTERP_HIDDEN int64_t interp_plan_peak(const interp_plan *p);

/* ---- threads.c ---- */
/* Threads the current run may use inside one op (mil_interp_set_threads;
 * outside a run: the default). Kernels read it to split large loops. */
INTERP_HIDDEN int interp_threads(void);
/* The default count: MIL_NUM_THREADS, else the online CPUs. */
INTERP_HIDDEN int interp_default_threads(void);
/* Sets the calling thread's count for a run (n <= 0: the default) and hands
 * it to oneDNN's OpenMP runtime and to OpenBLAS. */
INTERP_HIDDEN void interp_threads_begin(int n);
/* Runs fn(ctx, lo, hi) over [0, n) split into chunks (multiples of `align`)
 * on up to interp_threads() threads, the caller's among them; one call
 * when n < min_per_thread * 2 or a thread cannot be started. */
typedef void (*interp_range_fn)(void *ctx, int64_t lo, int64_t hi);
INTERP_HIDDEN void interp_parallel(int64_t n, int64_t min_per_thread, int64_t align, interp_range_fn fn, void *ctx);

/* ---- profile.c ---- */
INTERP_HIDDEN interp_profile *interp_profile_new(void);
INTERP_HIDDEN void interp_profile_free(interp_profile *p);
/* Monotonic clock in ns. */
INTERP_HIDDEN int64_t interp_profile_now(void);
/* Adds ns to op's type and to op (by name); thread-safe. */
INTERP_HIDDEN void interp_profile_op(interp_profile *p, const mil_op *op, int64_t ns);
/* Counts one run of ns in total. */
INTERP_HIDDEN void interp_profile_run(interp_profile *p, int64_t ns);
/* Notes a run's peak of live activation bytes (interp_plan_peak). */
INTERP_HIDDEN void interp_profile_peak(interp_profile *p, int64_t bytes);
/* Per-type table and the `top` slowest ops (all when top <= 0), per run. */
INTERP_HIDDEN void interp_profile_report(interp_profile *p, FILE *f, int top);

/* ---- util.c ---- */
/* fp32 -> fp16, round to nearest even (the same results as
 * mil_fp32_to_fp16, without going through double). */
static inline uint16_t interp_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00; /* NaN */
  if (ax >= 0x477ff000u) return sign | 0x7c00; /* >= 65520 (and inf) round to inf */
  if (ax < 0x38800000u) {                      /* below 2^-14: subnormal, units of 2^-24 */
    float q = fabsf(f) * 16777216.0f;          /* exact */
    return sign | (uint16_t)rintf(q);          /* ties to even in the default mode */
  }
  uint32_t h = ((ax >> 23) - 112) << 10 | ((ax >> 13) & 0x3ffu);
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into the exponent: still right */
  return sign | (uint16_t)h;
}
/* A buffer of n floats (contents unspecified, 64-byte aligned) that lives
 * until the op that asked for it ends: the executor gives back every
 * scratch buffer an op took (interp_scratch_release to the mark it read
 * before the op). Taken from the interpreter's pool, so the memory plan
 * places them too. NULL when out of memory. One thread per run. */
INTERP_HIDDEN float *interp_scratch_f32(interp_run *r, size_t n);
INTERP_HIDDEN void interp_scratch_release(interp_run *r, struct interp_tmp *mark);
/* fp16 -> fp32 through a table (built once). */
INTERP_HIDDEN float interp_h2f(uint16_t h);
/* The elements of a float tensor value (fp32, fp16, bf16, fp64) as fp32:
 * the value's own bytes when it is fp32, the cached conversion of a
 * const (*tmp = NULL in both cases), else a converted copy: a scratch
 * buffer of the running op (interp_scratch_f32; *tmp = NULL) when r is
 * given, else malloc'ed and returned in *tmp too (free it). NULL for
 * other dtypes or on allocation failure. */
INTERP_HIDDEN const float *interp_f32(interp_run *r, const mil_value *v, float **tmp);
/* Whether v can be the weight of a cached primitive (conv_dnnl.c,
 * linear_dnnl.c): a float tensor (fp32, fp16, bf16, fp64) of numel
 * elements whose bytes are stable (a const of the interpreter: they key the
 * cache, and never change while the interpreter family lives). */
INTERP_HIDDEN bool interp_weight_stable(interp_run *r, const mil_value *v, int64_t numel);
/* Writes v's v->numel elements (an fp16, bf16 or fp64 tensor) into f as fp32. */
INTERP_HIDDEN void interp_widen_f32(const mil_value *v, float *f);
/* A new zeroed tensor value of static type t in the run's program. */
INTERP_HIDDEN mil_value *interp_new_value(interp_run *r, const mil_type *t);
INTERP_HIDDEN mil_value *interp_new_shape(interp_run *r, mil_dtype dt, int32_t rank, const int64_t *shape,
                                          bool scalar);
/* A value of static tensor type t viewing src's bytes (no copy; reshape,
 * squeeze, expand_dims, identity). src must have t's element count. */
INTERP_HIDDEN mil_value *interp_view(interp_run *r, const mil_type *t, const mil_value *src);

/* Writing a float output: interp_fout_begin allocates output i of type
 * c->out[i] (which must be a static float type) and returns an fp32 buffer
 * to fill (the value's bytes for fp32, a scratch buffer otherwise);
 * interp_fout_end rounds it into the value and stores c->val[i]. */
typedef struct interp_fout {
  mil_value *v;
  float *buf;
  bool owned; /* buf is malloc'ed (no run): freed at the end */
} interp_fout;
INTERP_HIDDEN float *interp_fout_begin(interp_run *r, mil_infer_ctx *c, int i, interp_fout *o);
/* interp_fout_begin for a kernel that writes every element: the buffer is
 * not zeroed first (its contents are unspecified). */
INTERP_HIDDEN float *interp_fout_begin_uninit(interp_run *r, mil_infer_ctx *c, int i, interp_fout *o);
INTERP_HIDDEN float *interp_fout_shape(interp_run *r, mil_dtype dt, int32_t rank, const int64_t *shape,
                                       interp_fout *o);
INTERP_HIDDEN mil_value *interp_fout_end(interp_fout *o);
INTERP_HIDDEN void interp_fout_abort(interp_fout *o);
/* Stores n floats into value v (fp32/fp16/bf16/fp64) starting at element 0. */
INTERP_HIDDEN void interp_store_f32(mil_value *v, const float *src, int64_t n);

/* True when every dim of the tensor type is constant (fills shape). */
INTERP_HIDDEN bool interp_shape(const mil_type *t, int64_t *shape, int32_t *rank);
/* Shape of a tensor value into shape[MIL_INTERP_MAX_RANK]; its rank. */
INTERP_HIDDEN int32_t interp_vshape(const mil_value *v, int64_t *shape);
/* True for fp16 / fp32 tensor values (what the float fast paths take). */
INTERP_HIDDEN bool interp_is_f(const mil_value *v);
/* Input `name` as a float tensor value, or NULL when absent / not fp16/fp32. */
INTERP_HIDDEN const mil_value *interp_fin(const mil_infer_ctx *c, const char *name);
/* Known tensor value of input `name`, or NULL (records an error naming the
 * input when `required`). */
INTERP_HIDDEN const mil_value *interp_in(mil_infer_ctx *c, const char *name);
/* Records "function 'f': op 'n' (type): <msg>" with status st. */
INTERP_HIDDEN mil_status interp_fail(mil_infer_ctx *c, mil_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Out of memory, naming the op. */
INTERP_HIDDEN mil_status interp_nomem(mil_infer_ctx *c);
/* Number of elements; -1 on overflow. */
INTERP_HIDDEN int64_t interp_numel(int32_t rank, const int64_t *shape);

/* ---- blas (linear.c) ---- */
/* C[m,n] = alpha * op(A) op(B) + beta * C, row-major, through cblas_sgemm. */
INTERP_HIDDEN void interp_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif

/* Value helpers shared by the interpreter kernels: fp32 views of float
 * tensors, output values, shapes and error messages. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

static float g_h2f[65536];
static pthread_once_t g_h2f_once = PTHREAD_ONCE_INIT;

static void build_h2f(void) {
  for (uint32_t i = 0; i < 65536; i++) g_h2f[i] = mil_fp16_to_fp32((uint16_t)i);
}

float interp_h2f(uint16_t h) {
  pthread_once(&g_h2f_once, build_h2f);
  return g_h2f[h];
}

const float *interp_f32(interp_run *r, const mil_value *v, float **tmp) {
  *tmp = NULL;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return NULL;
  mil_dtype dt = v->type->dtype;
  if (dt == MIL_DT_FP32) {
    static const float k_empty[1] = {0};
    return v->numel ? (const float *)mil_value_data(v) : k_empty;
  }
  if (dt != MIL_DT_FP16 && dt != MIL_DT_BF16 && dt != MIL_DT_FP64) return NULL;
  const float *cached = r ? interp_cache_f32(r->cache, v) : NULL;
  if (cached) return cached;
  size_t n = (size_t)(v->numel ? v->numel : 1);
  float *b = r ? interp_scratch_f32(r, n) : malloc(n * sizeof *b);
  if (!b) return NULL;
  interp_widen_f32(v, b);
  if (!r) *tmp = b;
  return b;
}

void interp_widen_f32(const mil_value *v, float *f) {
  if (v->type->dtype == MIL_DT_FP16) {
    mil_fp16_to_fp32_array(mil_value_data(v), f, (size_t)v->numel); /* F16C / AVX-512 when the CPU has it */
  } else {
    for (int64_t i = 0; i < v->numel; i++) f[i] = (float)mil_value_get_f64(v, i);
  }
}

bool interp_weight_stable(interp_run *r, const mil_value *v, int64_t numel) {
  if (!r || !r->cache || !v || v->kind != MIL_VAL_TENSOR || !v->type || v->numel != numel || numel <= 0) return false;
  mil_dtype dt = v->type->dtype;
  return (dt == MIL_DT_FP32 || dt == MIL_DT_FP16 || dt == MIL_DT_BF16 || dt == MIL_DT_FP64) &&
         interp_cache_is_stable(r->cache, mil_value_data(v));
}

/* A scratch buffer's header (64 bytes: the floats after it stay aligned
 * as the block is). */
typedef struct interp_tmp {
  struct interp_tmp *next;
  size_t bytes;
  char pad[64 - sizeof(void *) - sizeof(size_t)];
} interp_tmp;
_Static_assert(sizeof(interp_tmp) == 64, "scratch header keeps 64-byte alignment");

float *interp_scratch_f32(interp_run *r, size_t n) {
  if (n > (SIZE_MAX - sizeof(interp_tmp)) / sizeof(float)) return NULL;
  size_t bytes = sizeof(interp_tmp) + n * sizeof(float);
  const mil_allocator *a = interp_bufpool_allocator(r->pool);
  interp_tmp *t = a ? a->fn(a->ud, NULL, 0, bytes) : malloc(bytes);
  if (!t) return NULL;
  t->next = r->scratch;
  t->bytes = bytes;
  r->scratch = t;
  return (float *)(t + 1);
}

void interp_scratch_release(interp_run *r, interp_tmp *mark) {
  const mil_allocator *a = interp_bufpool_allocator(r->pool);
  while (r->scratch && r->scratch != mark) {
    interp_tmp *t = r->scratch;
    r->scratch = t->next;
    if (a) a->fn(a->ud, t, t->bytes, 0);
    else free(t);
  }
}

int64_t interp_numel(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

mil_value *interp_new_shape(interp_run *r, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar) {
  if (rank < 0 || rank > MIL_INTERP_MAX_RANK) return NULL;
  int64_t n = interp_numel(rank, shape);
  if (n < 0 || (uint64_t)n > (UINT64_C(1) << 40)) return NULL;
  return mil_value_new_tensor(r->prog, dt, rank, shape, scalar && rank == 0, NULL);
}

bool interp_shape(const mil_type *t, int64_t *shape, int32_t *rank) {
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > MIL_INTERP_MAX_RANK) return false;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0) return false;
    shape[i] = t->dims[i].size;
  }
  *rank = t->rank;
  return true;
}

int32_t interp_vshape(const mil_value *v, int64_t *shape) {
  int32_t r = v->type ? v->type->rank : 0;
  if (r > MIL_INTERP_MAX_RANK) r = MIL_INTERP_MAX_RANK;
  for (int32_t i = 0; i < r; i++) shape[i] = v->type->dims[i].size;
  return r;
}

mil_value *interp_new_value(interp_run *r, const mil_type *t) {
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank;
  if (!interp_shape(t, shape, &rank)) return NULL;
  return interp_new_shape(r, t->dtype, rank, shape, t->is_scalar);
}

bool interp_is_f(const mil_value *v) {
  return v && v->kind == MIL_VAL_TENSOR && v->type &&
         (v->type->dtype == MIL_DT_FP32 || v->type->dtype == MIL_DT_FP16);
}

const mil_value *interp_fin(const mil_infer_ctx *c, const char *name) {
  const mil_value *v = op_val(c, name);
  return interp_is_f(v) ? v : NULL;
}

const mil_value *interp_in(mil_infer_ctx *c, const char *name) {
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR) {
    interp_fail(c, MIL_ERR_INVALID, "input '%s' has no tensor value at run time", name);
    return NULL;
  }
  return v;
}

void interp_store_f32(mil_value *v, const float *src, int64_t n) {
  void *dst = mil_value_data_mut(v);
  switch (v->type->dtype) {
  case MIL_DT_FP32:
    if (dst != (void *)src) memcpy(dst, src, (size_t)n * sizeof(float));
    break;
  case MIL_DT_FP16:
    /* F16C when the CPU has it: the same rounding (to nearest even) as
     * interp_f2h; a NaN keeps the top bits of its payload. */
    mil_fp32_to_fp16_array(src, dst, (size_t)n);
    break;
  default:
    for (int64_t i = 0; i < n; i++) mil_value_set_f64(v, i, src[i]);
    break;
  }
}

static float *fout_setup(interp_run *r, mil_value *v, interp_fout *o, bool zero) {
  o->v = v;
  o->owned = false;
  o->buf = NULL;
  if (!v) return NULL;
  if (v->type->dtype == MIL_DT_FP32) {
    static float k_empty[1];
    o->buf = v->numel ? mil_value_data_mut(v) : k_empty;
    return o->buf;
  }
  size_t n = (size_t)(v->numel ? v->numel : 1);
  if (r) {
    o->buf = interp_scratch_f32(r, n);
    if (o->buf && zero) memset(o->buf, 0, n * sizeof(float));
    return o->buf;
  }
  o->buf = zero ? calloc(n, sizeof(float)) : malloc(n * sizeof(float));
  o->owned = o->buf != NULL;
  return o->buf;
}

float *interp_fout_begin(interp_run *r, mil_infer_ctx *c, int i, interp_fout *o) {
  const mil_type *t = c->out[i];
  memset(o, 0, sizeof *o);
  if (!t || t->kind != MIL_TYPE_TENSOR || !mil_dtype_is_float(t->dtype)) return NULL;
  return fout_setup(r, interp_new_value(r, t), o, true);
}

float *interp_fout_begin_uninit(interp_run *r, mil_infer_ctx *c, int i, interp_fout *o) {
  const mil_type *t = c->out[i];
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank;
  memset(o, 0, sizeof *o);
  if (!t || t->kind != MIL_TYPE_TENSOR || !mil_dtype_is_float(t->dtype) || !interp_shape(t, shape, &rank)) return NULL;
  int64_t n = interp_numel(rank, shape);
  if (n < 0 || (uint64_t)n > (UINT64_C(1) << 40)) return NULL;
  return fout_setup(r, mil_value_new_tensor_uninit(r->prog, t->dtype, rank, shape, t->is_scalar && rank == 0), o, false);
}

float *interp_fout_shape(interp_run *r, mil_dtype dt, int32_t rank, const int64_t *shape, interp_fout *o) {
  memset(o, 0, sizeof *o);
  return fout_setup(r, interp_new_shape(r, dt, rank, shape, false), o, true);
}

mil_value *interp_fout_end(interp_fout *o) {
  if (!o->v) return NULL;
  if (o->buf && o->v->type->dtype != MIL_DT_FP32) interp_store_f32(o->v, o->buf, o->v->numel);
  if (o->owned) free(o->buf);
  o->buf = NULL;
  o->owned = false;
  return o->v;
}

void interp_fout_abort(interp_fout *o) {
  if (o->owned) free(o->buf);
  memset(o, 0, sizeof *o);
}

mil_status interp_fail(mil_infer_ctx *c, mil_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mil_diag_error(c->diag, st, "function '%s': op '%s' (%s): %s", c->func, c->op->name ? c->op->name : "?",
                        c->op->type, msg);
}

mil_status interp_nomem(mil_infer_ctx *c) { return interp_fail(c, MIL_ERR_NOMEM, "out of memory"); }

mil_value *interp_view(interp_run *r, const mil_type *t, const mil_value *src) {
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank;
  if (!interp_shape(t, shape, &rank) || t->dtype != src->type->dtype || interp_numel(rank, shape) != src->numel)
    return NULL;
  mil_value *v = mil_program_alloc(r->prog, sizeof *v);
  if (!v) return NULL;
  v->kind = MIL_VAL_TENSOR;
  v->type = t;
  v->raw = mil_value_data(src);
  v->nbytes = src->nbytes;
  v->numel = src->numel;
  v->storage = MIL_STORE_VIEW;
  return v;
}

bool interp_cpu(int features) {
  static int known = -1; /* the INTERP_CPU_* bits, once found (atomic: every thread finds the same) */
  int have = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (have < 0) {
    have = 0;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx")) have |= INTERP_CPU_AVX;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) have |= INTERP_CPU_AVX2_FMA;
    if (__builtin_cpu_supports("avx512f")) have |= INTERP_CPU_AVX512F;
#endif
    __atomic_store_n(&known, have, __ATOMIC_RELAXED);
  }
  return (have & features) == features;
}

const mil_var *interp_input_var(const mil_op *op, const char *name) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    if (strcmp(op->inputs[i].name, name) == 0 && op->inputs[i].n_args == 1) return op->inputs[i].args[0].use.var;
  return NULL;
}

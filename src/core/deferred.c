/* Deferred values: an fp16 weight computed from its fp32 source only when
 * its bytes are read.
 *
 * add_fp16_cast casts every fp32 weight of a model to fp16, and coremltools'
 * value inference computes each cast right away (np.astype). For a model
 * whose weights are gigabytes, computing them during the pipeline means
 * holding the fp16 copies in memory until the model is saved, and paying
 * the conversion while the graph passes wait. A deferred value holds only a
 * reference to its source (a weight-file view, which costs no memory while
 * its pages are not touched): the bytes come from mil_value_data (computed
 * once and kept) or from mil_value_read (computed piecewise, not kept), and
 * the weight writer streams them to the output file. Element reads
 * (mil_value_get_f64) convert the one element. The result is bit-identical
 * to converting eagerly: the same kernel rounds every element.
 */
#include <string.h>

#include "core/core_internal.h"

struct ir_deferred {
  mil_program *p;
  const mil_value *src; /* fp32, same shape, bytes not deferred */
};

/* Elements converted per step when streaming (8 MiB of fp32): large enough
 * for the bulk kernel's threads, small enough to give source pages back as
 * it goes. */
#define PIECE ((size_t)2 << 20)

mil_value *mil_value_new_deferred_fp16(mil_program *p, const mil_value *src) {
  if (!p || !src || src->kind != MIL_VAL_TENSOR || !src->type || src->type->dtype != MIL_DT_FP32 || src->deferred)
    return NULL;
  if (src->numel < 1 || !src->raw || src->nbytes != (size_t)src->numel * 4) return NULL;
  const mil_type *st = src->type;
  const mil_type *t = st->is_scalar && st->rank == 0 ? mil_type_scalar(p, MIL_DT_FP16) : NULL;
  if (!t) {
    int64_t shape[64];
    if (st->rank > 64) return NULL;
    for (int32_t i = 0; i < st->rank; i++) shape[i] = st->dims[i].size;
    t = mil_type_tensor_shape(p, MIL_DT_FP16, st->rank, shape);
  }
  mil_value *v = ir_arena_alloc(p->arena, sizeof *v);
  struct ir_deferred *d = ir_arena_alloc(p->arena, sizeof *d);
  if (!t || !v || !d) return NULL;
  d->p = p;
  d->src = src;
  v->kind = MIL_VAL_TENSOR;
  v->type = t;
  v->numel = src->numel;
  v->nbytes = (size_t)src->numel * 2;
  v->storage = MIL_STORE_ARENA;
  v->deferred = d;
  return v;
}

bool mil_value_is_deferred(const mil_value *v) { return v && v->kind == MIL_VAL_TENSOR && v->deferred; }

const mil_value *mil_value_deferred_source(const mil_value *v) {
  return mil_value_is_deferred(v) ? v->deferred->src : NULL;
}

/* Elements [e0, e0 + n) of deferred value v into dst, giving back the
 * source's pages of a weight-file mapping once converted. */
static void convert_elems(const mil_value *v, size_t e0, size_t n, uint16_t *dst) {
  const struct ir_deferred *d = v->deferred;
  const float *s = (const float *)d->src->raw;
  for (size_t at = 0; at < n; at += PIECE) {
    size_t len = n - at < PIECE ? n - at : PIECE;
    mil_fp32_to_fp16_array(s + e0 + at, dst + at, len);
    mil_program_release_value_pages(d->p, d->src, (e0 + at) * 4, len * 4);
  }
}

const void *mil_value_data(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR) return NULL;
  if (!v->deferred) return v->raw;
  mil_value *m = (mil_value *)v; /* computing the bytes once does not change the value */
  void *buf = ir_big_alloc(v->deferred->p, v->nbytes, false, &m->big);
  if (!buf) return NULL;
  convert_elems(v, 0, (size_t)v->numel, buf);
  m->raw = buf;
  m->deferred = NULL;
  return buf;
}

bool mil_value_read(const mil_value *v, size_t offset, size_t n, void *dst) {
  if (!v || v->kind != MIL_VAL_TENSOR || offset > v->nbytes || n > v->nbytes - offset) return false;
  if (!n) return true;
  if (!v->deferred) {
    if (!v->raw) return false;
    memcpy(dst, (const char *)v->raw + offset, n);
    return true;
  }
  uint8_t *out = dst;
  if (offset % 2 == 0 && n % 2 == 0) {
    convert_elems(v, offset / 2, n / 2, (uint16_t *)(void *)out);
    return true;
  }
  /* unaligned ends: through a small buffer of whole elements */
  uint16_t tmp[2048];
  size_t e = offset / 2, end = offset + n;
  while (offset < end) {
    size_t ne = (end - e * 2 + 1) / 2;
    if (ne > 2048) ne = 2048;
    convert_elems(v, e, ne, tmp);
    size_t skip = offset - e * 2, take = ne * 2 - skip;
    if (take > end - offset) take = end - offset;
    memcpy(out, (const uint8_t *)tmp + skip, take);
    out += take;
    offset += take;
    e += ne;
  }
  return true;
}

double ir_deferred_get_f64(const mil_value *v, int64_t i) {
  uint16_t h;
  mil_fp32_to_fp16_array((const float *)v->deferred->src->raw + i, &h, 1);
  return mil_fp16_to_fp32(h);
}

const mil_value *ir_deferred_mark_source(const mil_value *v) { return v->deferred ? v->deferred->src : NULL; }

/* Do a and b (same dtype, nbytes) hold the same bytes? Through buffers
 * when either is deferred, so neither is computed whole. */
bool ir_value_bytes_equal(const mil_value *a, const mil_value *b) {
  if (a->nbytes != b->nbytes) return false;
  if (!a->deferred && !b->deferred) return a->nbytes == 0 || memcmp(a->raw, b->raw, a->nbytes) == 0;
  if (a->deferred && b->deferred && a->deferred->src == b->deferred->src) return true;
  enum { CHUNK = 64 << 10 };
  static _Thread_local uint8_t ba[CHUNK], bb[CHUNK];
  for (size_t at = 0; at < a->nbytes; at += CHUNK) {
    size_t k = a->nbytes - at < CHUNK ? a->nbytes - at : CHUNK;
    const void *pa = a->deferred ? (mil_value_read(a, at, k, ba), ba) : (const uint8_t *)a->raw + at;
    const void *pb = b->deferred ? (mil_value_read(b, at, k, bb), bb) : (const uint8_t *)b->raw + at;
    if (memcmp(pa, pb, k) != 0) return false;
  }
  return true;
}

/* Element-level folding helpers and the slice_by_index solvers shared by the
 * tensor op families (see tensor_ops_internal.h). The slice solvers mirror
 * coremltools ops/defs/_utils.py (solve_slice_by_index_shape,
 * solve_slice_by_index_slice) and Python's slice.indices(). */
#include <math.h>
#include <string.h>

#include "ops/tensor_ops_internal.h"

int64_t op_numel(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

bool op_static_shape(const mil_type *t, int64_t *shape, int32_t *rank) {
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > TOP_RANK) return false;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0) return false;
    shape[i] = t->dims[i].size;
  }
  *rank = t->rank;
  return true;
}

void op_strides(int32_t rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i];
  }
}

bool op_foldable_dtype(mil_dtype dt) {
  return mil_dtype_is_valid(dt) && dt != MIL_DT_STRING && dt != MIL_DT_UNUSED && !mil_dtype_is_complex(dt);
}

void op_copy_elem(mil_value *dst, int64_t di, const mil_value *src, int64_t si) {
  mil_dtype dt = dst->type->dtype;
  size_t es = mil_dtype_size(dt);
  if (es) {
    memcpy((char *)mil_value_data_mut(dst) + (size_t)di * es, (const char *)mil_value_data(src) + (size_t)si * es, es);
  } else if (mil_dtype_is_subbyte(dt)) {
    int b = mil_dtype_bits(dt);
    mil_bits_set(mil_value_data_mut(dst), di, b, mil_bits_get(mil_value_data(src), si, b));
  }
}

void *op_tmp_alloc(mil_infer_ctx *c, size_t n) {
  if (!n) return NULL;
  op_tmp_pool *pl = c->pool;
  if (pl && n <= sizeof pl->slot[0] && pl->used != (1u << OP_TMP_SLOTS) - 1) {
    int i = 0;
    while (pl->used >> i & 1) i++;
    pl->used |= 1u << i;
    return &pl->slot[i];
  }
  const mil_allocator *a = c->prog->alloc ? c->prog->alloc : mil_default_allocator();
  return a->fn(a->ud, NULL, 0, n);
}

void op_tmp_free(mil_infer_ctx *c, void *p, size_t n) {
  if (!p) return;
  op_tmp_pool *pl = c->pool;
  if (pl) {
    uintptr_t at = (uintptr_t)p - (uintptr_t)pl->slot;
    if (at < sizeof pl->slot) {
      pl->used &= ~(1u << (at / sizeof pl->slot[0]));
      return;
    }
  }
  const mil_allocator *a = c->prog->alloc ? c->prog->alloc : mil_default_allocator();
  a->fn(a->ud, p, n, 0);
}

bool op_value_shape(const mil_value *v, int64_t *shape, int32_t *rank) {
  const mil_type *t = v->type;
  if (!t || t->rank > TOP_RANK) return false;
  *rank = t->rank < 0 ? 0 : t->rank;
  for (int32_t i = 0; i < *rank; i++) shape[i] = t->dims[i].size;
  return true;
}

/* op_value_from_map's loop for whole-byte elements of es bytes: direct
 * copies (the size a constant the compiler sees), no per-element lookups. */
#define FROM_MAP(ES)                                                      \
  for (int64_t k = 0; k < n; k++) {                                       \
    if (map[k] >= 0) memcpy(d + (size_t)k * ES, s + (size_t)map[k] * ES, ES); \
    else if (f) memcpy(d + (size_t)k * ES, f, ES);                        \
  }

mil_value *op_value_from_map(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                             const mil_value *src, const int64_t *map, const mil_value *fill) {
  mil_value *v = op_new_value(c, dt, rank, shape, scalar);
  if (!v) return NULL;
  size_t es = mil_dtype_size(v->type->dtype);
  uint8_t *d = mil_value_data_mut(v);
  const uint8_t *s = src ? mil_value_data(src) : NULL, *f = fill ? mil_value_data(fill) : NULL;
  if (d && s && (!fill || f) && (es == 1 || es == 2 || es == 4 || es == 8)) {
    int64_t n = v->numel;
    switch (es) {
    case 1: FROM_MAP(1); break;
    case 2: FROM_MAP(2); break;
    case 4: FROM_MAP(4); break;
    default: FROM_MAP(8); break;
    }
    return v;
  }
  for (int64_t k = 0; k < v->numel; k++) {
    if (map[k] >= 0) op_copy_elem(v, k, src, map[k]);
    else if (fill) op_copy_elem(v, k, fill, 0);
  }
  return v;
}

bool op_out_shape_is(const mil_infer_ctx *c, int i, int32_t rank, const int64_t *shape) {
  const mil_type *t = c->out[i];
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank != rank) return false;
  for (int32_t k = 0; k < rank; k++)
    if (t->dims[k].size != shape[k]) return false;
  return true;
}

void op_set_val(mil_infer_ctx *c, int i, mil_value *v) {
  if (!v) return;
  int64_t shape[TOP_RANK];
  int32_t rank;
  if (!op_value_shape(v, shape, &rank) || !op_out_shape_is(c, i, rank, shape)) return;
  if (c->out[i]->is_scalar != v->type->is_scalar)
    v = mil_value_new_tensor(c->prog, v->type->dtype, rank, shape, c->out[i]->is_scalar, mil_value_data(v));
  if (!v || v->type->dtype != c->out[i]->dtype) return;
  c->val[i] = v;
}

/* ---- known inputs ---- */

int op_known_ints(mil_infer_ctx *c, const char *name, int64_t *out, int max) {
  const mil_value *v = op_val(c, name);
  if (v && v->kind == MIL_VAL_TENSOR && v->type->dtype != MIL_DT_STRING) {
    if (v->numel > max) return -1;
    for (int64_t i = 0; i < v->numel; i++) out[i] = mil_value_get_i64(v, i);
    return (int)v->numel;
  }
  if (!op_has(c, name)) return -1;
  op_symval sv;
  if (!op_in_symval(c, name, 0, &sv) || sv.n > max || op_symval_has_sym(&sv)) return -1;
  for (int64_t i = 0; i < sv.n; i++) out[i] = op_sym_i64(sv.e[i].x);
  return (int)sv.n;
}

bool op_known_int(mil_infer_ctx *c, const char *name, int64_t *out) {
  int64_t buf[1];
  if (op_known_ints(c, name, buf, 1) != 1) return false;
  *out = buf[0];
  return true;
}

int op_known_bools(mil_infer_ctx *c, const char *name, bool *out, int max) {
  int64_t buf[TOP_RANK * 4];
  int n = op_known_ints(c, name, buf, max < (int)(sizeof buf / sizeof buf[0]) ? max : (int)(sizeof buf / sizeof buf[0]));
  for (int i = 0; i < n; i++) out[i] = buf[i] != 0;
  return n;
}

bool op_in_known(mil_infer_ctx *c, const char *name) {
  if (op_val(c, name)) return true;
  op_symval sv;
  return op_in_symval(c, name, 0, &sv) && !op_symval_has_sym(&sv);
}

/* ---- slicing ---- */

void op_py_slice(int64_t n, bool has_begin, int64_t begin, bool has_end, int64_t end, int64_t step, int64_t *start,
                 int64_t *len) {
  int64_t b, e;
  if (step > 0) {
    if (!has_begin) b = 0;
    else if (begin < 0) b = begin + n < 0 ? 0 : begin + n;
    else b = begin > n ? n : begin;
    if (!has_end) e = n;
    else if (end < 0) e = end + n < 0 ? 0 : end + n;
    else e = end > n ? n : end;
    *len = e > b ? (e - b + step - 1) / step : 0;
  } else {
    if (!has_begin) b = n - 1;
    else if (begin < 0) b = begin + n < 0 ? -1 : begin + n;
    else b = begin >= n ? n - 1 : begin;
    if (!has_end) e = -1;
    else if (end < 0) e = end + n < 0 ? -1 : end + n;
    else e = end >= n ? n - 1 : end;
    *len = b > e ? (b - e + (-step) - 1) / (-step) : 0;
  }
  *start = b;
}

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

int op_slice_shape(mil_infer_ctx *c, const mil_type *x, const int64_t *begin, int nbegin, const int64_t *end, int nend,
                   const int64_t *stride, const bool *bmask, const bool *emask, const bool *smask, mil_dim *out) {
  int32_t rank = x->rank;
  if (begin && nbegin != rank)
    return op_fail(c, "slice_by_index op: size of 'begin', %d, is not equal to the rank of input, which is %d", nbegin,
                   rank),
           -1;
  if (end && nend != rank)
    return op_fail(c, "slice_by_index op: size of 'end', %d, is not equal to the rank of input, which is %d", nend,
                   rank),
           -1;
  int k = 0;
  for (int32_t i = 0; i < rank; i++) {
    const mil_dim *xd = &x->dims[i];
    bool sym = xd->size < 0;
    int64_t st = stride ? stride[i] : 1;
    bool bm = bmask && bmask[i], em = emask && emask[i];
    if (smask && smask[i]) continue;
    if (st == 0) return op_fail(c, "input 'stride' must not contain 0 (dimension %d)", i), -1;
    if (bm && em) {
      if (sym) out[k++] = (st == 1 || st == -1) ? *xd : op_dim_sym(c);
      else out[k++] = op_dim((int64_t)ceil((double)xd->size / (double)(st < 0 ? -st : st)));
      continue;
    }
    if (!bm && !em && begin && end) {
      int64_t b = begin[i], e = end[i], osz = -1;
      if (b >= 0 && e >= 0 && st > 0) {
        if (e < b)
          return op_fail(c,
                         "slice_by_index op: unsupported values in for dimension %d, (begin, end, stride) : (%lld, "
                         "%lld, %lld)",
                         i, (long long)b, (long long)e, (long long)st),
                 -1;
        osz = floordiv(e - b + st - 1, st);
        if (osz < 0) osz = 0;
      }
      if (b < 0 && e < 0 && st < 0) {
        if (b < e)
          return op_fail(c,
                         "slice_by_index op: unsupported values in for dimension %d, (begin, end, stride) : (%lld, "
                         "%lld, %lld)",
                         i, (long long)b, (long long)e, (long long)st),
                 -1;
        osz = floordiv(-(b - e - st - 1), st);
        if (osz < 0) osz = 0;
      }
      if (osz == 0 || osz == 1) {
        out[k++] = op_dim(osz);
        continue;
      }
    }
    if (!bm && em && begin) {
      if ((begin[i] == 0 && st < 0) || (begin[i] == -1 && st > 0)) {
        out[k++] = op_dim(1);
        continue;
      }
    }
    if (sym) {
      out[k++] = op_dim_sym(c);
      continue;
    }
    int64_t n = xd->size;
    if (n == 1) {
      out[k++] = op_dim(1);
      continue;
    }
    if ((!begin && !bm) || (!end && !em)) {
      out[k++] = op_dim_sym(c);
      continue;
    }
    int64_t b = begin ? begin[i] : 0, e = end ? end[i] : 0;
    if (begin && b < 0) b = b + n < 0 ? 0 : b + n;
    if (end && e < 0) e = e + n < 0 ? 0 : e + n;
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
    int64_t bi = st > 0 ? b : e, ei = st > 0 ? e : b;
    bool ibm = st > 0 ? bm : em, iem = st > 0 ? em : bm;
    if (ibm) bi = lo;
    ei = iem ? hi : (ei < hi ? ei : hi);
    double num = ceil((double)(ei - bi) / (double)(st < 0 ? -st : st));
    out[k++] = op_dim(num < 0 ? 0 : (int64_t)num);
  }
  return k;
}

/* ---- index maps ---- */

bool op_map_gather(int32_t xr, const int64_t *xs, int32_t ir, const int64_t *is, const int64_t *ind, int64_t axis,
                   int64_t bd, int64_t *map, int32_t *orank, int64_t *oshape) {
  if (axis < 0) axis += xr;
  if (axis < 0 || axis >= xr || bd < 0 || bd > ir || bd > axis) return false;
  int32_t r = 0;
  for (int32_t d = 0; d < axis; d++) oshape[r++] = xs[d];
  for (int32_t d = (int32_t)bd; d < ir; d++) {
    if (r >= TOP_RANK) return false;
    oshape[r++] = is[d];
  }
  for (int32_t d = (int32_t)axis + 1; d < xr; d++) {
    if (r >= TOP_RANK) return false;
    oshape[r++] = xs[d];
  }
  for (int32_t d = 0; d < bd; d++)
    if (is[d] != xs[d]) return false;
  *orank = r;
  int64_t n = op_numel(r, oshape), ni = op_numel(ir, is);
  for (int64_t k = 0; k < ni; k++)
    if (ind[k] < -xs[axis] || ind[k] >= xs[axis]) return false;
  if (!map) return true;
  int64_t xst[TOP_RANK], ist[TOP_RANK], idx[TOP_RANK];
  op_strides(xr, xs, xst);
  op_strides(ir, is, ist);
  for (int32_t d = 0; d < r; d++) idx[d] = 0;
  for (int64_t k = 0; k < n; k++) {
    if (k) /* the output index of k, counted up from k - 1's (n > 0: no dimension is 0) */
      for (int32_t d = r - 1; d >= 0 && ++idx[d] == oshape[d]; d--) idx[d] = 0;
    int64_t ipos = 0;
    for (int32_t d = 0; d < bd; d++) ipos += idx[d] * ist[d];
    for (int32_t d = (int32_t)bd; d < ir; d++) ipos += idx[axis + (d - bd)] * ist[d];
    int64_t iv = ind[ipos];
    if (iv < 0) iv += xs[axis];
    int64_t src = 0;
    for (int32_t d = 0; d < axis; d++) src += idx[d] * xst[d];
    src += iv * xst[axis];
    for (int32_t d = (int32_t)axis + 1; d < xr; d++) src += idx[d - axis - 1 + axis + (ir - bd)] * xst[d];
    map[k] = src;
  }
  return true;
}

void op_map_slice(int32_t rank, const int64_t *shape, const int64_t *start, const int64_t *step, const int64_t *len,
                  int64_t *map) {
  int64_t st[TOP_RANK], idx[TOP_RANK] = {0};
  op_strides(rank, shape, st);
  int64_t n = op_numel(rank, len);
  for (int64_t k = 0; k < n; k++) {
    int64_t src = 0;
    for (int32_t d = 0; d < rank; d++) src += (start[d] + idx[d] * step[d]) * st[d];
    map[k] = src;
    for (int32_t d = rank - 1; d >= 0; d--) {
      if (++idx[d] < len[d]) break;
      idx[d] = 0;
    }
  }
}

mil_value *op_value_slice(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape, const int64_t *start,
                          const int64_t *step, const int64_t *len, int32_t orank, const int64_t *oshape, bool scalar,
                          const mil_value *src) {
  size_t es = mil_dtype_size(dt);
  const uint8_t *s = src ? mil_value_data(src) : NULL;
  if (mil_dtype_is_subbyte(dt) || !es || rank < 1 || rank > TOP_RANK || (!s && op_numel(rank, len) > 0)) return NULL;
  mil_value *v = op_new_value(c, dt, orank, oshape, scalar);
  if (!v) return NULL;
  int64_t n = op_numel(rank, len);
  if (n == 0) return v;
  uint8_t *d = mil_value_data_mut(v);
  int64_t st[TOP_RANK], idx[TOP_RANK] = {0};
  op_strides(rank, shape, st);
  const int64_t last = len[rank - 1], lstep = step[rank - 1];
  for (int64_t k = 0; k < n; k += last) {
    int64_t from = 0;
    for (int32_t i = 0; i < rank - 1; i++) from += (start[i] + idx[i] * step[i]) * st[i];
    from += start[rank - 1];
    if (lstep == 1) {
      memcpy(d + (size_t)k * es, s + (size_t)from * es, (size_t)last * es);
    } else {
      for (int64_t j = 0; j < last; j++) memcpy(d + (size_t)(k + j) * es, s + (size_t)(from + j * lstep) * es, es);
    }
    for (int32_t i = rank - 2; i >= 0; i--) {
      if (++idx[i] < len[i]) break;
      idx[i] = 0;
    }
  }
  return v;
}

void op_map_transpose(int32_t rank, const int64_t *shape, const int64_t *perm, int64_t *map) {
  int64_t st[TOP_RANK], oshape[TOP_RANK], idx[TOP_RANK] = {0};
  op_strides(rank, shape, st);
  for (int32_t d = 0; d < rank; d++) oshape[d] = shape[perm[d]];
  int64_t n = op_numel(rank, oshape);
  for (int64_t k = 0; k < n; k++) {
    int64_t src = 0;
    for (int32_t d = 0; d < rank; d++) src += idx[d] * st[perm[d]];
    map[k] = src;
    for (int32_t d = rank - 1; d >= 0; d--) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
}

/* The transpose kernel. The output is walked as a row-major array over
 * the output dims with the source strides of the dims they come from; dims
 * of size 1 are dropped and neighbouring dims that stay contiguous in the
 * source are merged. A contiguous innermost run is copied with memcpy;
 * otherwise the innermost output dim (b) and the dim that is innermost in
 * the source (a) form a 2-D transpose d[a * da + b] = s[a + b * sb]. That
 * one goes in panels of TR_PANEL_BYTES of the source's rows (so that the
 * pages being written stay few enough to remain mapped in the TLB), each
 * in TR_TILE x TR_TILE tiles (whose lines stay in the L1 cache) of 4 x 4
 * blocks moved through registers. */
enum { TR_TILE = 32, TR_PANEL_BYTES = 1024 };

#define TR_PANEL_FN(NAME, T)                                                                                       \
  static void NAME(T *restrict d, const T *restrict s, int64_t na, int64_t da, int64_t nb, int64_t sb) {          \
    const int64_t panel = TR_PANEL_BYTES / (int64_t)sizeof(T);                                                     \
    for (int64_t p0 = 0; p0 < na; p0 += panel) {                                                                   \
      int64_t p1 = p0 + panel < na ? p0 + panel : na;                                                              \
      for (int64_t b0 = 0; b0 < nb; b0 += TR_TILE) {                                                               \
        int64_t b1 = b0 + TR_TILE < nb ? b0 + TR_TILE : nb;                                                        \
        for (int64_t a0 = p0; a0 < p1; a0 += TR_TILE) {                                                            \
          int64_t a1 = a0 + TR_TILE < p1 ? a0 + TR_TILE : p1, a = a0;                                              \
          for (; a + 4 <= a1; a += 4) {                                                                            \
            int64_t b = b0;                                                                                        \
            for (; b + 4 <= b1; b += 4) {                                                                          \
              const T *s0 = s + a + b * sb, *s1 = s0 + sb, *s2 = s1 + sb, *s3 = s2 + sb;                           \
              T *d0 = d + a * da + b, *d1 = d0 + da, *d2 = d1 + da, *d3 = d2 + da;                                 \
              T x00 = s0[0], x01 = s0[1], x02 = s0[2], x03 = s0[3];                                                \
              T x10 = s1[0], x11 = s1[1], x12 = s1[2], x13 = s1[3];                                                \
              T x20 = s2[0], x21 = s2[1], x22 = s2[2], x23 = s2[3];                                                \
              T x30 = s3[0], x31 = s3[1], x32 = s3[2], x33 = s3[3];                                                \
              d0[0] = x00, d0[1] = x10, d0[2] = x20, d0[3] = x30;                                                  \
              d1[0] = x01, d1[1] = x11, d1[2] = x21, d1[3] = x31;                                                  \
              d2[0] = x02, d2[1] = x12, d2[2] = x22, d2[3] = x32;                                                  \
              d3[0] = x03, d3[1] = x13, d3[2] = x23, d3[3] = x33;                                                  \
            }                                                                                                      \
            for (; b < b1; b++)                                                                                    \
              for (int64_t k = 0; k < 4; k++) d[(a + k) * da + b] = s[a + k + b * sb];                             \
          }                                                                                                        \
          for (; a < a1; a++)                                                                                      \
            for (int64_t b = b0; b < b1; b++) d[a * da + b] = s[a + b * sb];                                       \
        }                                                                                                          \
      }                                                                                                            \
    }                                                                                                              \
  }
TR_PANEL_FN(tr_panel8, uint8_t)
TR_PANEL_FN(tr_panel16, uint16_t)
TR_PANEL_FN(tr_panel32, uint32_t)
#undef TR_PANEL_FN

/* 8-byte elements are bound by memory traffic: plain tiles. */
static void tr_tile64(uint64_t *restrict d, const uint64_t *restrict s, int64_t na, int64_t da, int64_t nb,
                      int64_t sb) {
  for (int64_t a0 = 0; a0 < na; a0 += TR_TILE) {
    int64_t a1 = a0 + TR_TILE < na ? a0 + TR_TILE : na;
    for (int64_t b0 = 0; b0 < nb; b0 += TR_TILE) {
      int64_t b1 = b0 + TR_TILE < nb ? b0 + TR_TILE : nb;
      for (int64_t a = a0; a < a1; a++) {
        uint64_t *dr = d + a * da;
        const uint64_t *sr = s + a;
        for (int64_t b = b0; b < b1; b++) dr[b] = sr[b * sb];
      }
    }
  }
}

/* The same for any element size, element by element with memcpy. */
static void tr_tile_any(uint8_t *d, const uint8_t *s, size_t es, int64_t na, int64_t da, int64_t nb, int64_t sb) {
  for (int64_t a0 = 0; a0 < na; a0 += TR_TILE) {
    int64_t a1 = a0 + TR_TILE < na ? a0 + TR_TILE : na;
    for (int64_t b0 = 0; b0 < nb; b0 += TR_TILE) {
      int64_t b1 = b0 + TR_TILE < nb ? b0 + TR_TILE : nb;
      for (int64_t a = a0; a < a1; a++)
        for (int64_t b = b0; b < b1; b++) memcpy(d + (size_t)(a * da + b) * es, s + (size_t)(a + b * sb) * es, es);
    }
  }
}

/* One 2-D tile walk: na x nb output elements, output a stride da and b
 * stride 1, source a stride 1 and b stride sb (all in elements). */
static void tr_2d(uint8_t *d, const uint8_t *s, size_t es, int64_t na, int64_t da, int64_t nb, int64_t sb) {
  switch (es) {
  case 1: tr_panel8(d, s, na, da, nb, sb); break;
  case 2: tr_panel16((uint16_t *)(void *)d, (const uint16_t *)(const void *)s, na, da, nb, sb); break;
  case 4: tr_panel32((uint32_t *)(void *)d, (const uint32_t *)(const void *)s, na, da, nb, sb); break;
  case 8: tr_tile64((uint64_t *)(void *)d, (const uint64_t *)(const void *)s, na, da, nb, sb); break;
  default: tr_tile_any(d, s, es, na, da, nb, sb); break;
  }
}

/* Whether d[a * da + b] == s[a + b * sb] for the whole 2-D walk (bytes). */
#define TR_EQ_FN(NAME, T)                                                                                          \
  static bool NAME(const T *d, const T *s, int64_t na, int64_t da, int64_t nb, int64_t sb) {                       \
    for (int64_t a0 = 0; a0 < na; a0 += TR_TILE) {                                                                 \
      int64_t a1 = a0 + TR_TILE < na ? a0 + TR_TILE : na;                                                          \
      for (int64_t b0 = 0; b0 < nb; b0 += TR_TILE) {                                                               \
        int64_t b1 = b0 + TR_TILE < nb ? b0 + TR_TILE : nb;                                                        \
        for (int64_t a = a0; a < a1; a++) {                                                                        \
          const T *dr = d + a * da, *sr = s + a;                                                                   \
          T diff = 0;                                                                                              \
          for (int64_t b = b0; b < b1; b++) diff |= (T)(dr[b] ^ sr[b * sb]);                                       \
          if (diff) return false;                                                                                  \
        }                                                                                                          \
      }                                                                                                            \
    }                                                                                                              \
    return true;                                                                                                   \
  }
TR_EQ_FN(tr_eq8, uint8_t)
TR_EQ_FN(tr_eq16, uint16_t)
TR_EQ_FN(tr_eq32, uint32_t)
TR_EQ_FN(tr_eq64, uint64_t)
#undef TR_EQ_FN

static bool tr_eq_2d(const uint8_t *d, const uint8_t *s, size_t es, int64_t na, int64_t da, int64_t nb, int64_t sb) {
  switch (es) {
  case 1: return tr_eq8(d, s, na, da, nb, sb);
  case 2: return tr_eq16((const uint16_t *)(const void *)d, (const uint16_t *)(const void *)s, na, da, nb, sb);
  case 4: return tr_eq32((const uint32_t *)(const void *)d, (const uint32_t *)(const void *)s, na, da, nb, sb);
  case 8: return tr_eq64((const uint64_t *)(const void *)d, (const uint64_t *)(const void *)s, na, da, nb, sb);
  default:
    for (int64_t a = 0; a < na; a++)
      for (int64_t b = 0; b < nb; b++)
        if (memcmp(d + (size_t)(a * da + b) * es, s + (size_t)(a + b * sb) * es, es) != 0) return false;
    return true;
  }
}

/* The walk shared by op_transpose_data (cmp false: copies, returns true)
 * and op_transpose_equal (cmp true: compares, d is only read). */
static bool tr_run(uint8_t *d, const uint8_t *sp, size_t es, int32_t rank, const int64_t *shape, const int64_t *perm,
                   bool cmp) {
  int64_t ist[TOP_RANK], n[TOP_RANK], s[TOP_RANK];
  int32_t r = 0;
  op_strides(rank, shape, ist);
  for (int32_t i = 0; i < rank; i++) {
    int64_t sz = shape[perm[i]], st = ist[perm[i]];
    if (sz == 0) return true;
    if (sz == 1) continue;
    if (r > 0 && s[r - 1] == st * sz) {
      n[r - 1] *= sz;
      s[r - 1] = st;
    } else {
      n[r] = sz;
      s[r] = st;
      r++;
    }
  }
  if (r == 0 || (r == 1 && s[0] == 1)) {
    size_t nb = (size_t)(r ? n[0] : 1) * es;
    if (cmp) return memcmp(d, sp, nb) == 0;
    memcpy(d, sp, nb);
    return true;
  }
  /* output strides (row-major over the merged dims) */
  int64_t ost[TOP_RANK], os = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    ost[i] = os;
    os *= n[i];
  }
  /* the dims the inner kernel covers: the innermost output dim and, when
   * it is not contiguous in the source, the dim that is (there is one: the
   * source's innermost dim longer than 1) */
  int32_t j = -1;
  if (s[r - 1] != 1)
    for (int32_t i = 0; i < r - 1; i++)
      if (s[i] == 1) j = i;
  /* odometer over the remaining dims */
  int32_t od[TOP_RANK], no = 0;
  for (int32_t i = 0; i < r - 1; i++)
    if (i != j) od[no++] = i;
  int64_t idx[TOP_RANK] = {0}, so = 0, doff = 0;
  for (;;) {
    uint8_t *dd = d + (size_t)doff * es;
    const uint8_t *ss = sp + (size_t)so * es;
    if (j < 0 && s[r - 1] == 1) {
      if (!cmp) memcpy(dd, ss, (size_t)n[r - 1] * es);
      else if (memcmp(dd, ss, (size_t)n[r - 1] * es) != 0) return false;
    } else if (j < 0) {
      for (int64_t b = 0; b < n[r - 1]; b++) {
        if (!cmp) memcpy(dd + (size_t)b * es, ss + (size_t)(b * s[r - 1]) * es, es);
        else if (memcmp(dd + (size_t)b * es, ss + (size_t)(b * s[r - 1]) * es, es) != 0) return false;
      }
    } else if (!cmp) {
      tr_2d(dd, ss, es, n[j], ost[j], n[r - 1], s[r - 1]);
    } else if (!tr_eq_2d(dd, ss, es, n[j], ost[j], n[r - 1], s[r - 1])) {
      return false;
    }
    int32_t k = no - 1;
    for (; k >= 0; k--) {
      int32_t dim = od[k];
      so += s[dim];
      doff += ost[dim];
      if (++idx[k] < n[dim]) break;
      so -= s[dim] * n[dim];
      doff -= ost[dim] * n[dim];
      idx[k] = 0;
    }
    if (k < 0) return true;
  }
}

void op_transpose_data(void *dst, const void *src, size_t es, int32_t rank, const int64_t *shape,
                       const int64_t *perm) {
  tr_run(dst, src, es, rank, shape, perm, false);
}

bool op_transpose_equal(const void *data, const void *src, size_t es, int32_t rank, const int64_t *shape,
                        const int64_t *perm) {
  return tr_run((uint8_t *)(uintptr_t)data, src, es, rank, shape, perm, true);
}

/* ---- required inputs ---- */

int op_need_ints(mil_infer_ctx *c, const char *name, int64_t *out, int max) {
  int n = op_known_ints(c, name, out, max);
  if (n >= 0) return n;
  const mil_value *v = op_val(c, name);
  if (v && v->kind == MIL_VAL_TENSOR && v->numel > max)
    return op_fail(c, "input '%s' has %lld values, more than supported (%d)", name, (long long)v->numel, max), -1;
  if (!op_has(c, name)) return op_fail(c, "required input '%s' is missing", name), -1;
  const mil_type *t = op_type(c, name);
  bool is_bool = t && t->kind == MIL_TYPE_TENSOR && t->dtype == MIL_DT_BOOL;
  return op_fail(c, "input '%s' must be a known %s constant, got %s computed at run time", name,
                 is_bool ? "bool" : "integer", op_tstr(c, t)),
         -1;
}

bool op_need_int(mil_infer_ctx *c, const char *name, int64_t *out) {
  int64_t buf[1];
  int n = op_need_ints(c, name, buf, 1);
  if (n < 0) return false;
  if (n != 1) return op_fail(c, "input '%s' must be a single integer, got %d values", name, n), false;
  *out = buf[0];
  return true;
}

bool op_int_or(mil_infer_ctx *c, const char *name, int64_t dflt, int64_t *out) {
  if (!op_has(c, name)) {
    *out = dflt;
    return true;
  }
  return op_need_int(c, name, out);
}

bool op_bool_or(mil_infer_ctx *c, const char *name, bool dflt, bool *out) {
  int64_t v;
  if (!op_int_or(c, name, dflt, &v)) return false;
  *out = v != 0;
  return true;
}

bool op_need_rank(mil_infer_ctx *c, const char *name, const mil_type *t) {
  if (t && t->kind == MIL_TYPE_TENSOR && t->rank >= 0 && t->rank <= TOP_RANK) return true;
  op_fail(c, "input '%s' must have a known rank (at most %d), got %s", name, TOP_RANK, op_tstr(c, t));
  return false;
}

/* ---- dim arithmetic ---- */

mil_dim op_dim_mul(mil_infer_ctx *c, mil_dim d, int64_t k) {
  int64_t r;
  if (d.size >= 0) return __builtin_mul_overflow(d.size, k, &r) ? op_dim_sym(c) : op_dim(r);
  return k == 1 ? d : op_dim_sym(c);
}

mil_dim op_dim_div(mil_infer_ctx *c, mil_dim d, int64_t k) {
  if (d.size >= 0) return op_dim(k ? floordiv(d.size, k) : 0);
  return k == 1 ? d : op_dim_sym(c);
}

mil_dim op_dim_add(mil_infer_ctx *c, mil_dim d, int64_t k) {
  int64_t r;
  if (d.size >= 0) return __builtin_add_overflow(d.size, k, &r) ? op_dim_sym(c) : op_dim(r);
  return k == 0 ? d : op_dim_sym(c);
}

const mil_value *op_in_value(mil_infer_ctx *c, const char *name) {
  const mil_value *v = op_val(c, name);
  if (v || !op_has(c, name)) return v;
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  mil_value *out = NULL;
  if (sv && op_in_symval(c, name, 0, sv) && !op_symval_has_sym(sv) && op_foldable_dtype(sv->dtype)) {
    out = op_new_value(c, sv->dtype, sv->rank, sv->shape, sv->scalar);
    for (int64_t k = 0; out && k < sv->n; k++) mil_value_set_f64(out, k, sv->e[k].x);
  }
  op_tmp_free(c, sv, sizeof *sv);
  return out;
}

/* conv through oneDNN's convolution primitive (fp32, 1D and 2D, any
 * groups incl. depthwise, strides, dilations and pads, bias), used by conv.c when the
 * build found libdnnl (MIL_HAVE_DNNL) and the weight is a const of the
 * interpreter (fp32, or fp16 / bf16 / fp64 widened for the reorder).
 *
 * The primitive and the weight reordered into the layout oneDNN picks
 * (format_tag any) are made once per interpreter family, kept in its cache
 * keyed by the const's bytes, the geometry and the fused activation. The
 * reordered copy is the only one kept: the weight file's pages of the
 * plain weight are given back once it is made. Activations stay in plain
 * NCHW at the op boundary. The family's threads execute a cached primitive
 * at once: each interpreter has its own stream, memory objects (kept by its
 * pool, interp_dnnl_call_begin) and scratchpad (user scratchpad mode, the
 * buffer one of its work buffers), which oneDNN documents as safe for
 * concurrent execution. This file also holds the helpers linear_dnnl.c
 * shares (dnnl_util.h). A conv paired with its activation (fuse.c)
 * applies it to its output here.
 *
 * oneDNN sums the products in its own order (fp32 accumulation, as the
 * im2col + sgemm path does). */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#ifdef MIL_HAVE_DNNL
#include <dnnl.h>
#include <pthread.h>

#include "interp/dnnl_util.h"

static dnnl_engine_t g_engine;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void) {
  if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success) g_engine = NULL;
}

dnnl_engine_t interp_dnnl_engine(void) {
  pthread_once(&g_engine_once, engine_init);
  return g_engine;
}

typedef struct conv_key {
  const void *w;   /* the weight const's bytes */
  int64_t w_dtype; /* and their dtype */
  int64_t n, cin, cout, groups, bias, in[2], out[2], k[2], s[2], d[2], pb[2];
  int64_t full_in, full_out; /* a band's tensors' heights (rows strided by them), 0 for a whole conv */
  int32_t nhwc;              /* INTERP_NHWC_IN / _OUT: x / the result in NHWC order at the op's boundary */
  int32_t act;  /* INTERP_FUSE_*: the activation applied as a post-op */
  float lo, hi; /* its bounds (INTERP_FUSE_CLIP) */
} conv_key;

typedef struct conv_prim {
  dnnl_primitive_t prim;
  dnnl_memory_desc_t src_md, dst_md, bias_md, w_md, scratch_md;
  dnnl_memory_desc_t src_plain, dst_plain; /* NCHW at the op's boundary */
  dnnl_primitive_t to_src, from_dst;       /* reorders when the primitive's layouts are blocked, else NULL */
  void *w;          /* weight in w_md's layout */
  bool w_shared;    /* w belongs to another primitive of the same cache (a band's) */
  size_t scratch_bytes;
} conv_prim;

static void prim_free(void *p) {
  conv_prim *cp = p;
  if (!cp) return;
  if (cp->prim) dnnl_primitive_destroy(cp->prim);
  if (cp->to_src) dnnl_primitive_destroy(cp->to_src);
  if (cp->from_dst) dnnl_primitive_destroy(cp->from_dst);
  if (!cp->w_shared) free(cp->w);
  free(cp);
}

/* ---- per-interpreter streams and memory objects ---- */

typedef struct call_mems {
  int n;
  dnnl_memory_t m[INTERP_DNNL_MAX_ARGS];
} call_mems;

static void mems_free(void *p) {
  call_mems *cm = p;
  for (int i = 0; i < cm->n; i++)
    if (cm->m[i]) dnnl_memory_destroy(cm->m[i]);
  free(cm);
}

static void stream_free(void *p) { dnnl_stream_destroy(p); }

static const char k_stream_key = 0; /* its address keys the pool's stream */

static bool make_mems(dnnl_memory_t *m, int n, const dnnl_memory_desc_t *const *mds) {
  for (int i = 0; i < n; i++)
    if (dnnl_memory_create(&m[i], mds[i], g_engine, DNNL_MEMORY_NONE) != dnnl_success) return false;
  return true;
}

static bool set_handles(dnnl_memory_t *m, int n, void *const *data) {
  for (int i = 0; i < n; i++)
    if (dnnl_memory_set_data_handle(m[i], data[i]) != dnnl_success) return false;
  return true;
}

bool interp_dnnl_call_begin(interp_dnnl_call *c, interp_bufpool *pool, const void *key, int n,
                            const dnnl_memory_desc_t *const *mds, void *const *data) {
  memset(c, 0, sizeof *c);
  c->n = n;
  c->m = c->own_m;
  if (!interp_dnnl_engine() || n > INTERP_DNNL_MAX_ARGS) return false;
  dnnl_stream_t st = pool ? interp_bufpool_obj(pool, &k_stream_key) : NULL;
  if (pool && !st && dnnl_stream_create(&st, g_engine, dnnl_stream_default_flags) == dnnl_success &&
      !interp_bufpool_put_obj(pool, &k_stream_key, st, stream_free)) {
    dnnl_stream_destroy(st);
    st = NULL;
  }
  call_mems *cm = st && key ? interp_bufpool_obj(pool, key) : NULL;
  if (st && key && !cm && (cm = calloc(1, sizeof *cm)) != NULL) {
    cm->n = n;
    if (!make_mems(cm->m, n, mds) || !interp_bufpool_put_obj(pool, key, cm, mems_free)) {
      mems_free(cm);
      cm = NULL;
    }
  }
  if (cm && cm->n == n) {
    c->st = st;
    c->m = cm->m;
    return set_handles(c->m, n, data);
  }
  c->own = true; /* this call's own objects */
  return make_mems(c->own_m, n, mds) && set_handles(c->own_m, n, data) &&
         dnnl_stream_create(&c->st, g_engine, dnnl_stream_default_flags) == dnnl_success;
}

void interp_dnnl_call_end(interp_dnnl_call *c) {
  if (!c->own) return;
  if (c->st) dnnl_stream_destroy(c->st);
  for (int i = 0; i < c->n; i++)
    if (c->own_m[i]) dnnl_memory_destroy(c->own_m[i]);
}

bool interp_dnnl_reorder(const dnnl_memory_desc_t *from_md, const void *from, const dnnl_memory_desc_t *to_md,
                         void *to) {
  dnnl_engine_t eng = interp_dnnl_engine();
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t rp = NULL;
  dnnl_memory_t m_in = NULL, m_out = NULL;
  dnnl_stream_t st = NULL;
  bool ok = eng && dnnl_reorder_primitive_desc_create(&rpd, from_md, eng, to_md, eng, NULL) == dnnl_success &&
            dnnl_primitive_create(&rp, rpd) == dnnl_success &&
            dnnl_memory_create(&m_in, from_md, eng, (void *)from) == dnnl_success &&
            dnnl_memory_create(&m_out, to_md, eng, to) == dnnl_success &&
            dnnl_stream_create(&st, eng, dnnl_stream_default_flags) == dnnl_success;
  if (ok) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m_in}, {DNNL_ARG_TO, m_out}};
    ok = dnnl_primitive_execute(rp, st, 2, args) == dnnl_success && dnnl_stream_wait(st) == dnnl_success;
  }
  if (st) dnnl_stream_destroy(st);
  if (m_in) dnnl_memory_destroy(m_in);
  if (m_out) dnnl_memory_destroy(m_out);
  if (rp) dnnl_primitive_destroy(rp);
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  return ok;
}

/* Reorders the plain weight wv into cp->w (layout cp->w_md); a weight of
 * another float dtype is widened for it into a buffer freed after. */
static bool reorder_weight(conv_prim *cp, const dnnl_memory_desc_t *plain, const mil_value *wv) {
  size_t sz = dnnl_memory_desc_get_size(&cp->w_md);
  float *tmp = NULL;
  const float *w = interp_f32(NULL, wv, &tmp); /* a copy only when widened */
  cp->w = w ? malloc(sz ? sz : 1) : NULL;
  bool ok = cp->w && interp_dnnl_reorder(plain, w, &cp->w_md, cp->w);
  free(tmp);
  return ok;
}

/* A reorder from a to b, or NULL (*r) when the layouts are the same. */
static bool make_reorder(dnnl_primitive_t *r, const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) {
  *r = NULL;
  if (dnnl_memory_desc_equal(a, b)) return true;
  dnnl_primitive_desc_t rpd = NULL;
  bool ok = dnnl_reorder_primitive_desc_create(&rpd, a, g_engine, b, g_engine, NULL) == dnnl_success &&
            dnnl_primitive_create(r, rpd) == dnnl_success;
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  return ok;
}

static bool reorder_run(dnnl_primitive_t r, dnnl_stream_t st, dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return dnnl_primitive_execute(r, st, 2, args) == dnnl_success;
}

/* Whether the primitive takes blocked activations (reordered at the op
 * boundary): they pay off for spatial kernels; 1x1 convs stay plain (a
 * GEMM on NCHW, no reorders). A band of a large conv (conv_banded) is
 * always blocked. */
static bool use_blocked(const conv_key *k) {
  return (k->k[0] * k->k[1] > 1 || k->nhwc) && !getenv("MIL_INTERP_DNNL_CONV_PLAIN");
}

/* The fused activation as an eltwise post-op (fuse.c): relu (max with 0,
 * negative inputs times alpha 0; a NaN stays NaN) or clip (alpha lo,
 * beta hi), applied to the fp32 sum after the bias. */
static bool set_act(dnnl_primitive_attr_t attr, const conv_key *k) {
  if (k->act == INTERP_FUSE_NONE) return true;
  dnnl_post_ops_t po = NULL;
  bool ok = dnnl_post_ops_create(&po) == dnnl_success &&
            dnnl_post_ops_append_eltwise(po, 1.0f, k->act == INTERP_FUSE_RELU ? dnnl_eltwise_relu : dnnl_eltwise_clip,
                                         k->act == INTERP_FUSE_RELU ? 0.0f : k->lo,
                                         k->act == INTERP_FUSE_RELU ? 0.0f : k->hi) == dnnl_success &&
            dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
  if (po) dnnl_post_ops_destroy(po);
  return ok;
}

/* NCHW dims d; rows strided by a taller tensor's full_h rows when
 * full_h > 0 (a band of it); in NHWC order when nhwc. */
static bool plain_md(dnnl_memory_desc_t *md, const dnnl_dims_t d, int64_t full_h, bool nhwc) {
  if (nhwc) return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nhwc) == dnnl_success;
  if (full_h <= 0) return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nchw) == dnnl_success;
  dnnl_dims_t st = {d[1] * full_h * d[3], full_h * d[3], d[3], 1};
  return dnnl_memory_desc_init_by_strides(md, 4, d, dnnl_f32, st) == dnnl_success;
}

/* The primitive for k; its weight reordered from wv, or share's weight
 * when share (a cached primitive of the same conv) has the same layout. */
static conv_prim *prim_make(const conv_key *k, const mil_value *wv, const conv_prim *share) {
  conv_prim *cp = calloc(1, sizeof *cp);
  if (!cp) return NULL;
  dnnl_dims_t sd = {k->n, k->cin, k->in[0], k->in[1]}, dd = {k->n, k->cout, k->out[0], k->out[1]};
  dnnl_dims_t wd = {k->groups, k->cout / k->groups, k->cin / k->groups, k->k[0], k->k[1]}, bd = {k->cout};
  dnnl_dims_t strides = {k->s[0], k->s[1]}, dil = {k->d[0] - 1, k->d[1] - 1}, pl = {k->pb[0], k->pb[1]}, pr;
  /* the pad after that the output size needs (0 when a stride leaves
   * input columns unread; oneDNN checks the sizes agree) */
  for (int i = 0; i < 2; i++) {
    pr[i] = (k->out[i] - 1) * k->s[i] + (k->k[i] - 1) * k->d[i] + 1 - k->in[i] - k->pb[i];
    if (pr[i] < 0 && pr[i] > -k->s[i]) pr[i] = 0;
  }
  dnnl_memory_desc_t wplain, wany, sany, dany;
  bool blocked = use_blocked(k);
  dnnl_convolution_desc_t cd;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  bool ok = pr[0] >= 0 && pr[1] >= 0 &&
            plain_md(&cp->src_plain, sd, k->full_in, k->nhwc & INTERP_NHWC_IN) &&
            plain_md(&cp->dst_plain, dd, k->full_out, k->nhwc & INTERP_NHWC_OUT) &&
            dnnl_memory_desc_init_by_tag(&sany, 4, sd, dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&dany, 4, dd, dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&cp->bias_md, 1, bd, dnnl_f32, dnnl_a) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&wplain, 5, wd, dnnl_f32, dnnl_goihw) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&wany, 5, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
            dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                                       &sany, &wany, k->bias ? &cp->bias_md : NULL, &dany,
                                                       strides, dil, pl, pr) == dnnl_success &&
            dnnl_primitive_attr_create(&attr) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
            set_act(attr, k) && dnnl_primitive_desc_create(&pd, &cd, attr, g_engine, NULL) == dnnl_success;
  if (ok) {
    cp->w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    cp->src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    cp->dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    ok = make_reorder(&cp->to_src, &cp->src_plain, &cp->src_md) && make_reorder(&cp->from_dst, &cp->dst_md, &cp->dst_plain);
    cp->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    cp->scratch_bytes = dnnl_memory_desc_get_size(&cp->scratch_md);
    ok = ok && dnnl_primitive_create(&cp->prim, pd) == dnnl_success;
    if (ok && share && dnnl_memory_desc_equal(&share->w_md, &cp->w_md)) cp->w = share->w, cp->w_shared = true;
    else ok = ok && reorder_weight(cp, &wplain, wv);
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (!ok) {
    prim_free(cp);
    return NULL;
  }
  return cp;
}

/* The scratchpad and the blocked copies of src and dst are the run's work
 * buffers (bufpool.c: kept by the interpreter, no fresh pages per call),
 * or malloc'ed for this call without a pool. cached: cp is the cache's
 * (the interpreter's memory objects for it are kept). */
static bool prim_run(const conv_prim *cp, bool cached, interp_bufpool *pool, const float *x, const float *bias,
                     float *out) {
  size_t sb = cp->to_src ? dnnl_memory_desc_get_size(&cp->src_md) : 0;
  size_t db = cp->from_dst ? dnnl_memory_desc_get_size(&cp->dst_md) : 0;
  void *own[3] = {NULL, NULL, NULL};
  size_t want[3] = {cp->scratch_bytes, sb, db};
  void *buf[3];
  for (int i = 0; i < 3; i++) {
    buf[i] = want[i] ? interp_bufpool_work(pool, i, want[i]) : NULL;
    if (want[i] && !buf[i]) buf[i] = own[i] = malloc(want[i]);
  }
  void *scratch = buf[0], *sbuf = buf[1], *dbuf = buf[2];
  /* src, weights, dst, scratchpad, bias, plain src, plain dst */
  const dnnl_memory_desc_t *mds[7] = {&cp->src_md,  &cp->w_md,      &cp->dst_md,  &cp->scratch_md,
                                      &cp->bias_md, &cp->src_plain, &cp->dst_plain};
  void *data[7] = {sb ? sbuf : (void *)x, cp->w, db ? dbuf : out, scratch, (void *)bias, (void *)x, out};
  interp_dnnl_call call = {0}; /* call_end is a no-op when begin did not run */
  bool ok = (!cp->scratch_bytes || scratch) && (!sb || sbuf) && (!db || dbuf) &&
            interp_dnnl_call_begin(&call, pool, cached ? cp : NULL, 7, mds, data);
  dnnl_memory_t *m = call.m;
  if (ok && sb) ok = reorder_run(cp->to_src, call.st, m[5], m[0]);
  if (ok) {
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, m[0]},
                               {DNNL_ARG_WEIGHTS, m[1]},
                               {DNNL_ARG_DST, m[2]},
                               {DNNL_ARG_SCRATCHPAD, m[3]},
                               {DNNL_ARG_BIAS, m[4]}};
    ok = dnnl_primitive_execute(cp->prim, call.st, bias ? 5 : 4, args) == dnnl_success;
  }
  if (ok && db) ok = reorder_run(cp->from_dst, call.st, m[2], m[6]);
  if (ok) ok = dnnl_stream_wait(call.st) == dnnl_success;
  interp_dnnl_call_end(&call);
  free(own[0]), free(own[1]), free(own[2]);
  return ok;
}

/* The cached primitive for k (made on first use; share as prim_make's).
 * When the cache cannot keep it, *tmp is the caller's to free. Once a
 * primitive holds its reordered copy, the weight file's pages of the plain
 * weight are given back (read from the file again if anything reads them). */
static conv_prim *prim_get(interp_run *r, const conv_key *k, const mil_value *wv, const conv_prim *share,
                           conv_prim **tmp) {
  *tmp = NULL;
  conv_prim *cp = interp_cache_get_obj(r->cache, k, sizeof *k);
  if (cp) return cp;
  conv_prim *made = prim_make(k, wv, share);
  if (!made) return NULL;
  cp = interp_cache_put_obj(r->cache, k, sizeof *k, made, prim_free);
  if (!cp) *tmp = cp = made;
  else if (cp == made) mil_value_release_pages(wv);
  return cp;
}

/* Activations above this many bytes (the larger of a conv's input and
 * output) run in bands of output rows (conv_banded): 4 MB, where banding
 * measured as fast as whole-tensor blocked copies (resnet, efficientnet,
 * mnasnet) and the blocked copies' work buffers would be kept at their
 * size; MIL_INTERP_BAND_MB sets it for measuring. */
static double band_min_bytes(void) {
  const char *e = getenv("MIL_INTERP_BAND_MB");
  return (e && *e ? atof(e) : 4.0) * 1024 * 1024;
}

/* Whether k's input or output exceeds band_min_bytes. */
static bool large(const conv_key *k) {
  double in_b = 4.0 * (double)k->n * (double)(k->cin * k->in[0] * k->in[1]);
  double out_b = 4.0 * (double)k->n * (double)(k->cout * k->out[0] * k->out[1]);
  return (in_b > out_b ? in_b : out_b) > band_min_bytes();
}

bool interp_conv_dnnl_bands(int64_t n, int64_t cin, int64_t cout, const int64_t in[3], const int64_t outsz[3],
                            const int64_t k[3]) {
  conv_key key; /* an NCHW conv: use_blocked reads the kernel's size */
  memset(&key, 0, sizeof key);
  key.n = n, key.cin = cin, key.cout = cout;
  key.in[0] = in[1], key.in[1] = in[2], key.out[0] = outsz[1], key.out[1] = outsz[2], key.k[0] = k[1], key.k[1] = k[2];
  return use_blocked(&key) && !getenv("MIL_INTERP_NO_DNNL_CONV") && in[0] == 1 && outsz[0] == 1 && k[0] == 1 &&
         large(&key);
}

/* A conv run band by band of output rows: each band reads the input rows
 * it needs (its own top / bottom padding where it meets the tensor's
 * edge), convolved by a primitive of the band's size, and the fused
 * activation is applied to the band's rows while they are in the cache.
 * On NCHW (a large conv with a spatial kernel) a band's rows are strided
 * by the whole tensor's height and reordered into oneDNN's blocked layout
 * in a work buffer of about 1 MB: whole-tensor blocked copies of a
 * 1024x1024 activation cost their size twice in memory (unet1024 fp32: 606
 * MB peak RSS against 386 MB plain), and plain NCHW runs oneDNN's
 * GEMM-based kernel, about half as fast as its blocked direct one. In NHWC
 * order (a conv of a chain, fuse.c) a band is a contiguous run of rows
 * that oneDNN's NHWC kernels read as they are. The bands' few primitives
 * (first, middle, last) share one reordered weight. An fp16 input is
 * widened band by band, and an fp16 output rounded band by band (no
 * whole-tensor fp32 copies; n == 1). Every output element is the same sum
 * of the same products as in the whole conv (the order of oneDNN's kernel
 * for a band). */
static bool conv_banded(interp_run *r, const conv_key *whole, const float *x, const uint16_t *xh, const mil_value *wv,
                        const float *bias, float *out, uint16_t *outh, bool post_op) {
  int64_t ih = whole->in[0], iw = whole->in[1], oh = whole->out[0], ow = whole->out[1];
  int64_t kh = whole->k[0], sh = whole->s[0], dh = whole->d[0], pt = whole->pb[0];
  bool x_nhwc = whole->nhwc & INTERP_NHWC_IN, o_nhwc = whole->nhwc & INTERP_NHWC_OUT;
  const char *e = getenv("MIL_INTERP_BAND_KB");
  double target = (e && *e ? atof(e) : 1024.0) * 1024;
  double row_bytes = 4.0 * (double)whole->n * ((double)((whole->cin + 7) / 8 * 8) * (double)(iw * sh) +
                                                (double)((whole->cout + 7) / 8 * 8) * (double)ow);
  int64_t rows = (int64_t)(target / row_bytes);
  if (rows < 1) rows = 1;
  if (rows > oh) rows = oh;
  const conv_prim *share = NULL;
  bool ok = true;
  int64_t cin = whole->cin, cout = whole->cout;
  /* fp16 rows are widened into, and rounded from, dense fp32 bands */
  float *xb = xh ? interp_bufpool_work(r->pool, 4, (size_t)(cin * ((rows - 1) * sh + (kh - 1) * dh + 1) * iw) * 4) : NULL;
  float *ob = outh ? interp_bufpool_work(r->pool, 5, (size_t)(cout * rows * ow) * 4) : NULL;
  if ((xh && (!xb || whole->n != 1)) || (outh && (!ob || whole->n != 1)) || ((x_nhwc || o_nhwc) && whole->n != 1))
    return false;
  for (int64_t o0 = 0; ok && o0 < oh; o0 += rows) {
    int64_t o1 = o0 + rows < oh ? o0 + rows : oh, orows = o1 - o0;
    int64_t a = o0 * sh - pt, b = (o1 - 1) * sh - pt + (kh - 1) * dh + 1;
    int64_t i0 = a > 0 ? a : 0, i1 = b < ih ? b : ih;
    if (i1 <= i0) return false; /* rows of padding only: the caller's other paths */
    conv_key k = *whole;
    k.in[0] = i1 - i0, k.out[0] = orows, k.pb[0] = i0 - a;
    k.full_in = xh || x_nhwc ? 0 : ih, k.full_out = outh || o_nhwc ? 0 : oh;
    if (xh && x_nhwc) mil_fp16_to_fp32_array(xh + i0 * iw * cin, xb, (size_t)((i1 - i0) * iw * cin));
    else if (xh)
      for (int64_t ch = 0; ch < cin; ch++)
        mil_fp16_to_fp32_array(xh + (ch * ih + i0) * iw, xb + ch * (i1 - i0) * iw, (size_t)((i1 - i0) * iw));
    const float *src = xh ? xb : x + i0 * iw * (x_nhwc ? cin : 1);
    float *dst = outh ? ob : out + o0 * ow * (o_nhwc ? cout : 1);
    conv_prim *tmp = NULL, *cp = prim_get(r, &k, wv, share, &tmp);
    ok = cp && prim_run(cp, !tmp, r->pool, src, bias, dst);
    if (!tmp && cp && !share) share = cp;
    prim_free(tmp);
    if (o_nhwc) /* contiguous rows: the activation at once */
      ok = ok && interp_conv_act(r, post_op, dst, cout * orows * ow, o0 * ow * cout);
    else /* each channel's rows of the band (dense in ob, strided in out) */
      for (int64_t p = 0; ok && p < whole->n * cout; p++)
        ok = interp_conv_act(r, post_op, outh ? ob + p * orows * ow : out + (p * oh + o0) * ow, orows * ow,
                             (p * oh + o0) * ow);
    if (ok && outh && o_nhwc) mil_fp32_to_fp16_array(ob, outh + o0 * ow * cout, (size_t)(orows * ow * cout));
    else if (ok && outh)
      for (int64_t ch = 0; ch < cout; ch++)
        mil_fp32_to_fp16_array(ob + ch * orows * ow, outh + (ch * oh + o0) * ow, (size_t)(orows * ow));
  }
  return ok;
}

/* Whether a conv runs in bands (conv_banded): on NCHW, a large one with a
 * spatial kernel (interp_conv_dnnl_bands); in NHWC order (one image), one
 * with an fp16 operand or a fused activation (applied, and the fp16 result
 * rounded, while each band is in the cache) or a large one. */
static bool banded(const conv_key *k, bool fp16, const interp_run *r) {
  if (!k->nhwc) return use_blocked(k) && large(k); /* interp_conv_dnnl_bands' rule (its other checks done) */
  if (k->n != 1 || getenv("MIL_INTERP_NO_NHWC_BANDS")) return false;
  return fp16 || r->fuse || large(k);
}

bool interp_conv_dnnl(interp_run *r, const float *x, const uint16_t *xh, const mil_value *wv, const float *bias,
                      float *out, uint16_t *outh, int64_t n, int64_t cin, int64_t cout, int64_t groups,
                      const int64_t in[3], const int64_t outsz[3], const int64_t k[3], const int64_t s[3],
                      const int64_t d[3], const int64_t pb[3]) {
  if (!r->cache || in[0] != 1 || outsz[0] != 1 || k[0] != 1) return false;
  /* the weight keys the cache: a const's bytes, which never change */
  if (!interp_weight_stable(r, wv, cout * (cin / (groups > 0 ? groups : 1)) * k[1] * k[2])) return false;
  if (getenv("MIL_INTERP_NO_DNNL_CONV")) return false;
  if (!interp_dnnl_engine()) return false;
  conv_key key;
  memset(&key, 0, sizeof key); /* padding bytes too: the key is compared bytewise */
  key.w = mil_value_data(wv), key.w_dtype = wv->type->dtype;
  key.n = n, key.cin = cin, key.cout = cout, key.groups = groups, key.bias = bias != NULL;
  for (int i = 0; i < 2; i++) {
    key.in[i] = in[1 + i], key.out[i] = outsz[1 + i], key.k[i] = k[1 + i];
    key.s[i] = s[1 + i], key.d[i] = d[1 + i], key.pb[i] = pb[1 + i];
  }
  key.nhwc = r->nhwc & (INTERP_NHWC_IN | INTERP_NHWC_OUT); /* a conv of a chain (fuse.c) */
  /* the activation: applied here, in place, after the primitive (an extra
   * pass over the output while it is still in the cache), exactly as the
   * activation kernels compute it. MIL_INTERP_DNNL_POSTOP=1 makes it a
   * post-op of oneDNN's direct (blocked) kernels instead, saving that pass
   * (mobilenet_v2 fp32 about 5% faster), but their max/min turn a NaN into
   * the lower bound (the kernels keep NaN). Never on the GEMM-based plain
   * convs: oneDNN applies post-ops there element by element through its
   * reference code (mobilenet_v2's 1x1 16->96 conv at 112x112: 1.2 ->
   * 9.7 ms). */
  bool post_op = false;
  if (r->fuse) {
    key.act = r->fuse->kind, key.lo = r->fuse->lo, key.hi = r->fuse->hi;
    post_op = (r->fuse->kind == INTERP_FUSE_RELU || r->fuse->kind == INTERP_FUSE_CLIP) && use_blocked(&key) &&
              getenv("MIL_INTERP_DNNL_POSTOP");
    if (!post_op) key.act = INTERP_FUSE_NONE, key.lo = key.hi = 0;
  }
  if (banded(&key, xh || outh, r)) return conv_banded(r, &key, x, xh, wv, bias, out, outh, post_op);
  if (xh || outh) return false;
  conv_prim *tmp = NULL, *cp = prim_get(r, &key, wv, NULL, &tmp);
  bool ok = cp && prim_run(cp, !tmp, r->pool, x, bias, out) && interp_conv_act(r, post_op, out, n * cout * outsz[1] * outsz[2], 0);
  prim_free(tmp);
  return ok;
}

#else

bool interp_conv_dnnl(interp_run *r, const float *x, const uint16_t *xh, const mil_value *wv, const float *bias,
                      float *out, uint16_t *outh, int64_t n, int64_t cin, int64_t cout, int64_t groups,
                      const int64_t in[3], const int64_t outsz[3], const int64_t k[3], const int64_t s[3],
                      const int64_t d[3], const int64_t pb[3]) {
  (void)r, (void)x, (void)xh, (void)wv, (void)bias, (void)out, (void)outh, (void)n, (void)cin, (void)cout, (void)groups;
  (void)in, (void)outsz, (void)k, (void)s, (void)d, (void)pb;
  return false;
}

bool interp_conv_dnnl_bands(int64_t n, int64_t cin, int64_t cout, const int64_t in[3], const int64_t outsz[3],
                            const int64_t k[3]) {
  (void)n, (void)cin, (void)cout, (void)in, (void)outsz, (void)k;
  return false;
}

#endif

/* Products with a constant weight (linear; matmul whose y is a const with
 * no batch axes) through oneDNN's matmul primitive, used by linear.c when
 * the build found libdnnl (MIL_HAVE_DNNL) and the weight is a const of the
 * interpreter (interp_weight_stable).
 *
 * The primitive and the weight reordered once into the layout oneDNN picks
 * (format_tag any: its brgemm kernels' blocked panels) are kept in the
 * interpreter family's cache, keyed by the const's bytes and the
 * product's sizes: dnnl_sgemm packs the weight into those panels again at
 * every call (measured: 5-15% of a transformer layer's products). The
 * bias is the primitive's (added to each fp32 sum). Several threads may
 * execute one cached primitive at once: each interpreter has its own
 * stream, memory objects and scratchpad (conv_dnnl.c says the same).
 *
 * The packed copy is the only one kept: an fp16 weight is widened for
 * packing into a buffer freed after it (no fp32 copy in the cache), and
 * the pages of a weight file's mapping that held the plain weight are
 * given back (read from the file again if another op reads them), so a
 * model's resident weights stay about their fp32 size.
 *
 * The sums are fp32 in oneDNN's order, as dnnl_sgemm's are. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#ifdef MIL_HAVE_DNNL
#include <dnnl.h>

#include "interp/dnnl_util.h"

typedef struct lin_key {
  const void *w; /* the const's bytes */
  int64_t dtype, m, k, n;
  int32_t w_nk; /* the weight is (N, K) (linear, transpose_y), else (K, N) */
  int32_t bias;
} lin_key;

typedef struct lin_prim {
  dnnl_primitive_t prim;
  dnnl_memory_desc_t src_md, w_md, dst_md, bias_md, scratch_md;
  size_t scratch_bytes;
  void *w; /* the weight in w_md's layout */
} lin_prim;

static void lin_free(void *p) {
  lin_prim *lp = p;
  if (!lp) return;
  if (lp->prim) dnnl_primitive_destroy(lp->prim);
  free(lp->w);
  free(lp);
}

static lin_prim *lin_make(const lin_key *k, const mil_value *wv) {
  dnnl_engine_t eng = interp_dnnl_engine();
  lin_prim *lp = eng ? calloc(1, sizeof *lp) : NULL;
  if (!lp) return NULL;
  dnnl_dims_t sd = {k->m, k->k}, wd = {k->k, k->n}, dd = {k->m, k->n}, bd = {1, k->n};
  dnnl_memory_desc_t wplain, wany;
  dnnl_matmul_desc_t md;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  bool ok = dnnl_memory_desc_init_by_tag(&lp->src_md, 2, sd, dnnl_f32, dnnl_ab) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&lp->dst_md, 2, dd, dnnl_f32, dnnl_ab) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&lp->bias_md, 2, bd, dnnl_f32, dnnl_ab) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&wplain, 2, wd, dnnl_f32, k->w_nk ? dnnl_ba : dnnl_ab) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
            dnnl_matmul_desc_init(&md, &lp->src_md, &wany, k->bias ? &lp->bias_md : NULL, &lp->dst_md) ==
                dnnl_success &&
            dnnl_primitive_attr_create(&attr) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
            dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL) == dnnl_success;
  if (ok) {
    lp->w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    lp->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    lp->scratch_bytes = dnnl_memory_desc_get_size(&lp->scratch_md);
    size_t wb = dnnl_memory_desc_get_size(&lp->w_md);
    float *tmp = NULL;
    const float *w = interp_f32(NULL, wv, &tmp); /* a copy only when widened */
    lp->w = malloc(wb ? wb : 1);
    ok = w && lp->w && dnnl_primitive_create(&lp->prim, pd) == dnnl_success &&
         interp_dnnl_reorder(&wplain, w, &lp->w_md, lp->w);
    free(tmp);
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (!ok) {
    lin_free(lp);
    return NULL;
  }
  return lp;
}

/* cached: lp is the cache's (the interpreter's memory objects for it are kept) */
static bool lin_run(const lin_prim *lp, bool cached, interp_bufpool *pool, const float *x, const float *bias,
                    float *out) {
  void *own = NULL, *scratch = lp->scratch_bytes ? interp_bufpool_work(pool, 0, lp->scratch_bytes) : NULL;
  if (lp->scratch_bytes && !scratch) scratch = own = malloc(lp->scratch_bytes);
  /* src, weights, dst, scratchpad, bias */
  const dnnl_memory_desc_t *mds[5] = {&lp->src_md, &lp->w_md, &lp->dst_md, &lp->scratch_md, &lp->bias_md};
  void *data[5] = {(void *)x, lp->w, out, scratch, (void *)bias};
  interp_dnnl_call call = {0}; /* call_end is a no-op when begin did not run */
  bool ok = (!lp->scratch_bytes || scratch) && interp_dnnl_call_begin(&call, pool, cached ? lp : NULL, 5, mds, data);
  if (ok) {
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, call.m[0]},
                               {DNNL_ARG_WEIGHTS, call.m[1]},
                               {DNNL_ARG_DST, call.m[2]},
                               {DNNL_ARG_SCRATCHPAD, call.m[3]},
                               {DNNL_ARG_BIAS, call.m[4]}};
    ok = dnnl_primitive_execute(lp->prim, call.st, bias ? 5 : 4, args) == dnnl_success &&
         dnnl_stream_wait(call.st) == dnnl_success;
  }
  interp_dnnl_call_end(&call);
  free(own);
  return ok;
}

bool interp_linear_dnnl(interp_run *r, const float *x, const mil_value *wv, bool w_nk, const float *bias, float *out,
                        int64_t m, int64_t k, int64_t n) {
  /* one row (a classifier's last layer): dnnl_sgemm's matrix-vector
   * product streams the weight faster than the primitive does (measured
   * 0.25 against 0.30 ms for mobilenet_v3_small's two; equal from 2 rows,
   * the primitive ahead from 4: bench/interp_notes.md) */
  if (m < 2) return false;
  /* the key: the const's own bytes, which never change while the family lives */
  if (k <= 0 || n <= 0 || !interp_weight_stable(r, wv, k * n) || getenv("MIL_INTERP_NO_DNNL_MATMUL"))
    return false;
  lin_key key;
  memset(&key, 0, sizeof key); /* the padding is part of the key's bytes */
  key.w = mil_value_data(wv), key.dtype = wv->type->dtype, key.m = m, key.k = k, key.n = n, key.w_nk = w_nk;
  key.bias = bias != NULL;
  lin_prim *lp = interp_cache_get_obj(r->cache, &key, sizeof key), *tmp = NULL;
  if (!lp) {
    lin_prim *made = lin_make(&key, wv);
    if (!made) return false;
    lp = interp_cache_put_obj(r->cache, &key, sizeof key, made, lin_free);
    if (!lp) lp = tmp = made;
    /* the packed copy is what the products read from now on: the weight
     * file's pages of the plain weight can go (read back from the file
     * if another op reads them) */
    else if (lp == made) mil_value_release_pages(wv);
  }
  bool ok = lin_run(lp, !tmp, r->pool, x, bias, out);
  lin_free(tmp);
  return ok;
}

#else

bool interp_linear_dnnl(interp_run *r, const float *x, const mil_value *wv, bool w_nk, const float *bias, float *out,
                        int64_t m, int64_t k, int64_t n) {
  (void)r, (void)x, (void)wv, (void)w_nk, (void)bias, (void)out, (void)m, (void)k, (void)n;
  return false;
}

#endif

/* Deferred values: mil_value_new_deferred_cast / _transpose / _scale,
 * mil_value_read,
 * mil_value_data, element access, equality and hashing, the weight
 * writer's streamed blobs, and add_fp16_cast on weights read from a weight
 * file (the casts stay deferred, the saved model holds the same bytes as
 * an eager conversion, overflow saturates and out-of-range weights keep
 * their op in fp32). References are computed element by element with
 * mil_fp32_to_fp16 (the scalar conversion, checked exhaustively in
 * test_convert). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mil/passes.h"
#include "unit/model_testutil.h"
#include "unit/transpose_ref.h"

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* Random floats with the values conversion must get right mixed in:
 * NaN, infinities, zeros of both signs, fp16 subnormals and ties, the
 * edges of fp16's range. */
static float sample(size_t i) {
  static const float special[] = {0.0f, -0.0f, 65504.0f, 65519.99f, -65504.0f, 5.9604645e-08f, 2.9802322e-08f,
                                  1.0009765625f, 1.00048828125f, 6.1035156e-05f, -3.0e-8f, 1.5f};
  uint64_t r = rnd();
  if (r % 97 == 0) return special[(r >> 8) % (sizeof special / sizeof special[0])];
  if (r % 1013 == 0) return (r >> 12) % 2 ? __builtin_inff() : __builtin_nanf("");
  float f = (float)((double)(int64_t)(r >> 11) / 9007199254740992.0 * 8.0 - 4.0);
  return i % 3 == 0 ? f * 100.0f : f;
}

static void fill(float *w, size_t n) {
  for (size_t i = 0; i < n; i++) w[i] = sample(i);
}

static void reference(const float *w, uint16_t *h, size_t n) {
  for (size_t i = 0; i < n; i++) h[i] = mil_fp32_to_fp16(w[i]);
}

/* ---- the value itself ---- */

static void test_value(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  enum { R = 96, C = 700 };
  int64_t shape[2] = {R, C};
  mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, NULL);
  float *w = mil_value_data_mut(src);
  fill(w, R * C);
  uint16_t *want = malloc(R * C * 2);
  reference(w, want, R * C);

  mil_value *v = mil_value_new_deferred_cast(p, src, MIL_DT_FP16);
  assert_non_null(v);
  assert_true(mil_value_is_deferred(v));
  assert_ptr_equal(mil_value_deferred_source(v), src);
  assert_int_equal(v->type->dtype, MIL_DT_FP16);
  assert_int_equal(v->type->rank, 2);
  assert_int_equal(v->type->dims[1].size, C);
  assert_int_equal(v->numel, R * C);
  assert_int_equal(v->nbytes, R * C * 2);
  assert_null(mil_value_data_mut(v)); /* not writable */

  /* pieces: aligned, odd offsets and lengths, single bytes, the last byte */
  uint8_t buf[8192];
  const size_t offs[][2] = {{0, 2}, {1, 1}, {1, 2}, {3, 5000}, {100, 4096}, {R * C * 2 - 1, 1}, {R * C * 2 - 777, 777}};
  for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
    assert_true(mil_value_read(v, offs[k][0], offs[k][1], buf));
    assert_memory_equal(buf, (const uint8_t *)want + offs[k][0], offs[k][1]);
  }
  assert_false(mil_value_read(v, R * C * 2 - 1, 2, buf)); /* past the end */
  assert_true(mil_value_is_deferred(v));                   /* reads leave it deferred */

  /* elements */
  for (int64_t i = 0; i < R * C; i += 37) {
    double got = mil_value_get_f64(v, i), exp = mil_fp16_to_fp32(want[i]);
    if (exp != exp) assert_true(got != got);
    else assert_true(got == exp);
  }

  /* equal to the same bytes made eagerly, hashing alike */
  mil_value *eager = mil_value_new_tensor(p, MIL_DT_FP16, 2, shape, false, want);
  assert_true(mil_value_equal(v, eager));
  assert_true(mil_value_equal(eager, v));
  assert_int_equal(mil_value_hash(v), mil_value_hash(eager));
  mil_value *v2 = mil_value_new_deferred_cast(p, src, MIL_DT_FP16);
  assert_true(mil_value_equal(v, v2));
  ((uint16_t *)mil_value_data_mut(eager))[R * C - 1] ^= 1; /* one bit off, in the last element */
  assert_false(mil_value_equal(v, eager));

  /* computed whole on demand, then no longer deferred */
  const uint16_t *all = mil_value_data(v);
  assert_non_null(all);
  assert_false(mil_value_is_deferred(v));
  assert_memory_equal(all, want, R * C * 2);
  assert_ptr_equal(mil_value_data(v), all);

  /* only fp32 tensors with bytes can be a source */
  assert_null(mil_value_new_deferred_cast(p, eager, MIL_DT_FP16));
  assert_null(mil_value_new_deferred_cast(p, v2, MIL_DT_FP16));
  free(want);
  mil_program_free(p);
}

/* ---- transposes ---- */

/* Every byte of v, read in uneven pieces, against want. */
static void check_bytes(const mil_value *v, const uint8_t *want) {
  uint8_t *got = malloc(v->nbytes + 1);
  size_t at = 0, k = 1;
  while (at < v->nbytes) {
    size_t n = v->nbytes - at < k ? v->nbytes - at : k;
    assert_true(mil_value_read(v, at, n, got + at));
    at += n;
    k = k * 3 + 1;
  }
  assert_memory_equal(got, want, v->nbytes);
  free(got);
}

static void test_transpose(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  /* shapes with and without axes of size 1; every perm */
  static const int64_t shapes[][4] = {{37, 53, 0, 0}, {1, 37, 53, 0}, {5, 7, 9, 0}, {3, 1, 4, 5}, {2, 3, 4, 5}};
  static const int32_t ranks[] = {2, 3, 3, 4, 4};
  int32_t deferred = 0, total = 0;
  for (size_t si = 0; si < sizeof ranks / sizeof ranks[0]; si++) {
    int32_t rank = ranks[si];
    const int64_t *shape = shapes[si];
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) n *= shape[i];
    mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, rank, shape, false, NULL);
    fill(mil_value_data_mut(src), (size_t)n);
    float *t = malloc((size_t)n * 4);
    uint16_t *h = malloc((size_t)n * 2);
    int64_t perm[4] = {0, 1, 2, 3};
    do {
      total++;
      mil_value *v = mil_value_new_deferred_transpose(p, src, rank, perm);
      naive_transpose((uint8_t *)t, mil_value_data(src), 4, rank, shape, perm);
      if (!v) continue;
      deferred++;
      assert_true(mil_value_deferred_is_permutation(v));
      for (int32_t i = 0; i < rank; i++) assert_int_equal(v->type->dims[i].size, shape[perm[i]]);
      check_bytes(v, (const uint8_t *)t);
      /* cast after the transpose, and the cast's own element reads */
      mil_value *c = mil_value_new_deferred_cast(p, v, MIL_DT_FP16);
      assert_non_null(c);
      assert_false(mil_value_deferred_is_permutation(c));
      reference(t, h, (size_t)n);
      check_bytes(c, (const uint8_t *)h);
      for (int64_t i = 0; i < n; i += 7) assert_true(mil_value_get_f64(c, i) == mil_fp16_to_fp32(h[i]) ||
                                                      h[i] != h[i] || (h[i] & 0x7fff) > 0x7c00);
      /* widened back to fp32: the fp16 values exactly */
      mil_value *w = mil_value_new_deferred_cast(p, c, MIL_DT_FP32);
      assert_non_null(w);
      assert_true(mil_value_deferred_is_fp16_rounding(w));
      assert_false(mil_value_deferred_is_fp16_rounding(c) || mil_value_deferred_is_fp16_rounding(v));
      float *wf = malloc((size_t)n * 4);
      for (int64_t i = 0; i < n; i++) wf[i] = mil_fp16_to_fp32(h[i]);
      check_bytes(w, (const uint8_t *)wf);
      free(wf);
      /* computed whole */
      assert_memory_equal(mil_value_data(c), h, (size_t)n * 2);
    } while (next_perm(rank, perm));
    free(t);
    free(h);
  }
  /* the matrix transposes (with size-1 axes left out) all stay deferred */
  assert_true(deferred >= 2 + 2 + 3 + 6);
  assert_true(deferred < total);

  /* transposing back gives the source order; a cast of it then is plain */
  int64_t shape[2] = {37, 53}, swap[2] = {1, 0};
  mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, NULL);
  fill(mil_value_data_mut(src), 37 * 53);
  mil_value *t1 = mil_value_new_deferred_transpose(p, src, 2, swap);
  mil_value *t2 = mil_value_new_deferred_transpose(p, t1, 2, swap);
  assert_non_null(t2);
  assert_memory_equal(mil_value_data(t2), mil_value_data(src), 37 * 53 * 4);
  /* only fp32 / fp16 sources */
  mil_value *ints = mil_value_new_tensor(p, MIL_DT_INT32, 2, shape, false, NULL);
  assert_null(mil_value_new_deferred_transpose(p, ints, 2, swap));
  mil_program_free(p);
}

/* ---- streamed blobs ---- */

static bool read_value(void *ud, size_t off, size_t n, void *dst) { return mil_value_read(ud, off, n, dst); }
static bool read_fails(void *ud, size_t off, size_t n, void *dst) {
  (void)ud, (void)off, (void)n, (void)dst;
  return false;
}

static void test_writer_stream(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  enum { N = (3 << 20) + 5 }; /* more than one 4 MiB piece of fp16 */
  int64_t shape[1] = {N};
  mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, NULL);
  fill(mil_value_data_mut(src), N);
  uint16_t *want = malloc((size_t)N * 2);
  reference(mil_value_data(src), want, N);
  mil_value *v = mil_value_new_deferred_cast(p, src, MIL_DT_FP16);

  char *dir = mt_tempdir();
  char *a = mt_path(dir, "a.bin"), *b = mt_path(dir, "b.bin");
  mil_diag d;
  mil_diag_init(&d);
  /* a: streamed, then the same bytes from memory (a duplicate: one record) */
  mil_blob_writer *w = NULL;
  uint64_t o1 = 0, o2 = 0, o3 = 0;
  assert_int_equal(mil_blob_writer_open(a, 0, &w, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add_stream(w, MIL_DT_FP16, read_value, v, (size_t)N * 2, N, &o1, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, want, (size_t)N * 2, N, &o2, &d), MIL_OK);
  assert_int_equal(o1, o2);
  assert_int_equal(mil_blob_writer_add_stream(w, MIL_DT_FP16, read_fails, NULL, 8, 4, &o3, &d), MIL_ERR_IO);
  assert_int_equal(mil_blob_writer_count(w), 1);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);
  /* b: from memory only */
  assert_int_equal(mil_blob_writer_open(b, 0, &w, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, want, (size_t)N * 2, N, &o3, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);
  size_t la = 0, lb = 0;
  unsigned char *fa = mt_read(a, &la), *fb = mt_read(b, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(fa, fb, la);
  assert_true(mil_value_is_deferred(v)); /* streamed, never held whole */
  free(fa);
  free(fb);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(a);
  free(b);
  free(dir);
  free(want);
  mil_program_free(p);
}

/* ---- add_fp16_cast on weights from a weight file ---- */

enum { K = 64, M = 300 }; /* weights (K, M): 75 KiB of fp32 each */

static void put_weight(mil_buf *t, const char *name, const float *w) {
  mil_buf_printf(t, "    %%%s: (%d, %d, fp32)*(Tensor) = const(val=[", name, K, M);
  for (int i = 0; i < K; i++) {
    mil_buf_puts(t, i ? ", [" : "[");
    for (int j = 0; j < M; j++) {
      char num[32];
      mil_format_double(num, w[i * M + j]);
      mil_buf_printf(t, "%s%s", j ? ", " : "", num);
    }
    mil_buf_puts(t, "]");
  }
  mil_buf_printf(t, "], name=\"%s\")\n", name);
}

static const mil_op *find_op_named(const mil_program *p, const char *name) {
  const mil_block *b = mil_function_body(mil_program_find_function(p, "main"));
  for (const mil_op *op = b->first; op; op = op->next)
    if (!strcmp(op->name, name)) return op;
  return NULL;
}

static void test_add_fp16_cast(void **state) {
  (void)state;
  float *w1 = malloc(K * M * 4), *w2 = malloc(K * M * 4), *w3 = malloc(K * M * 4);
  for (int i = 0; i < K * M; i++) { /* no infinities or NaN: the text form round-trips them, but keep it plain */
    w1[i] = (float)((double)(int64_t)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    w2[i] = w1[i] * 3.0f;
    w3[i] = w1[i];
  }
  w2[5] = 2e38f;    /* taken as infinity by the overflow check; the cast saturates it to 65504 */
  w3[7] = 70000.0f; /* beyond fp16: its op stays fp32 */
  mil_buf t = {0};
  mil_buf_puts(&t, "main[CoreML6](%x: (2, 64, fp32)(Tensor)) {\n  block0() {\n");
  put_weight(&t, "w1", w1);
  put_weight(&t, "w2", w2);
  put_weight(&t, "w3", w3);
  mil_buf_puts(&t, "    %y1: (2, 300, fp32)(Tensor) = matmul(x=%x, y=%w1, name=\"y1\")\n"
                   "    %y2: (2, 300, fp32)(Tensor) = matmul(x=%x, y=%w2, name=\"y2\")\n"
                   "    %y3: (2, 300, fp32)(Tensor) = matmul(x=%x, y=%w3, name=\"y3\")\n"
                   "  } -> (%y1, %y2, %y3)\n}\n");
  mil_diag d;
  mil_diag_init(&d);
  mil_program *prog = NULL;
  mil_status st = mil_parse_program(t.data, t.len, NULL, &prog, &d);
  if (st != MIL_OK) fprintf(stderr, "%s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  mil_buf_free(&t);

  /* saved and loaded again, the weights are views of the weight file */
  char *dir = mt_tempdir();
  char *a = mt_path(dir, "a.mlpackage"), *b = mt_path(dir, "b.mlpackage");
  mil_model *m = NULL;
  assert_int_equal(mil_model_from_program(prog, 7, &m, &d), MIL_OK);
  assert_int_equal(mil_model_save(m, a, &d), MIL_OK);
  mil_model_free(m);
  assert_int_equal(mil_model_load(a, &m, &d), MIL_OK);
  mil_program *p = mil_model_program(m);
  assert_true(find_op_named(p, "w1")->outputs[0]->val->file_mapped);

  int64_t changes = 0;
  assert_int_equal(mil_pass_run(mil_pass_find("common::add_fp16_cast"), p, NULL, &changes, &d), MIL_OK);
  const mil_op *c1 = find_op_named(p, "w1_to_fp16"), *c2 = find_op_named(p, "w2_to_fp16");
  assert_non_null(c1);
  assert_non_null(c2);
  assert_null(find_op_named(p, "w3_to_fp16")); /* y3 stays fp32 */
  assert_non_null(find_op_named(p, "y3"));
  assert_true(mil_value_is_deferred(c1->outputs[0]->val));
  assert_false(mil_value_is_deferred(c2->outputs[0]->val)); /* saturated: computed and rewritten */
  assert_int_equal(((const uint16_t *)mil_value_data(c2->outputs[0]->val))[5], 0x7bff);

  assert_int_equal(mil_pass_run(mil_pass_find("common::const_elimination"), p, NULL, &changes, &d), MIL_OK);
  assert_int_equal(mil_model_save(m, b, &d), MIL_OK);
  assert_true(mil_value_is_deferred(find_op_named(p, "w1_to_fp16")->outputs[0]->val)); /* streamed, still deferred */
  /* saved over the package it reads from: the weights are streamed out of
   * the old weight file before the new one takes its place */
  assert_int_equal(mil_model_save(m, a, &d), MIL_OK);
  mil_model_free(m);
  char *wa = mt_path(a, "Data/com.apple.CoreML/weights/weight.bin"), *wb = mt_path(b, "Data/com.apple.CoreML/weights/weight.bin");
  size_t la = 0, lb = 0;
  unsigned char *fa = mt_read(wa, &la), *fb = mt_read(wb, &lb);
  assert_non_null(fa);
  assert_int_equal(la, lb);
  assert_memory_equal(fa, fb, la);
  free(fa);
  free(fb);
  free(wa);
  free(wb);
  assert_int_equal(mil_model_load(b, &m, &d), MIL_OK);
  p = mil_model_program(m);
  uint16_t *want = malloc(K * M * 2);
  reference(w1, want, K * M);
  const mil_value *got = find_op_named(p, "w1_to_fp16")->outputs[0]->val;
  assert_int_equal(got->type->dtype, MIL_DT_FP16);
  assert_non_null(got->blob_file);
  assert_memory_equal(mil_value_data(got), want, K * M * 2);
  reference(w2, want, K * M);
  want[5] = 0x7bff;
  assert_memory_equal(mil_value_data(find_op_named(p, "w2_to_fp16")->outputs[0]->val), want, K * M * 2);
  assert_int_equal(find_op_named(p, "w3")->outputs[0]->val->type->dtype, MIL_DT_FP32);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(a);
  free(b);
  free(dir);
  free(want);
  free(w1);
  free(w2);
  free(w3);
}

/* ---- per-channel scaling (fused conv weights) ---- */

/* numpy's (w[i] * f[c]).astype(float32) in fp32, element by element. */
static void scale_ref(const float *w, float *out, size_t n, size_t run, const float *f, bool deconv, size_t bdim,
                      size_t groups, size_t cpg) {
  for (size_t e = 0; e < n; e++) {
    size_t r = e / run, c = deconv ? (r % bdim) * groups + (r / bdim) / cpg : r;
    out[e] = w[e] * f[c];
  }
}

static void test_scale(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  enum { CO = 5, CI = 3, KK = 9, N = CO * CI * KK };
  int64_t shape[4] = {CO, CI, 3, 3};
  mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, 4, shape, false, NULL);
  float *w = mil_value_data_mut(src);
  fill(w, N);
  const double f64[CO] = {(double)0.5f, (double)-1.25f, (double)3.1f, (double)1e-3f, (double)7.7f};
  float f[CO], want[N];
  for (int i = 0; i < CO; i++) f[i] = (float)f64[i];
  /* conv: run CI * 9, one run per output channel */
  mil_scale_map conv = {CI * KK, CO, 1, 1};
  mil_value *v = mil_value_new_deferred_scale(p, src, &conv, f64, CO, MIL_DT_FP32);
  assert_non_null(v);
  assert_true(mil_value_is_deferred(v));
  assert_false(mil_value_deferred_is_permutation(v));
  assert_int_equal(v->type->dtype, MIL_DT_FP32);
  scale_ref(w, want, N, CI * KK, f, false, 0, 0, 0);
  /* pieces at unaligned offsets, computed without computing the whole */
  uint8_t part[64];
  assert_true(mil_value_read(v, 3, 37, part));
  assert_memory_equal(part, (const uint8_t *)want + 3, 37);
  assert_true(mil_value_is_deferred(v));
  /* a cast to fp16 composes: fp16 of the scaled elements */
  mil_value *h = mil_value_new_deferred_cast(p, v, MIL_DT_FP16);
  assert_non_null(h);
  uint16_t hwant[N];
  reference(want, hwant, N);
  assert_memory_equal(mil_value_data(h), hwant, sizeof hwant);
  assert_true(mil_value_get_f64(v, 40) == (double)want[40] || isnan(want[40]));
  /* a transpose of it is left to the caller (the scaling follows the source order) */
  int64_t perm[4] = {1, 0, 2, 3};
  assert_null(mil_value_new_deferred_transpose(p, v, 4, perm));
  assert_memory_equal(mil_value_data(v), want, sizeof want);
  assert_false(mil_value_is_deferred(v)); /* computed once, kept */
  /* conv_transpose (Cin=5, Cout/groups=3, 3, 3) with groups 1: the 9
   * elements at (a, b) belong to channel b */
  mil_scale_map deconv = {KK, CI, 1, CO};
  mil_value *dv = mil_value_new_deferred_scale(p, src, &deconv, f64, CI, MIL_DT_FP32);
  scale_ref(w, want, N, KK, f, true, CI, 1, CO);
  assert_memory_equal(mil_value_data(dv), want, sizeof want);
  /* malformed maps and sources are refused */
  mil_scale_map bad_run = {7, CO, 1, 1}, too_few = {CI * KK, CO, 1, 1};
  assert_null(mil_value_new_deferred_scale(p, src, &bad_run, f64, CO, MIL_DT_FP32));
  assert_null(mil_value_new_deferred_scale(p, src, &too_few, f64, CO - 1, MIL_DT_FP32));
  assert_null(mil_value_new_deferred_scale(p, src, &conv, f64, CO, MIL_DT_FP16)); /* fp32 weight, fp16 product */
  mil_value *h2 = mil_value_new_deferred_cast(p, src, MIL_DT_FP16);
  assert_null(mil_value_new_deferred_scale(p, h2, &conv, f64, CO, MIL_DT_FP32)); /* a deferred source */
  mil_program_free(p);
}

/* Two scalings of one weight are different weights: saved, each keeps its
 * own bytes (the writer must not take one for the other because they share
 * a source, a size and a dtype). */
static void test_scale_saved(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_program *prog = mil_program_new(NULL);
  mil_function *fn = mil_function_new(prog, "main", "CoreML6");
  mil_block *blk = mil_function_body(fn);
  int64_t xs[2] = {2, K}, shape[2] = {K, M};
  mil_var *x = mil_function_add_input(fn, "x", mil_type_tensor_shape(prog, MIL_DT_FP32, 2, xs));
  mil_value *src = mil_value_new_tensor(prog, MIL_DT_FP32, 2, shape, false, NULL);
  float *w = mil_value_data_mut(src);
  for (int i = 0; i < K * M; i++) w[i] = (float)(i % 1000) * 0.001f - 0.5f;
  mil_scale_map rows = {M, K, 1, 1};
  double fa[K], fb[K];
  for (int i = 0; i < K; i++) fa[i] = 2.0, fb[i] = -0.5;
  mil_var *outs[2];
  const char *names[2] = {"a", "b"}, *mm[2] = {"y1", "y2"};
  for (int i = 0; i < 2; i++) {
    mil_op *c = mil_const_new(prog, names[i], mil_value_new_deferred_scale(prog, src, &rows, i ? fb : fa, K, MIL_DT_FP32));
    assert_non_null(c);
    mil_block_append(blk, c);
    mil_op *o = mil_op_new(prog, "matmul", mm[i]);
    mil_op_add_input(o, "x", x);
    mil_op_add_input(o, "y", c->outputs[0]);
    outs[i] = mil_op_add_output(o, mm[i], mil_type_unknown(prog));
    mil_block_append(blk, o);
    assert_int_equal(mil_op_add_defaults(o, &d), MIL_OK);
    assert_int_equal(mil_op_infer(o, &d), MIL_OK);
  }
  assert_int_equal(mil_block_set_outputs(blk, 2, outs), MIL_OK);
  char *dir = mt_tempdir();
  char *a = mt_path(dir, "s.mlpackage");
  mil_model *m = NULL;
  assert_int_equal(mil_model_from_program(prog, 7, &m, &d), MIL_OK);
  assert_int_equal(mil_model_save(m, a, &d), MIL_OK);
  mil_model_free(m);
  assert_int_equal(mil_model_load(a, &m, &d), MIL_OK);
  const float *ga = mil_value_data(find_op_named(mil_model_program(m), "a")->outputs[0]->val);
  const float *gb = mil_value_data(find_op_named(mil_model_program(m), "b")->outputs[0]->val);
  for (int i = 0; i < K * M; i++) {
    float x = (float)(i % 1000) * 0.001f - 0.5f;
    assert_true(ga[i] == x * 2.0f);
    assert_true(gb[i] == x * -0.5f);
  }
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(a);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_writer_stream),
      cmocka_unit_test(test_add_fp16_cast),
      cmocka_unit_test(test_scale),
      cmocka_unit_test(test_scale_saved),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

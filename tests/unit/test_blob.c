/* Tests for the weight blob file reader and writer (include/mil/blob.h).
 *
 * The expected bytes of the worked example come from formats.md 4.6 (a dump
 * of the reference MILBlob writer), not from libmil. Corruption cases patch
 * a known-good image and check the status and the text of the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mil/blob.h"

static char g_dir[256];

static void path_in_dir(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", g_dir, name); }

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static bool contains(const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) {
    print_error("message \"%s\" lacks \"%s\"\n", hay ? hay : "(null)", needle);
    return false;
  }
  return true;
}

/* ---- the worked example of formats.md 4.6 --------------------------------- */

/* The 515-byte file exactly as listed in the spec. */
static void expected_example(uint8_t out[515]) {
  memset(out, 0, 515);
  put32(out + 0, 4);
  put32(out + 4, 2);
  /* fp32 [1, 2, 3] */
  put32(out + 0x40, 0xDEADBEEF);
  put32(out + 0x44, 2);
  put64(out + 0x48, 12);
  put64(out + 0x50, 0x80);
  const uint8_t fp[12] = {0, 0, 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40};
  memcpy(out + 0x80, fp, 12);
  /* int4 [1, -2, 3, -8, 7] */
  put32(out + 0xC0, 0xDEADBEEF);
  put32(out + 0xC4, 8);
  put64(out + 0xC8, 3);
  put64(out + 0xD0, 0x100);
  put64(out + 0xD8, 4);
  out[0x100] = 0xE1, out[0x101] = 0x83, out[0x102] = 0x07;
  /* uint3 [1..7] */
  put32(out + 0x140, 0xDEADBEEF);
  put32(out + 0x144, 12);
  put64(out + 0x148, 3);
  put64(out + 0x150, 0x180);
  put64(out + 0x158, 3);
  out[0x180] = 0xD1, out[0x181] = 0x58, out[0x182] = 0x1F;
  /* uint6 [63, 1, 2] */
  put32(out + 0x1C0, 0xDEADBEEF);
  put32(out + 0x1C4, 13);
  put64(out + 0x1C8, 3);
  put64(out + 0x1D0, 0x200);
  put64(out + 0x1D8, 6);
  out[0x200] = 0x7F, out[0x201] = 0x20, out[0x202] = 0x00;
}

/* Test-local LSB-first packer/unpacker (formats.md 4.4), independent of the
 * library's bit helpers. */
static void pack_bits(uint8_t *out, size_t nbytes, const int *vals, int n, int bits) {
  memset(out, 0, nbytes);
  for (int i = 0; i < n; i++) {
    uint32_t v = (uint32_t)vals[i] & ((1u << bits) - 1);
    for (int b = 0; b < bits; b++) {
      long k = (long)i * bits + b;
      if (v >> b & 1) out[k / 8] |= (uint8_t)(1u << (k % 8));
    }
  }
}

static uint32_t unpack_bits(const uint8_t *s, int i, int bits) {
  uint32_t v = 0;
  for (int b = 0; b < bits; b++) {
    long k = (long)i * bits + b;
    v |= (uint32_t)(s[k / 8] >> (k % 8) & 1) << b;
  }
  return v;
}

static void write_example(const char *path, uint64_t offs[4], unsigned flags) {
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open(path, flags, &w, &d), MIL_OK);
  const float f32[3] = {1, 2, 3};
  const int i4[5] = {1, -2, 3, -8, 7};
  const int u3[7] = {1, 2, 3, 4, 5, 6, 7};
  const int u6[3] = {63, 1, 2};
  uint8_t p4[3], p3[3], p6[3];
  pack_bits(p4, 3, i4, 5, 4);
  pack_bits(p3, 3, u3, 7, 3);
  pack_bits(p6, 3, u6, 3, 6);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP32, f32, sizeof f32, 3, &offs[0], &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT4, p4, 3, 5, &offs[1], &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT3, p3, 3, 7, &offs[2], &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT6, p6, 3, 3, &offs[3], &d), MIL_OK);
  assert_int_equal(mil_blob_writer_count(w), 4);
  assert_int_equal(mil_blob_writer_size(w), 515);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);
  assert_int_equal(d.n_errors, 0);
  mil_diag_clear(&d);
}

static void test_worked_example_bytes(void **state) {
  char path[300];
  path_in_dir(path, sizeof path, "example.bin");
  uint64_t offs[4];
  write_example(path, offs, 0);
  assert_int_equal(offs[0], 64);
  assert_int_equal(offs[1], 192);
  assert_int_equal(offs[2], 320);
  assert_int_equal(offs[3], 448);
  uint8_t want[515];
  expected_example(want);
  size_t n;
  uint8_t *got = slurp(path, &n);
  assert_int_equal(n, 515);
  assert_memory_equal(got, want, 515);
  free(got);
  /* the same with deduplication off */
  write_example(path, offs, MIL_BLOB_WRITE_NO_DEDUP);
  got = slurp(path, &n);
  assert_int_equal(n, 515);
  assert_memory_equal(got, want, 515);
  free(got);
}

static void test_worked_example_read(void **state) {
  char path[300];
  path_in_dir(path, sizeof path, "example_r.bin");
  uint8_t img[515];
  expected_example(img);
  write_file(path, img, sizeof img);
  mil_diag d = {0};
  mil_blob_file *f = NULL;
  assert_int_equal(mil_blob_file_open(path, &f, &d), MIL_OK);
  assert_int_equal(mil_blob_file_count(f), 4);
  assert_int_equal(mil_blob_file_size(f), 515);
  assert_string_equal(mil_blob_file_path(f), path);

  const void *p;
  size_t nb;
  assert_int_equal(mil_blob_file_read(f, 64, MIL_DT_FP32, 3, &p, &nb, &d), MIL_OK);
  assert_int_equal(nb, 12);
  const float *fp = p;
  assert_true(fp[0] == 1.0f && fp[1] == 2.0f && fp[2] == 3.0f);
  assert_ptr_equal(p, (const uint8_t *)mil_blob_file_base(f) + 128);

  assert_int_equal(mil_blob_file_read(f, 192, MIL_DT_INT4, 5, &p, &nb, &d), MIL_OK);
  assert_int_equal(nb, 3);
  const int i4[5] = {1, -2, 3, -8, 7};
  for (int i = 0; i < 5; i++) {
    int v = (int)unpack_bits(p, i, 4);
    if (v >= 8) v -= 16;
    assert_int_equal(v, i4[i]);
  }
  assert_int_equal(mil_blob_file_read(f, 320, MIL_DT_UINT3, 7, &p, &nb, &d), MIL_OK);
  for (int i = 0; i < 7; i++) assert_int_equal(unpack_bits(p, i, 3), i + 1);
  assert_int_equal(mil_blob_file_read(f, 448, MIL_DT_UINT6, 3, &p, &nb, &d), MIL_OK);
  assert_int_equal(unpack_bits(p, 0, 6), 63);
  assert_int_equal(unpack_bits(p, 1, 6), 1);
  assert_int_equal(unpack_bits(p, 2, 6), 2);

  /* enumeration */
  const uint64_t metas[4] = {64, 192, 320, 448};
  const mil_dtype dts[4] = {MIL_DT_FP32, MIL_DT_INT4, MIL_DT_UINT3, MIL_DT_UINT6};
  const int64_t counts[4] = {3, 5, 7, 3};
  const uint64_t pads[4] = {0, 4, 3, 6};
  mil_blob_iter it;
  mil_blob_iter_init(f, &it);
  int k = 0;
  for (;;) {
    mil_blob_info info;
    bool done;
    assert_int_equal(mil_blob_iter_next(f, &it, &info, &done, &d), MIL_OK);
    if (done) break;
    assert_true(k < 4);
    assert_int_equal(info.meta_offset, metas[k]);
    assert_int_equal(info.data_offset, metas[k] + 64);
    assert_int_equal(info.dtype, dts[k]);
    assert_int_equal(info.numel, counts[k]);
    assert_int_equal(info.padding_bits, pads[k]);
    assert_int_equal(info.nbytes, k == 0 ? 12 : 3);
    k++;
  }
  assert_int_equal(k, 4);
  assert_int_equal(d.n_errors, 0);

  /* reference counting: a retained file stays mapped after one close */
  mil_blob_file_retain(f);
  mil_blob_file_close(f);
  assert_int_equal(mil_blob_file_read(f, 64, MIL_DT_FP32, 3, &p, &nb, &d), MIL_OK);
  assert_true(((const float *)p)[2] == 3.0f);
  mil_blob_file_close(f);
  mil_diag_clear(&d);
}

/* ---- every storable dtype round-trips -------------------------------------- */

static void test_all_dtypes_roundtrip(void **state) {
  static const struct {
    mil_dtype dt;
    uint32_t code;
    int bits;
  } rows[] = {
      {MIL_DT_FP16, 1, 16},  {MIL_DT_FP32, 2, 32},   {MIL_DT_UINT8, 3, 8},       {MIL_DT_INT8, 4, 8},
      {MIL_DT_BF16, 5, 16},  {MIL_DT_INT16, 6, 16},  {MIL_DT_UINT16, 7, 16},     {MIL_DT_INT4, 8, 4},
      {MIL_DT_UINT1, 9, 1},  {MIL_DT_UINT2, 10, 2},  {MIL_DT_UINT4, 11, 4},      {MIL_DT_UINT3, 12, 3},
      {MIL_DT_UINT6, 13, 6}, {MIL_DT_INT32, 14, 32}, {MIL_DT_UINT32, 15, 32},    {MIL_DT_FP8E4M3FN, 16, 8},
      {MIL_DT_FP8E5M2, 17, 8},
  };
  const int nrows = (int)(sizeof rows / sizeof rows[0]);
  char path[300];
  path_in_dir(path, sizeof path, "alltypes.bin");
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open(path, 0, &w, &d), MIL_OK);
  uint64_t offs[32];
  uint8_t bufs[32][300];
  size_t sizes[32];
  const int64_t n = 37;
  for (int r = 0; r < nrows; r++) {
    assert_int_equal(mil_blob_dtype_code(rows[r].dt), rows[r].code);
    assert_int_equal(mil_blob_dtype_from_code(rows[r].code), rows[r].dt);
    sizes[r] = (size_t)((n * rows[r].bits + 7) / 8);
    for (size_t i = 0; i < sizes[r]; i++) bufs[r][i] = (uint8_t)(i * 31 + (size_t)r * 7 + 1);
    if (rows[r].bits < 8) { /* keep the unused high bits zero so bytes compare equal */
      int used = (int)(n * rows[r].bits - (int64_t)(sizes[r] - 1) * 8);
      bufs[r][sizes[r] - 1] &= (uint8_t)((1u << used) - 1);
    }
    assert_int_equal(mil_blob_writer_add(w, rows[r].dt, bufs[r], sizes[r], n, &offs[r], &d), MIL_OK);
    assert_int_equal(offs[r] % 64, 0);
  }
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);
  mil_blob_file *f = NULL;
  assert_int_equal(mil_blob_file_open(path, &f, &d), MIL_OK);
  assert_int_equal(mil_blob_file_count(f), (uint32_t)nrows);
  for (int r = 0; r < nrows; r++) {
    const void *p;
    size_t nb;
    assert_int_equal(mil_blob_file_read(f, offs[r], rows[r].dt, n, &p, &nb, &d), MIL_OK);
    assert_int_equal(nb, sizes[r]);
    assert_memory_equal(p, bufs[r], sizes[r]);
    assert_int_equal(((uintptr_t)p) % 64, 0);
  }
  assert_int_equal(d.n_errors, 0);
  mil_blob_file_close(f);
  assert_int_equal(mil_blob_dtype_code(MIL_DT_FP64), 0);
  assert_int_equal(mil_blob_dtype_code(MIL_DT_BOOL), 0);
  assert_int_equal(mil_blob_dtype_from_code(0), MIL_DT_UNUSED);
  assert_int_equal(mil_blob_dtype_from_code(18), MIL_DT_UNUSED);
  mil_diag_clear(&d);
}

/* ---- deduplication ------------------------------------------------------- */

static void test_dedup(void **state) {
  char path[300];
  path_in_dir(path, sizeof path, "dedup.bin");
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open(path, 0, &w, &d), MIL_OK);
  uint16_t a[100], b[100];
  for (int i = 0; i < 100; i++) a[i] = (uint16_t)(i * 3), b[i] = (uint16_t)(i * 3);
  b[99] ^= 1;
  uint64_t oa, ob, oa2, oi8, ou8, oshort;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, a, sizeof a, 100, &oa, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, b, sizeof b, 100, &ob, &d), MIL_OK);
  uint64_t size_before = mil_blob_writer_size(w);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, a, sizeof a, 100, &oa2, &d), MIL_OK);
  assert_int_equal(oa, 64);
  assert_int_not_equal(ob, oa);
  assert_int_equal(oa2, oa);
  assert_int_equal(mil_blob_writer_size(w), size_before);
  /* same bytes under another dtype, or a prefix, are different blobs */
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT16, a, sizeof a, 100, &oi8, &d), MIL_OK);
  assert_int_not_equal(oi8, oa);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT16, a, sizeof a, 100, &ou8, &d), MIL_OK);
  assert_int_not_equal(ou8, oi8);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, a, 198, 99, &oshort, &d), MIL_OK);
  assert_int_not_equal(oshort, oa);
  /* sub-byte: garbage in the unused high bits is dropped, so these match */
  uint8_t u3a[3] = {0xD1, 0x58, 0x1F}, u3b[3] = {0xD1, 0x58, 0x9F};
  uint64_t ou3a, ou3b;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT3, u3a, 3, 7, &ou3a, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT3, u3b, 3, 7, &ou3b, &d), MIL_OK);
  assert_int_equal(ou3a, ou3b);
  /* a large blob that is flushed to disk before its duplicate arrives, and a
   * near-duplicate that differs only in the last byte */
  size_t big = 3u << 20;
  uint8_t *x = malloc(big), *y = malloc(big);
  assert_non_null(x);
  assert_non_null(y);
  for (size_t i = 0; i < big; i++) x[i] = (uint8_t)(i * 2654435761u >> 13);
  memcpy(y, x, big);
  y[big - 1] ^= 0x40;
  uint64_t ox, oy, ox2;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, big, (int64_t)big, &ox, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, y, big, (int64_t)big, &oy, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, big, (int64_t)big, &ox2, &d), MIL_OK);
  assert_int_not_equal(ox, oy);
  assert_int_equal(ox, ox2);
  /* differences away from the first and last bytes, in a flushed blob ... */
  uint64_t oz, oz2, ox3;
  y[big - 1] ^= 0x40;
  y[4097] ^= 1;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, y, big, (int64_t)big, &oz, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, y, big, (int64_t)big, &oz2, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, big, (int64_t)big, &ox3, &d), MIL_OK);
  assert_true(oz != ox && oz != oy);
  assert_int_equal(oz, oz2);
  assert_int_equal(ox3, ox);
  /* ... and in small blobs still in the write buffer (sizes a multiple of
   * 64 and not), and single-byte blobs */
  for (size_t sz = 8192; sz <= 8193; sz++) {
    uint64_t o1, o2, o3, o4;
    memcpy(y, x, sz);
    y[5000] ^= 0x10;
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT8, x, sz, (int64_t)sz, &o1, &d), MIL_OK);
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT8, y, sz, (int64_t)sz, &o2, &d), MIL_OK);
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT8, x, sz, (int64_t)sz, &o3, &d), MIL_OK);
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT8, y, sz, (int64_t)sz, &o4, &d), MIL_OK);
    assert_int_not_equal(o1, o2);
    assert_int_equal(o1, o3);
    assert_int_equal(o2, o4);
  }
  const uint8_t five = 5, six = 6;
  uint64_t o5, o6, o5b;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, &five, 1, 1, &o5, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, &six, 1, 1, &o6, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, &five, 1, 1, &o5b, &d), MIL_OK);
  assert_int_not_equal(o5, o6);
  assert_int_equal(o5, o5b);
  assert_int_equal(mil_blob_writer_count(w), 15);
  /* many distinct blobs (the table grows), then each again */
  uint64_t many[200];
  for (int32_t i = 0; i < 200; i++) {
    int32_t vals[3] = {i, i * 7, -i};
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT32, vals, sizeof vals, 3, &many[i], &d), MIL_OK);
  }
  for (int32_t i = 199; i >= 0; i--) {
    int32_t vals[3] = {i, i * 7, -i};
    uint64_t again;
    assert_int_equal(mil_blob_writer_add(w, MIL_DT_INT32, vals, sizeof vals, 3, &again, &d), MIL_OK);
    assert_int_equal(again, many[i]);
  }
  assert_int_equal(mil_blob_writer_count(w), 215);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);

  mil_blob_file *f = NULL;
  assert_int_equal(mil_blob_file_open(path, &f, &d), MIL_OK);
  assert_int_equal(mil_blob_file_count(f), 215);
  const void *p;
  size_t nb;
  assert_int_equal(mil_blob_file_read(f, oz, MIL_DT_UINT8, (int64_t)big, &p, &nb, &d), MIL_OK);
  assert_int_equal(((const uint8_t *)p)[4097], x[4097] ^ 1);
  assert_memory_equal((const uint8_t *)p + 4098, x + 4098, big - 4098);
  assert_int_equal(mil_blob_file_read(f, oy, MIL_DT_UINT8, (int64_t)big, &p, &nb, &d), MIL_OK);
  assert_int_equal(((const uint8_t *)p)[big - 1], x[big - 1] ^ 0x40);
  assert_int_equal(mil_blob_file_read(f, ou3a, MIL_DT_UINT3, 7, &p, &nb, &d), MIL_OK);
  assert_int_equal(((const uint8_t *)p)[2], 0x1F);
  int k = 0;
  mil_blob_iter it;
  mil_blob_iter_init(f, &it);
  for (;;) {
    mil_blob_info info;
    bool done;
    assert_int_equal(mil_blob_iter_next(f, &it, &info, &done, &d), MIL_OK);
    if (done) break;
    k++;
  }
  assert_int_equal(k, 215);
  assert_int_equal(mil_blob_file_read(f, many[123], MIL_DT_INT32, 3, &p, &nb, &d), MIL_OK);
  assert_int_equal(((const int32_t *)p)[1], 123 * 7);
  mil_blob_file_close(f);

  /* without deduplication every add is written */
  assert_int_equal(mil_blob_writer_open(path, MIL_BLOB_WRITE_NO_DEDUP, &w, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, a, sizeof a, 100, &oa, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP16, a, sizeof a, 100, &oa2, &d), MIL_OK);
  assert_int_equal(oa, 64);
  assert_int_equal(oa2, 64 + 64 + 256);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_OK);
  assert_int_equal(d.n_errors, 0);
  free(x);
  free(y);
  mil_diag_clear(&d);
}

/* ---- writer argument errors ------------------------------------------------ */

static void test_writer_errors(void **state) {
  char path[300];
  path_in_dir(path, sizeof path, "werr.bin");
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open("/nonexistent-dir/x/weight.bin", 0, &w, &d), MIL_ERR_IO);
  assert_null(w);
  assert_true(contains(mil_diag_first_error(&d), "/nonexistent-dir/x/weight.bin"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_open(path, 0x80, &w, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);

  assert_int_equal(mil_blob_writer_open(path, 0, &w, &d), MIL_OK);
  float v[4] = {1, 2, 3, 4};
  uint64_t off = 7;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP32, v, 12, 4, &off, &d), MIL_ERR_INVALID);
  assert_true(contains(mil_diag_first_error(&d), "12 bytes given, expected 16"));
  assert_int_equal(off, 0);
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP32, v, 0, 0, &off, &d), MIL_ERR_INVALID);
  assert_true(contains(mil_diag_first_error(&d), "element count 0"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP64, v, 16, 2, &off, &d), MIL_ERR_INVALID);
  assert_true(contains(mil_diag_first_error(&d), "fp64 cannot be stored"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT3, v, 3, 7, &off, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT3, v, 4, 7, &off, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_count(w), 1);
  mil_blob_writer_abort(w);
  assert_int_equal(access(path, F_OK), -1); /* abort deletes the file */
}

/* A device that refuses every write: errors are reported with the path and
 * offset, stick, and make close fail. */
static void test_writer_io_error(void **state) {
  if (access("/dev/full", W_OK) != 0) {
    printf("skipped: /dev/full not available\n");
    return;
  }
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open("/dev/full", MIL_BLOB_WRITE_NO_DEDUP, &w, &d), MIL_OK);
  size_t big = 2u << 20;
  uint8_t *x = calloc(1, big);
  assert_non_null(x);
  uint64_t off;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, big, (int64_t)big, &off, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "/dev/full: write at offset 0 failed"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, 16, 16, &off, &d), MIL_ERR_INVALID);
  assert_true(contains(mil_diag_first_error(&d), "after an earlier write error"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_ERR_IO);
  mil_diag_clear(&d);
  /* small blobs only fail when the buffer is flushed at close */
  assert_int_equal(mil_blob_writer_open("/dev/full", 0, &w, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_UINT8, x, 16, 16, &off, &d), MIL_OK);
  assert_int_equal(mil_blob_writer_close(w, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "/dev/full: write at offset 0 failed"));
  mil_diag_clear(&d);
  free(x);
}

/* ---- corruption ---------------------------------------------------------- */

/* Writes the example image patched by `patch` (may be NULL) truncated to
 * `len` bytes, opens it and returns the handle (or NULL with the status in
 * *st). */
static mil_blob_file *open_image(const uint8_t *img, size_t len, mil_status *st, mil_diag *d) {
  char path[300];
  path_in_dir(path, sizeof path, "corrupt.bin");
  write_file(path, img, len);
  mil_blob_file *f = NULL;
  *st = mil_blob_file_open(path, &f, d);
  return f;
}

/* Reads blob `off` of a patched image and expects a format error whose text
 * contains `want`. */
static void expect_read_error(const uint8_t *img, size_t len, uint64_t off, mil_dtype dt, int64_t numel,
                              mil_status want_st, const char *want) {
  mil_diag d = {0};
  mil_status st;
  mil_blob_file *f = open_image(img, len, &st, &d);
  assert_int_equal(st, MIL_OK);
  const void *p = (const void *)1;
  size_t nb = 1;
  assert_int_equal(mil_blob_file_read(f, off, dt, numel, &p, &nb, &d), want_st);
  assert_null(p);
  assert_int_equal(nb, 0);
  assert_true(contains(mil_diag_first_error(&d), want));
  assert_true(contains(mil_diag_first_error(&d), "corrupt.bin"));
  mil_blob_file_close(f);
  mil_diag_clear(&d);
}

/* A payload overlapping the storage header or any metadata record is
 * refused (it would read header bytes as weights), naming both ranges. */
static void test_payload_overlaps_header(void **state) {
  (void)state;
  uint8_t base[515], img[515];
  expected_example(base);
  /* blob 64 (fp32 x3, 12 bytes): payload at 0 overlaps the file header */
  memcpy(img, base, sizeof img);
  put64(img + 0x50, 0);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT,
                    "blob at offset 64: payload [0, 12) overlaps the storage header [0, 64)");
  /* payload at 60 straddles the file header and its own record */
  put64(img + 0x50, 60);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "payload [60, 72) overlaps the storage header");
  /* payload inside its own record */
  put64(img + 0x50, 64);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT,
                    "blob at offset 64: payload [64, 76) overlaps the metadata record at offset 64 [64, 128)");
  /* blob 448 (uint6, 3 bytes) reading the record of blob 320 */
  memcpy(img, base, sizeof img);
  put64(img + 448 + 0x10, 330);
  expect_read_error(img, sizeof img, 448, MIL_DT_UINT6, 3, MIL_ERR_FORMAT,
                    "blob at offset 448: payload [330, 333) overlaps the metadata record at offset 320 [320, 384)");
  /* the records' own payloads still read */
  mil_diag d = {0};
  mil_status st;
  mil_blob_file *f = open_image(base, sizeof base, &st, &d);
  const void *p = NULL;
  size_t nb = 0;
  assert_int_equal(mil_blob_file_read(f, 448, MIL_DT_UINT6, 3, &p, &nb, &d), MIL_OK);
  assert_int_equal(nb, 3);
  mil_blob_file_close(f);
  mil_diag_clear(&d);
}

static void test_open_errors(void **state) {
  uint8_t img[515];
  expected_example(img);
  mil_diag d = {0};
  mil_status st;
  /* empty and truncated headers */
  assert_null(open_image(img, 0, &st, &d));
  assert_int_equal(st, MIL_ERR_FORMAT);
  assert_true(contains(mil_diag_first_error(&d), "file is 0 bytes"));
  mil_diag_clear(&d);
  assert_null(open_image(img, 10, &st, &d));
  assert_int_equal(st, MIL_ERR_FORMAT);
  assert_true(contains(mil_diag_first_error(&d), "file is 10 bytes, too short for the 64-byte storage header"));
  mil_diag_clear(&d);
  /* wrong version */
  put32(img + 4, 1);
  assert_null(open_image(img, sizeof img, &st, &d));
  assert_int_equal(st, MIL_ERR_FORMAT);
  assert_true(contains(mil_diag_first_error(&d), "storage header at offset 4: version 1, expected 2"));
  mil_diag_clear(&d);
  put32(img + 4, 3);
  assert_null(open_image(img, sizeof img, &st, &d));
  /* a file that is no weight file: its bytes are not echoed */
  assert_true(contains(mil_diag_first_error(&d), "not a weight file: the storage header's version field (offset 4) is not 2"));
  assert_false(contains(mil_diag_first_error(&d), "version 3"));
  mil_diag_clear(&d);
  /* missing file, directory */
  mil_blob_file *f = NULL;
  assert_int_equal(mil_blob_file_open("/nonexistent/weight.bin", &f, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "/nonexistent/weight.bin: cannot open"));
  mil_diag_clear(&d);
  assert_int_equal(mil_blob_file_open(g_dir, &f, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "not a regular file"));
  assert_null(f);
  mil_diag_clear(&d);
}

static void test_sentinel_message(void **state) {
  /* the exact message of the documented example, with a relative path */
  char cwd[512];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(g_dir), 0);
  mkdir("weights", 0755);
  uint8_t img[515];
  expected_example(img);
  put32(img + 192, 0);
  write_file("weights/weight.bin", img, sizeof img);
  mil_diag d = {0};
  mil_blob_file *f = NULL;
  assert_int_equal(mil_blob_file_open("weights/weight.bin", &f, &d), MIL_OK);
  const void *p;
  size_t nb;
  assert_int_equal(mil_blob_file_read(f, 192, MIL_DT_INT4, 5, &p, &nb, &d), MIL_ERR_FORMAT);
  assert_string_equal(mil_diag_first_error(&d),
                      "weights/weight.bin: blob at offset 192: sentinel 0x00000000, expected 0xDEADBEEF");
  /* the other blobs are still readable */
  assert_int_equal(mil_blob_file_read(f, 320, MIL_DT_UINT3, 7, &p, &nb, &d), MIL_OK);
  mil_blob_file_close(f);
  mil_diag_clear(&d);
  assert_int_equal(chdir(cwd), 0);
}

static void test_read_errors(void **state) {
  uint8_t base[515], img[515];
  expected_example(base);

  /* truncated file: payload of the last blob cut, metadata cut */
  expect_read_error(base, 0x201, 448, MIL_DT_UINT6, 3, MIL_ERR_FORMAT,
                    "blob at offset 448: payload (offset field 512, sizeInBytes 3) extends past the end of the file "
                    "(size 513)");
  expect_read_error(base, 0x150, 320, MIL_DT_UINT3, 7, MIL_ERR_FORMAT,
                    "blob at offset 320: metadata record [320, 384) lies outside the file (size 336)");
  expect_read_error(base, sizeof base, 100000, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "blob at offset 100000: metadata");
  expect_read_error(base, sizeof base, UINT64_MAX - 10, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "lies outside the file");

  /* dtype mismatch: BlobDataType numbers, not MIL numbers */
  expect_read_error(base, sizeof base, 64, MIL_DT_FP16, 6, MIL_ERR_FORMAT,
                    "blob at offset 64: data type 2 (fp32), expected 1 (fp16)");
  expect_read_error(base, sizeof base, 192, MIL_DT_UINT4, 5, MIL_ERR_FORMAT,
                    "blob at offset 192: data type 8 (int4), expected 11 (uint4)");
  memcpy(img, base, sizeof img);
  put32(img + 0x44, 99);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "data type 99 (unknown), expected 2 (fp32)");
  expect_read_error(base, sizeof base, 64, MIL_DT_FP64, 1, MIL_ERR_INVALID, "fp64 cannot be stored");

  /* payload offset / size outside the file */
  memcpy(img, base, sizeof img);
  put64(img + 0x50, 10000);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT,
                    "blob at offset 64: payload (offset field 10000, sizeInBytes 12) extends past the end of the file "
                    "(size 515)");
  memcpy(img, base, sizeof img);
  put64(img + 0x48, UINT64_MAX - 3);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "sizeInBytes 18446744073709551612) extends");
  memcpy(img, base, sizeof img);
  put64(img + 0x48, 0);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 0, MIL_ERR_FORMAT,
                    "blob at offset 64: sizeInBytes 0, expected > 0");

  /* sub-byte padding rules */
  memcpy(img, base, sizeof img);
  put64(img + 0xD8, 8);
  expect_read_error(img, sizeof img, 192, MIL_DT_INT4, 5, MIL_ERR_FORMAT,
                    "blob at offset 192: padding_size_in_bits 8, expected < 8");
  put64(img + 0xD8, 2);
  expect_read_error(img, sizeof img, 192, MIL_DT_INT4, 5, MIL_ERR_FORMAT,
                    "blob at offset 192: padding_size_in_bits 2, expected a multiple of 4 for int4");
  memcpy(img, base, sizeof img);
  put64(img + 0x158, 2); /* uint3: 24 - 2 = 22 bits is not a multiple of 3 */
  expect_read_error(img, sizeof img, 320, MIL_DT_UINT3, 7, MIL_ERR_FORMAT,
                    "sizeInBytes 3 and padding_size_in_bits 2 leave 22 bits, expected a multiple of 3 for uint3");

  /* element count */
  memcpy(img, base, sizeof img);
  put64(img + 0x1D8, 0); /* uint6 with no padding holds 4 elements */
  expect_read_error(img, sizeof img, 448, MIL_DT_UINT6, 3, MIL_ERR_FORMAT,
                    "blob at offset 448: element count 4, expected 3");
  expect_read_error(base, sizeof base, 320, MIL_DT_UINT3, 8, MIL_ERR_FORMAT, "element count 7, expected 8");
  expect_read_error(base, sizeof base, 64, MIL_DT_FP32, 4, MIL_ERR_FORMAT,
                    "blob at offset 64: sizeInBytes 12, expected 16 (4 elements of 4 bytes)");
  memcpy(img, base, sizeof img);
  put64(img + 0x48, 13);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT,
                    "sizeInBytes 13, expected a multiple of 4 (fp32 element size)");
  memcpy(img, base, sizeof img);
  put64(img + 0x50, 0x82);
  expect_read_error(img, sizeof img, 64, MIL_DT_FP32, 3, MIL_ERR_FORMAT, "payload offset 130, expected a multiple of 4");
  expect_read_error(base, sizeof base, 64, MIL_DT_FP32, -1, MIL_ERR_INVALID, "element count -1 is negative");

  /* reserved fields are ignored */
  memcpy(img, base, sizeof img);
  memset(img + 0x40 + 32, 0xAB, 32);
  mil_diag d = {0};
  mil_status st;
  mil_blob_file *f = open_image(img, sizeof img, &st, &d);
  const void *p;
  size_t nb;
  assert_int_equal(mil_blob_file_read(f, 64, MIL_DT_FP32, 3, &p, &nb, &d), MIL_OK);
  mil_blob_file_close(f);
  mil_diag_clear(&d);
}

static void iterate_expect_error(const uint8_t *img, size_t len, int want_ok, const char *want) {
  mil_diag d = {0};
  mil_status st;
  mil_blob_file *f = open_image(img, len, &st, &d);
  assert_non_null(f);
  mil_blob_iter it;
  mil_blob_iter_init(f, &it);
  int ok = 0;
  for (;;) {
    mil_blob_info info;
    bool done;
    st = mil_blob_iter_next(f, &it, &info, &done, &d);
    if (st != MIL_OK || done) break;
    ok++;
  }
  assert_int_equal(st, MIL_ERR_FORMAT);
  assert_int_equal(ok, want_ok);
  assert_true(contains(mil_diag_first_error(&d), want));
  mil_blob_file_close(f);
  mil_diag_clear(&d);
}

static void test_enumerate_errors(void **state) {
  uint8_t base[515], img[515];
  expected_example(base);
  memcpy(img, base, sizeof img);
  put32(img, 5);
  iterate_expect_error(img, sizeof img, 4, "storage header at offset 0: count 5, but the file ends (size 515) after 4");
  memcpy(img, base, sizeof img);
  put32(img + 0x144, 0);
  iterate_expect_error(img, sizeof img, 2, "blob at offset 320: data type 0, expected a BlobDataType in 1..17");
  memcpy(img, base, sizeof img);
  put64(img + 0xD0, 0x80); /* payload of blob 2 points back at blob 1's payload */
  put64(img + 0xD8, 0);
  put64(img + 0xC8, 3);
  put32(img + 0xC4, 3); /* uint8 */
  iterate_expect_error(img, sizeof img, 1, "blob at offset 192: payload offset 128 + sizeInBytes 3");
  put64(img + 0xD0, 0x40); /* ... at blob 1's record */
  iterate_expect_error(img, sizeof img, 1, "blob at offset 192: payload [64, 67) overlaps the metadata record at offset 64");
  memcpy(img, base, sizeof img);
  put32(img + 0x140, 0x12345678);
  iterate_expect_error(img, sizeof img, 2, "blob at offset 320: sentinel 0x12345678, expected 0xDEADBEEF");
}

/* ---- coremltools' immediate-vs-blob policy --------------------------------- */

static void test_policy(void **state) {
  const mil_dtype always[] = {MIL_DT_FP16,  MIL_DT_FP32,  MIL_DT_UINT8, MIL_DT_INT8,  MIL_DT_INT4,
                              MIL_DT_UINT1, MIL_DT_UINT2, MIL_DT_UINT3, MIL_DT_UINT4, MIL_DT_UINT6};
  const mil_dtype from9[] = {MIL_DT_INT16, MIL_DT_UINT16, MIL_DT_INT32, MIL_DT_UINT32};
  const mil_dtype never[] = {MIL_DT_BOOL,   MIL_DT_STRING, MIL_DT_FP64,       MIL_DT_INT64,     MIL_DT_UINT64,
                             MIL_DT_BF16,   MIL_DT_COMPLEX64, MIL_DT_FP8E4M3FN, MIL_DT_FP8E5M2};
  for (int spec = 6; spec <= 10; spec++) {
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++) assert_true(mil_blob_dtype_supported(always[i], spec));
    for (size_t i = 0; i < sizeof from9 / sizeof from9[0]; i++)
      assert_int_equal(mil_blob_dtype_supported(from9[i], spec), spec >= 9);
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) assert_false(mil_blob_dtype_supported(never[i], spec));
  }
  mil_dim dims[1] = {{10, NULL, false}};
  mil_type t = {0};
  t.kind = MIL_TYPE_TENSOR;
  t.dtype = MIL_DT_FP32;
  t.rank = 1;
  t.dims = dims;
  mil_value v = {0};
  v.kind = MIL_VAL_TENSOR;
  v.type = &t;
  v.numel = 10;
  assert_true(mil_blob_should_store(&v, 6));
  v.numel = 9;
  dims[0].size = 9;
  assert_false(mil_blob_should_store(&v, 10));
  v.numel = 64;
  dims[0].size = 64;
  t.dtype = MIL_DT_INT32;
  assert_false(mil_blob_should_store(&v, 8));
  assert_true(mil_blob_should_store(&v, 9));
  t.dtype = MIL_DT_INT64;
  assert_false(mil_blob_should_store(&v, 10));
  t.dtype = MIL_DT_BOOL;
  assert_false(mil_blob_should_store(&v, 10));
  t.dtype = MIL_DT_UINT2;
  assert_true(mil_blob_should_store(&v, 9));
  v.kind = MIL_VAL_LIST;
  assert_false(mil_blob_should_store(&v, 10));
  assert_false(mil_blob_should_store(NULL, 10));
}

static int setup(void **state) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/mil_test_blob_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worked_example_bytes), cmocka_unit_test(test_worked_example_read),
      cmocka_unit_test(test_all_dtypes_roundtrip), cmocka_unit_test(test_dedup),
      cmocka_unit_test(test_writer_errors),        cmocka_unit_test(test_writer_io_error),
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test(test_sentinel_message),     cmocka_unit_test(test_read_errors),
      cmocka_unit_test(test_payload_overlaps_header),
      cmocka_unit_test(test_enumerate_errors),     cmocka_unit_test(test_policy),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* Tests for the .npy reader and writer (include/mil/npy.h).
 *
 * Expected header bytes are literal numpy.save output (and, when the corpus
 * is present, the corpus's own numpy-written files); malformed images are
 * built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "shared_skip.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mil/npy.h"

#ifndef MIL_SHARED_DIR
#define MIL_SHARED_DIR "/work/shared"
#endif

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
  if (!f) return NULL;
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

static bool contains(const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) {
    print_error("message \"%s\" lacks \"%s\"\n", hay ? hay : "(null)", needle);
    return false;
  }
  return true;
}

/* Builds "\x93NUMPY" + version + length + header text + data into buf. */
static size_t image(uint8_t *buf, int major, const char *header, const void *data, size_t ndata) {
  size_t hl = strlen(header), k = 0;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (uint8_t)major;
  buf[7] = 0;
  k = 8;
  if (major == 1) {
    buf[k++] = (uint8_t)hl;
    buf[k++] = (uint8_t)(hl >> 8);
  } else {
    for (int i = 0; i < 4; i++) buf[k++] = (uint8_t)(hl >> (8 * i));
  }
  memcpy(buf + k, header, hl);
  k += hl;
  if (ndata) memcpy(buf + k, data, ndata);
  return k + ndata;
}

/* ---- writer output is numpy.save's ---------------------------------------- */

static void test_write_exact_bytes(void **state) {
  char path[300];
  path_in_dir(path, sizeof path, "a.npy");
  const int32_t v[6] = {1, -2, 3, -4, 5, 2147483647};
  const int64_t shape[2] = {2, 3};
  mil_diag d = {0};
  assert_int_equal(mil_npy_write(path, MIL_DT_INT32, 2, shape, v, &d), MIL_OK);
  /* np.save(f, np.array([[1,-2,3],[-4,5,2**31-1]], np.int32)) */
  const char *hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"
                    "                    " /* 20 spaces of growth room */
                    "                                      \n";
  uint8_t want[128 + 24];
  memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
  assert_int_equal(strlen(hdr), 118);
  memcpy(want + 10, hdr, 118);
  memcpy(want + 128, v, 24);
  size_t n;
  uint8_t *got = slurp(path, &n);
  assert_non_null(got);
  assert_int_equal(n, sizeof want);
  assert_memory_equal(got, want, sizeof want);
  free(got);

  /* a scalar: shape (), no growth room */
  const double x = 0.5;
  assert_int_equal(mil_npy_write(path, MIL_DT_FP64, 0, NULL, &x, &d), MIL_OK);
  got = slurp(path, &n);
  assert_int_equal(n, 128 + 8);
  const char *h0 = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
  assert_memory_equal(got + 10, h0, strlen(h0));
  for (size_t i = 10 + strlen(h0); i < 127; i++) assert_int_equal(got[i], ' ');
  assert_int_equal(got[127], '\n');
  assert_int_equal(got[8], 118);
  free(got);

  /* rank 1 prints a one-element tuple */
  const uint8_t b[5] = {1, 0, 1, 1, 0};
  const int64_t s5 = 5;
  assert_int_equal(mil_npy_write(path, MIL_DT_BOOL, 1, &s5, b, &d), MIL_OK);
  got = slurp(path, &n);
  const char *h1 = "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }";
  assert_memory_equal(got + 10, h1, strlen(h1));
  assert_int_equal(n, 128 + 5);
  free(got);
  assert_int_equal(d.n_errors, 0);
  mil_diag_clear(&d);
}

/* ---- round trips: every dtype, ranks 0..5 ---------------------------------- */

static void test_roundtrip_all(void **state) {
  static const struct {
    mil_dtype dt;
    int size;
    const char *descr;
  } rows[] = {
      {MIL_DT_FP16, 2, "<f2"},  {MIL_DT_FP32, 4, "<f4"},   {MIL_DT_FP64, 8, "<f8"},   {MIL_DT_INT8, 1, "|i1"},
      {MIL_DT_INT16, 2, "<i2"}, {MIL_DT_INT32, 4, "<i4"},  {MIL_DT_INT64, 8, "<i8"},  {MIL_DT_UINT8, 1, "|u1"},
      {MIL_DT_UINT16, 2, "<u2"}, {MIL_DT_UINT32, 4, "<u4"}, {MIL_DT_UINT64, 8, "<u8"}, {MIL_DT_BOOL, 1, "|b1"},
  };
  const int64_t shapes[6][5] = {{0}, {7}, {3, 4}, {2, 1, 5}, {1, 2, 3, 2}, {2, 1, 3, 1, 2}};
  char path[300];
  path_in_dir(path, sizeof path, "rt.npy");
  mil_diag d = {0};
  uint8_t buf[1024];
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    assert_string_equal(mil_npy_descr(rows[r].dt), rows[r].descr);
    for (int rank = 0; rank <= 5; rank++) {
      int64_t n = 1;
      for (int i = 0; i < rank; i++) n *= shapes[rank][i];
      size_t nb = (size_t)n * (size_t)rows[r].size;
      for (size_t i = 0; i < nb; i++)
        buf[i] = rows[r].dt == MIL_DT_BOOL ? (uint8_t)(i % 3 == 0) : (uint8_t)(i * 37 + r + (size_t)rank);
      assert_int_equal(mil_npy_write(path, rows[r].dt, rank, shapes[rank], buf, &d), MIL_OK);
      mil_npy *a = NULL;
      assert_int_equal(mil_npy_read(path, &a, &d), MIL_OK);
      assert_int_equal(a->dtype, rows[r].dt);
      assert_int_equal(a->rank, rank);
      for (int i = 0; i < rank; i++) assert_int_equal(a->shape[i], shapes[rank][i]);
      assert_int_equal(a->numel, n);
      assert_int_equal(a->nbytes, nb);
      assert_int_equal(a->version_major, 1);
      assert_memory_equal(a->data, buf, nb);
      mil_npy_free(a);
    }
  }
  /* empty arrays */
  const int64_t z[2] = {3, 0};
  assert_int_equal(mil_npy_write(path, MIL_DT_FP32, 2, z, NULL, &d), MIL_OK);
  mil_npy *a = NULL;
  assert_int_equal(mil_npy_read(path, &a, &d), MIL_OK);
  assert_int_equal(a->numel, 0);
  assert_int_equal(a->nbytes, 0);
  assert_int_equal(a->shape[1], 0);
  mil_npy_free(a);
  assert_int_equal(d.n_errors, 0);
  assert_int_equal(d.n_warnings, 0);
  mil_diag_clear(&d);
}

/* ---- hand-built headers ---------------------------------------------------- */

static void test_handbuilt_headers(void **state) {
  uint8_t img[512];
  mil_diag d = {0};
  mil_npy *a = NULL;
  /* v1.0, keys reordered, no spaces, no trailing comma */
  const int16_t s3[3] = {-1, 2, 300};
  size_t n = image(img, 1, "{'shape':(3,),'fortran_order':False,'descr':'<i2'}\n", s3, sizeof s3);
  assert_int_equal(mil_npy_read_mem(img, n, "v1.npy", &a, &d), MIL_OK);
  assert_int_equal(a->dtype, MIL_DT_INT16);
  assert_int_equal(a->rank, 1);
  assert_int_equal(a->shape[0], 3);
  assert_int_equal(((int16_t *)a->data)[2], 300);
  assert_int_equal(((int16_t *)a->data)[0], -1);
  mil_npy_free(a);
  /* v2.0 with a 4-byte length, double quotes, odd spacing, trailing commas */
  const double d4[4] = {1.5, -2.25, 1e300, 0};
  n = image(img, 2, "{ \"descr\" :\t\"<f8\" ,\n 'shape' : ( 2 , 2 , ) , 'fortran_order' : False , }      \n", d4,
            sizeof d4);
  assert_int_equal(mil_npy_read_mem(img, n, "v2.npy", &a, &d), MIL_OK);
  assert_int_equal(a->dtype, MIL_DT_FP64);
  assert_int_equal(a->version_major, 2);
  assert_int_equal(a->rank, 2);
  assert_true(((double *)a->data)[1] == -2.25 && ((double *)a->data)[2] == 1e300);
  mil_npy_free(a);
  /* v3.0 (utf-8 header), scalar, native byte order, Python 2 long dims */
  const uint32_t u = 0xDEADBEEF;
  n = image(img, 3, "{'descr': '=u4', 'fortran_order': False, 'shape': (), }\n", &u, 4);
  assert_int_equal(mil_npy_read_mem(img, n, "v3.npy", &a, &d), MIL_OK);
  assert_int_equal(a->rank, 0);
  assert_int_equal(a->numel, 1);
  assert_int_equal(*(uint32_t *)a->data, 0xDEADBEEF);
  mil_npy_free(a);
  const uint8_t bools[4] = {0, 1, 2, 255};
  n = image(img, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2L, 2L), }\n", bools, 4);
  assert_int_equal(mil_npy_read_mem(img, n, "b.npy", &a, &d), MIL_OK);
  assert_int_equal(a->dtype, MIL_DT_BOOL);
  const uint8_t norm[4] = {0, 1, 1, 1};
  assert_memory_equal(a->data, norm, 4);
  mil_npy_free(a);
  /* '<i1' is accepted for int8 as well as numpy's '|i1'; '<u1' for uint8 */
  const int8_t i8[2] = {-5, 7};
  n = image(img, 1, "{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }\n", i8, 2);
  assert_int_equal(mil_npy_read_mem(img, n, "i8.npy", &a, &d), MIL_OK);
  assert_int_equal(a->dtype, MIL_DT_INT8);
  assert_int_equal(((int8_t *)a->data)[0], -5);
  mil_npy_free(a);
  assert_int_equal(d.n_errors, 0);
  /* trailing bytes: accepted with a warning */
  n = image(img, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n", "abcd", 4);
  assert_int_equal(mil_npy_read_mem(img, n, "t.npy", &a, &d), MIL_OK);
  assert_int_equal(a->numel, 2);
  assert_int_equal(d.n_warnings, 1);
  assert_true(contains(d.msgs[0].text, "2 trailing bytes"));
  mil_npy_free(a);
  mil_diag_clear(&d);
}

/* ---- corpus inputs and reference outputs ----------------------------------- */

static bool all_finite_f32(const mil_npy *a) {
  const float *f = a->data;
  for (int64_t i = 0; i < a->numel; i++)
    if (!isfinite(f[i])) return false;
  return true;
}

static void test_corpus(void **state) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/corpus/models", MIL_SHARED_DIR);
  DIR *dp = opendir(dir);
  if (!dp) {
    shared_skip("the corpus");
    return;
  }
  int files = 0;
  struct dirent *e;
  char path[1024], out[300];
  path_in_dir(out, sizeof out, "copy.npy");
  while ((e = readdir(dp)) != NULL) {
    if (e->d_name[0] == '.') continue;
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s/%s/%s", dir, e->d_name, k == 0 ? "x.npy" : "y_torch.npy");
      if (access(path, R_OK) != 0) continue;
      mil_diag d = {0};
      mil_npy *a = NULL;
      assert_int_equal(mil_npy_read(path, &a, &d), MIL_OK);
      assert_int_equal(d.n_warnings, 0);
      assert_true(a->rank >= 1);
      int64_t n = 1;
      for (int i = 0; i < a->rank; i++) {
        assert_true(a->shape[i] >= 1);
        n *= a->shape[i];
      }
      assert_int_equal(a->numel, n);
      assert_true(a->dtype == MIL_DT_FP32 || a->dtype == MIL_DT_INT32);
      if (k == 1) assert_int_equal(a->dtype, MIL_DT_FP32); /* reference outputs */
      if (a->dtype == MIL_DT_FP32) assert_true(all_finite_f32(a));
      size_t flen;
      uint8_t *orig = slurp(path, &flen);
      assert_non_null(orig);
      assert_int_equal(flen, a->nbytes + 128);
      /* numpy wrote it; our writer must produce the very same bytes */
      assert_int_equal(mil_npy_write(out, a->dtype, a->rank, a->shape, a->data, &d), MIL_OK);
      size_t clen;
      uint8_t *copy = slurp(out, &clen);
      assert_int_equal(clen, flen);
      assert_memory_equal(copy, orig, flen);
      /* and the in-memory reader agrees with the file reader */
      mil_npy *b = NULL;
      assert_int_equal(mil_npy_read_mem(orig, flen, path, &b, &d), MIL_OK);
      assert_int_equal(b->nbytes, a->nbytes);
      assert_memory_equal(b->data, a->data, a->nbytes);
      mil_npy_free(b);
      free(copy);
      free(orig);
      mil_npy_free(a);
      mil_diag_clear(&d);
      files++;
    }
  }
  closedir(dp);
  printf("corpus: %d .npy files read and re-written byte-identically\n", files);
}

/* ---- malformed files ------------------------------------------------------- */

static void expect_mem_error(const uint8_t *img, size_t n, mil_status want, const char *text) {
  mil_diag d = {0};
  mil_npy *a = (mil_npy *)1;
  assert_int_equal(mil_npy_read_mem(img, n, "bad.npy", &a, &d), want);
  assert_null(a);
  assert_true(contains(mil_diag_first_error(&d), "bad.npy: "));
  assert_true(contains(mil_diag_first_error(&d), text));
  mil_diag_clear(&d);
}

static void expect_header_error(const char *hdr, mil_status want, const char *text) {
  uint8_t img[1024];
  uint8_t zeros[64] = {0};
  size_t n = image(img, 1, hdr, zeros, sizeof zeros);
  expect_mem_error(img, n, want, text);
}

static void test_malformed(void **state) {
  uint8_t img[512];
  size_t n;
  /* bad magic, short files, bad versions */
  n = image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", "abcd", 4);
  img[1] = 'M';
  expect_mem_error(img, n, MIL_ERR_FORMAT, "byte 0: magic 93 4D 55 4D 50 59, expected \\x93NUMPY");
  expect_mem_error((const uint8_t *)"\x93NUM", 4, MIL_ERR_FORMAT, "byte 4: file ends inside the .npy magic");
  expect_mem_error((const uint8_t *)"", 0, MIL_ERR_FORMAT, "file ends inside");
  expect_mem_error((const uint8_t *)"\x93NUMPY\x01\x00\x10", 9, MIL_ERR_FORMAT,
                   "byte 9: file ends inside the header length field");
  n = image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", "abcd", 4);
  img[6] = 4;
  expect_mem_error(img, n, MIL_ERR_FORMAT, "byte 6: format version 4.0, expected 1.0, 2.0 or 3.0");
  img[6] = 1;
  img[7] = 1;
  expect_mem_error(img, n, MIL_ERR_FORMAT, "format version 1.1");
  /* truncated header */
  n = image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", NULL, 0);
  expect_mem_error(img, n - 20, MIL_ERR_FORMAT, "byte 10: header of 58 bytes extends past the end of the file (48 "
                   "bytes)");
  n = image(img, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", NULL, 0);
  img[11] = 0x7f; /* a 2 GB header length */
  expect_mem_error(img, n, MIL_ERR_FORMAT, "byte 8: header length");

  /* header not a dict, or not a valid one */
  expect_header_error("[1, 2, 3]\n", MIL_ERR_FORMAT, "npy header at byte 10: expected '{' at the start of the header "
                      "dict, found '['");
  expect_header_error("   \n", MIL_ERR_FORMAT, "expected '{' at the start of the header dict, found end of header");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)\n", MIL_ERR_FORMAT,
                      "expected ',' or '}' after a header value, found end of header");
  expect_header_error("{'descr': '<f4', 'fortran_order': False}\n", MIL_ERR_FORMAT,
                      "header dict lacks the key 'shape'");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n", MIL_ERR_FORMAT,
                      "npy header at byte 66: unexpected key 'extra'");
  expect_header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n", MIL_ERR_FORMAT,
                      "duplicate key 'descr'");
  expect_header_error("{descr: '<f4'}\n", MIL_ERR_FORMAT, "byte 11: expected a string as a header key, found 'd'");
  expect_header_error("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}\n", MIL_ERR_FORMAT,
                      "byte 19: expected ':' after a header key, found '");
  expect_header_error("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}\n", MIL_ERR_UNSUPPORTED,
                      "'descr' '<f4, ' is not a supported dtype");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x\n", MIL_ERR_FORMAT,
                      "unterminated string as a header key");
  expect_header_error("{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}\n", MIL_ERR_FORMAT,
                      "expected True or False for 'fortran_order', found 'f'");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", MIL_ERR_FORMAT,
                      "expected only padding after the header dict, found 'x'");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4)}\n", MIL_ERR_FORMAT,
                      "'shape' (4) is a parenthesized integer, not a tuple; expected (4,)");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': [4]}\n", MIL_ERR_FORMAT,
                      "expected a tuple such as (1, 3) or () for 'shape', found '['");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}\n", MIL_ERR_FORMAT,
                      "dimension 1 of 'shape' is negative");
  expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}\n", MIL_ERR_FORMAT,
                      "expected ',' or ')' in 'shape', found '3'");

  /* dtypes */
  expect_header_error("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", MIL_ERR_UNSUPPORTED,
                      "npy header at byte 20: 'descr' '<c8' is not a supported dtype");
  expect_header_error("{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }\n", MIL_ERR_UNSUPPORTED,
                      "'descr' '<U5' is not a supported dtype");
  expect_header_error("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n", MIL_ERR_UNSUPPORTED,
                      "'descr' '|O' is not a supported dtype");
  expect_header_error("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", MIL_ERR_UNSUPPORTED,
                      "'descr' '>f4' is big-endian");
  expect_header_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", MIL_ERR_UNSUPPORTED,
                      "structured dtype");
  expect_header_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", MIL_ERR_UNSUPPORTED,
                      "'fortran_order' is True; only C-order arrays are supported");

  /* data shorter than the shape says; shape overflow */
  n = image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", "0123456789", 10);
  expect_mem_error(img, n, MIL_ERR_FORMAT, "byte 70: data of 24 bytes expected for 6 <f4 elements, found 10 bytes");
  expect_header_error("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n",
                      MIL_ERR_FORMAT, "'shape' element count overflows 64 bits");
  expect_header_error("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
                      MIL_ERR_FORMAT, "dimension 0 of 'shape' overflows a 64-bit integer");
  expect_header_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }\n",
                      MIL_ERR_FORMAT, "overflows the addressable size");
  /* 33 dimensions */
  char many[512] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 33; i++) strcat(many, "1, ");
  strcat(many, "), }\n");
  expect_header_error(many, MIL_ERR_FORMAT, "'shape' has more than 32 dimensions");
}

static void test_file_errors(void **state) {
  mil_diag d = {0};
  mil_npy *a = NULL;
  assert_int_equal(mil_npy_read("/nonexistent/x.npy", &a, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "/nonexistent/x.npy: cannot open"));
  mil_diag_clear(&d);
  assert_int_equal(mil_npy_read(g_dir, &a, &d), MIL_ERR_IO);
  mil_diag_clear(&d);
  /* a file truncated inside its data, read through the file path */
  char path[300];
  path_in_dir(path, sizeof path, "short.npy");
  uint8_t img[256];
  size_t n = image(img, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }\n", "01234567", 8);
  write_file(path, img, n);
  assert_int_equal(mil_npy_read(path, &a, &d), MIL_ERR_FORMAT);
  assert_true(contains(mil_diag_first_error(&d), "short.npy: byte 68: data of 24 bytes expected for 3 <i8 elements, "
                       "found 8 bytes"));
  mil_diag_clear(&d);
  write_file(path, img, 30);
  assert_int_equal(mil_npy_read(path, &a, &d), MIL_ERR_FORMAT);
  assert_true(contains(mil_diag_first_error(&d), "header of 58 bytes extends past the end of the file (30 bytes)"));
  mil_diag_clear(&d);
  write_file(path, img, 0);
  assert_int_equal(mil_npy_read(path, &a, &d), MIL_ERR_FORMAT);
  mil_diag_clear(&d);

  /* writer: unsupported dtype, bad rank, failed rename leaves no temp file */
  const int64_t s = 4;
  uint16_t v[4] = {0};
  assert_int_equal(mil_npy_write(path, MIL_DT_BF16, 1, &s, v, &d), MIL_ERR_UNSUPPORTED);
  mil_diag_clear(&d);
  assert_int_equal(mil_npy_write(path, MIL_DT_FP16, 33, &s, v, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  const int64_t neg = -1;
  assert_int_equal(mil_npy_write(path, MIL_DT_FP16, 1, &neg, v, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  char sub[300];
  path_in_dir(sub, sizeof sub, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  char target[320];
  snprintf(target, sizeof target, "%s/out.npy", sub);
  assert_int_equal(mkdir(target, 0755), 0); /* rename onto a directory fails */
  assert_int_equal(mil_npy_write(target, MIL_DT_FP16, 1, &s, v, &d), MIL_ERR_IO);
  assert_true(contains(mil_diag_first_error(&d), "out.npy: cannot rename"));
  mil_diag_clear(&d);
  DIR *dp = opendir(sub);
  assert_non_null(dp);
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(dp)) != NULL)
    if (e->d_name[0] != '.') entries++;
  closedir(dp);
  assert_int_equal(entries, 1); /* only the directory "out.npy" */
  assert_int_equal(mil_npy_write("/nonexistent/dir/x.npy", MIL_DT_FP16, 1, &s, v, &d), MIL_ERR_IO);
  mil_diag_clear(&d);
}

static int setup(void **state) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/mil_test_npy_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_write_exact_bytes), cmocka_unit_test(test_roundtrip_all),
      cmocka_unit_test(test_handbuilt_headers), cmocka_unit_test(test_corpus),
      cmocka_unit_test(test_malformed),         cmocka_unit_test(test_file_errors),
  };
  return shared_exit(cmocka_run_group_tests(tests, setup, teardown));
}

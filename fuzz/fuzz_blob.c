/* Fuzz target: the input bytes are a weight.bin file. Opens it, enumerates
 * every blob, reads each with its own dtype and element count, and writes
 * every readable blob into a fresh file whose read-back must match. Any
 * crash, sanitizer report or mismatch is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mil/blob.h"

static int make_memfd(const char *name, const uint8_t *data, size_t size) {
  int fd = memfd_create(name, 0);
  if (fd < 0) abort();
  size_t off = 0;
  while (off < size) {
    ssize_t r = write(fd, data + off, size - off);
    if (r <= 0) abort();
    off += (size_t)r;
  }
  return fd;
}

/* Round trip of one accepted blob through the writer. */
static void rewrite(const char *out_path, const mil_blob_info *info, const void *p) {
  mil_diag d = {0};
  mil_blob_writer *w = NULL;
  if (mil_blob_writer_open(out_path, 0, &w, &d) != MIL_OK) abort();
  uint64_t off = 0;
  if (mil_blob_writer_add(w, info->dtype, p, (size_t)info->nbytes, info->numel, &off, &d) != MIL_OK) abort();
  if (mil_blob_writer_add(w, info->dtype, p, (size_t)info->nbytes, info->numel, &off, &d) != MIL_OK) abort();
  if (off != 64 || mil_blob_writer_count(w) != 1) abort(); /* the duplicate was folded */
  if (mil_blob_writer_close(w, &d) != MIL_OK) abort();
  mil_blob_file *g = NULL;
  if (mil_blob_file_open(out_path, &g, &d) != MIL_OK) abort();
  const void *q;
  size_t nb;
  if (mil_blob_file_read(g, 64, info->dtype, info->numel, &q, &nb, &d) != MIL_OK) abort();
  if (nb != info->nbytes || (nb > 1 && memcmp(p, q, nb - 1) != 0)) abort();
  /* the last byte may differ only in unused high (padding) bits */
  uint32_t code = mil_blob_dtype_code(info->dtype);
  if (code >= 8 && code <= 13) { /* sub-byte: padding_bits < 8 was checked */
    uint8_t mask = (uint8_t)(0xFFu >> info->padding_bits);
    if ((((const uint8_t *)p)[nb - 1] & mask) != ((const uint8_t *)q)[nb - 1]) abort();
  } else if (((const uint8_t *)p)[nb - 1] != ((const uint8_t *)q)[nb - 1]) {
    abort();
  }
  mil_blob_file_close(g);
  mil_diag_clear(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = make_memfd("weight.bin", data, size);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int ofd = memfd_create("out.bin", 0);
  if (ofd < 0) abort();
  char out_path[64];
  snprintf(out_path, sizeof out_path, "/proc/self/fd/%d", ofd);

  mil_diag d = {0};
  d.max_msgs = 4;
  mil_blob_file *f = NULL;
  if (mil_blob_file_open(path, &f, &d) == MIL_OK) {
    mil_blob_iter it;
    mil_blob_iter_init(f, &it);
    unsigned rewrites = 0;
    for (;;) {
      mil_blob_info info;
      bool done = false;
      if (mil_blob_iter_next(f, &it, &info, &done, &d) != MIL_OK || done) break;
      const void *p;
      size_t nb;
      if (mil_blob_file_read(f, info.meta_offset, info.dtype, info.numel, &p, &nb, &d) != MIL_OK) abort();
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < nb; i++) sink ^= ((const uint8_t *)p)[i];
      (void)sink;
      if (rewrites++ < 4) rewrite(out_path, &info, p);
    }
    /* reads at arbitrary offsets taken from the input */
    for (size_t i = 0; i + 9 <= size && i < 64 * 9; i += 9) {
      uint64_t off;
      memcpy(&off, data + i, 8);
      if (data[i + 8] & 1) off %= (size + 128);
      static const mil_dtype dts[] = {MIL_DT_FP16, MIL_DT_FP32, MIL_DT_UINT3, MIL_DT_INT4, MIL_DT_UINT6, MIL_DT_FP64};
      const void *p;
      size_t nb;
      mil_blob_file_read(f, off, dts[data[i + 8] % 6], data[i + 8] >> 1, &p, &nb, &d);
    }
    mil_blob_file_close(f);
  }
  mil_diag_clear(&d);
  close(ofd);
  close(fd);
  return 0;
}

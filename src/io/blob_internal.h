/* Internal helpers shared by the weight blob reader (blob_read.c) and
 * writer (blob_write.c): the BlobDataType table, little-endian field access
 * and the layout arithmetic of formats.md section 4. */
#ifndef MIL_IO_BLOB_INTERNAL_H
#define MIL_IO_BLOB_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "mil/blob.h"

/* Field offsets inside the 64-byte records. */
enum {
  IO_BLOB_HDR_COUNT = 0,
  IO_BLOB_HDR_VERSION = 4,
  IO_BLOB_META_SENTINEL = 0,
  IO_BLOB_META_DTYPE = 4,
  IO_BLOB_META_SIZE = 8,
  IO_BLOB_META_OFFSET = 16,
  IO_BLOB_META_PADDING = 24,
};

/* One row of the BlobDataType table. */
typedef struct io_blob_type {
  uint32_t code;   /* BlobDataType */
  mil_dtype dtype; /* MIL dtype */
  int bits;        /* bits per element: 1..6 sub-byte, 8, 16, 32 */
} io_blob_type;

/* The row for a MIL dtype or a BlobDataType code; NULL when there is none. */
const io_blob_type *io_blob_type_of_dtype(mil_dtype dt);
const io_blob_type *io_blob_type_of_code(uint32_t code);

/* Short name of a dtype for messages ("fp32", "uint3", ...), independent of
 * the core's name table so the blob code can stand alone. */
const char *io_blob_dtype_name(mil_dtype dt);

static inline uint32_t io_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t io_le64(const uint8_t *p) { return (uint64_t)io_le32(p) | (uint64_t)io_le32(p + 4) << 32; }

static inline void io_put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline void io_put_le64(uint8_t *p, uint64_t v) {
  io_put_le32(p, (uint32_t)v);
  io_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* x rounded up to a multiple of 64; saturates instead of wrapping. */
static inline uint64_t io_blob_align(uint64_t x) {
  if (x > UINT64_MAX - (MIL_BLOB_ALIGNMENT - 1)) return UINT64_MAX & ~(uint64_t)(MIL_BLOB_ALIGNMENT - 1);
  return (x + MIL_BLOB_ALIGNMENT - 1) & ~(uint64_t)(MIL_BLOB_ALIGNMENT - 1);
}

#endif

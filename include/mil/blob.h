/* libmil: the weight blob file (weight.bin, storage format version 2).
 *
 * Mirrors coremltools' MILBlob library (mlmodel/src/MILBlob/Blob/
 * StorageFormat.hpp, StorageReader.cpp, StorageWriter.cpp, MMapFileReader.cpp)
 * and the policy in coremltools/converters/mil/backend/mil/load.py
 * (should_use_weight_file). The layout is specified in formats.md section 4:
 *
 *   offset 0       storage header (64 bytes: count u32, version u32 = 2, zeros)
 *   offset M       blob metadata  (64 bytes, M % 64 == 0): sentinel 0xDEADBEEF,
 *                  blob data type u32, sizeInBytes u64, payload offset u64,
 *                  padding_size_in_bits u64, four reserved u64
 *   offset M + 64  payload, then zero padding up to the next multiple of 64
 *
 * All integers are little-endian. A blob is identified by the offset of its
 * metadata record (what Value.blobFileValue.offset holds).
 *
 * Payload layout equals libmil's in-memory tensor layout (value.h): byte and
 * wider types are dense little-endian; int4 and uint1/2/3/4/6 are one
 * LSB-first bit stream. Reading is therefore zero-copy: mil_blob_file_read
 * returns a pointer into the read-only mapping.
 *
 * Lifetime rule: a pointer returned by mil_blob_file_read stays valid until
 * the last reference to the mil_blob_file is released. Whoever builds values
 * that view the mapping (MIL_STORE_VIEW) must keep the file open for as long
 * as those values are used; the model loader keeps one reference inside the
 * model object. mil_blob_file_retain adds a reference, mil_blob_file_close
 * drops one and unmaps the file when the count reaches zero. Like any
 * mapping, the file must not be truncated by someone else while it is open
 * (pages past the new end would fault); replace weight files by writing a
 * new file and renaming it, never in place.
 */
#ifndef MIL_BLOB_H
#define MIL_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "types.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Storage format constants (formats.md 4.1-4.3). */
#define MIL_BLOB_VERSION 2u
#define MIL_BLOB_ALIGNMENT 64u
#define MIL_BLOB_HEADER_SIZE 64u
#define MIL_BLOB_METADATA_SIZE 64u
#define MIL_BLOB_SENTINEL 0xDEADBEEFu

/* ------------------------------------------------------------------------ */
/* Data type mapping                                                          */
/* ------------------------------------------------------------------------ */

/* The blob file's own data type number (BlobDataType, formats.md 4.3) for a
 * MIL dtype: fp16 1, fp32 2, uint8 3, int8 4, bf16 5, int16 6, uint16 7,
 * int4 8, uint1 9, uint2 10, uint4 11, uint3 12, uint6 13, int32 14,
 * uint32 15, fp8e4m3fn 16, fp8e5m2 17. These are NOT the MIL DataType
 * numbers. Returns 0 for a dtype that cannot be stored in a blob file (bool,
 * string, fp64, int64, uint64, complex). */
MIL_API uint32_t mil_blob_dtype_code(mil_dtype dt);

/* Inverse of mil_blob_dtype_code; MIL_DT_UNUSED (0) for an unknown code. */
MIL_API mil_dtype mil_blob_dtype_from_code(uint32_t code);

/* coremltools' policy (formats.md 3.1, load.py should_use_weight_file) for
 * which dtypes a writer puts into weight.bin at a given specification
 * version: fp16, fp32, uint8, int8 and the sub-byte types int4 and
 * uint1/2/3/4/6 (held as int8/uint8 arrays by coremltools) always; also
 * int16, uint16, int32, uint32 from specification version 9 (iOS18). bf16
 * and fp8 are never chosen (the Python writer cannot produce them), though
 * mil_blob_writer_add accepts them. */
MIL_API bool mil_blob_dtype_supported(mil_dtype dt, int spec_version);

/* True when the model writer should store `v` in weight.bin rather than as
 * an immediate value: a tensor (or scalar) value with at least 10 elements
 * whose dtype passes mil_blob_dtype_supported. False for NULL, lists,
 * tuples, dicts and strings. */
MIL_API bool mil_blob_should_store(const mil_value *v, int spec_version);

/* ------------------------------------------------------------------------ */
/* Reader                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct mil_blob_file mil_blob_file;

/* What one blob's metadata says, after validation. */
typedef struct mil_blob_info {
  uint64_t meta_offset;  /* offset of the metadata record (the blob's id) */
  uint64_t data_offset;  /* absolute offset of the payload */
  uint64_t nbytes;       /* sizeInBytes */
  uint64_t padding_bits; /* padding_size_in_bits (sub-byte types; else as stored) */
  uint32_t blob_dtype;   /* BlobDataType code as stored */
  mil_dtype dtype;       /* the matching MIL dtype */
  int64_t numel;         /* element count implied by nbytes and padding */
} mil_blob_info;

/* Opens `path` and maps it read-only (mmap, MAP_PRIVATE). Checks that it is
 * a regular file of at least 64 bytes whose header says version 2. On
 * success *out holds one reference (release with mil_blob_file_close).
 * The path is copied and used as given in every later error message.
 * Errors: MIL_ERR_IO (open/fstat/mmap fails, not a regular file),
 * MIL_ERR_FORMAT (shorter than the 64-byte header, version != 2),
 * MIL_ERR_INVALID (NULL arguments), MIL_ERR_NOMEM. */
MIL_API mil_status mil_blob_file_open(const char *path, mil_blob_file **out, mil_diag *d);

/* Adds a reference; returns f. */
MIL_API mil_blob_file *mil_blob_file_retain(mil_blob_file *f);

/* Drops a reference; the last one unmaps the file and frees the handle,
 * invalidating every pointer mil_blob_file_read returned. NULL is ignored. */
MIL_API void mil_blob_file_close(mil_blob_file *f);

/* The path given to mil_blob_file_open (owned by f). */
MIL_API const char *mil_blob_file_path(const mil_blob_file *f);

/* File size in bytes. */
MIL_API uint64_t mil_blob_file_size(const mil_blob_file *f);

/* The blob count recorded in the header (not cross-checked; the reference
 * reader does not verify it either). */
MIL_API uint32_t mil_blob_file_count(const mil_blob_file *f);

/* The base address of the mapping (size mil_blob_file_size). */
MIL_API const void *mil_blob_file_base(const mil_blob_file *f);

/* Checks that the file still covers the whole mapping: fstat on the open
 * file, whose size must still be at least mil_blob_file_size (one system
 * call; no page is touched). A file truncated since it was opened (by
 * another process writing it in place) would make any read of a weight
 * past its new end kill the process with SIGBUS; call this before reading
 * through the mapping after a while (mil run and libmil's Python predict
 * do, before every run). A file replaced by a rename is not affected: the
 * mapping keeps the old file. Errors: MIL_ERR_IO naming the file, its
 * size when opened and now (or the fstat error), MIL_ERR_INVALID for NULL. */
MIL_API mil_status mil_blob_file_check(const mil_blob_file *f, mil_diag *d);

/* Validates the metadata record at `meta_offset` on its own terms (no
 * expected dtype or element count): record inside the file, sentinel,
 * known data type, payload inside the file, sizeInBytes > 0, sub-byte
 * padding rules, byte types a whole number of elements, payload aligned to
 * its element size. Fills *info. Errors: MIL_ERR_FORMAT, MIL_ERR_INVALID. */
MIL_API mil_status mil_blob_file_info(const mil_blob_file *f, uint64_t meta_offset, mil_blob_info *info,
                                      mil_diag *d);

/* Returns a zero-copy view of the blob whose metadata is at `meta_offset`,
 * after checking, before touching the payload: the 64 metadata bytes lie
 * inside the file; sentinel == 0xDEADBEEF; the stored data type is the
 * BlobDataType of `dtype`; the payload [offset, offset + sizeInBytes) lies
 * inside the file; sizeInBytes > 0; for sub-byte types padding < 8, padding
 * a multiple of the bit width for 1/2/4-bit types, (sizeInBytes*8 -
 * padding) a multiple of the bit width and sizeInBytes == ceil(n*bits/8);
 * the element count equals `numel`; for byte types sizeInBytes == numel *
 * element size. libmil additionally requires the payload offset to be a
 * multiple of the element size (always true for files written by
 * coremltools or libmil, whose payloads are 64-aligned) so that the view
 * can be read as a typed array.
 * *data points into the mapping (valid per the lifetime rule above) and
 * *nbytes is sizeInBytes. Every error message names the file, the blob's
 * metadata offset, the field, and the expected and found values, e.g.
 * "weights/weight.bin: blob at offset 192: sentinel 0x00000000, expected
 * 0xDEADBEEF". Errors: MIL_ERR_FORMAT (any check above),
 * MIL_ERR_INVALID (NULL arguments, negative numel, dtype that cannot be in
 * a blob file). */
MIL_API mil_status mil_blob_file_read(mil_blob_file *f, uint64_t meta_offset, mil_dtype dtype, int64_t numel,
                                      const void **data, size_t *nbytes, mil_diag *d);

/* Enumerates the blobs in file order: the first metadata record is at 64,
 * each next one at align64(payload offset + sizeInBytes), `count` times.
 * Initialize the cursor with mil_blob_iter_init, then call
 * mil_blob_iter_next until it sets *done. Each step validates the record
 * as mil_blob_file_info does; a record that does not advance past the
 * previous one is a format error, so enumeration always terminates.
 * Errors: MIL_ERR_FORMAT, MIL_ERR_INVALID. */
typedef struct mil_blob_iter {
  uint64_t next_meta; /* offset of the next metadata record */
  uint32_t index;     /* blobs returned so far */
} mil_blob_iter;

MIL_API void mil_blob_iter_init(const mil_blob_file *f, mil_blob_iter *it);
MIL_API mil_status mil_blob_iter_next(const mil_blob_file *f, mil_blob_iter *it, mil_blob_info *info, bool *done,
                                      mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Writer                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct mil_blob_writer mil_blob_writer;

/* Flags for mil_blob_writer_open. */
enum {
  /* Write every added blob, even one identical to an earlier blob (what
   * coremltools' BlobWriter does). By default identical blobs (same dtype,
   * same bytes) share one record. */
  MIL_BLOB_WRITE_NO_DEDUP = 1u << 0,
};

/* Creates or truncates `path` (mode 0666 minus umask; opened read-write so
 * that duplicate checks can read back what was written) and writes a header
 * with count 0 and version 2. Errors: MIL_ERR_IO, MIL_ERR_INVALID (NULL
 * arguments, unknown flag), MIL_ERR_NOMEM. */
MIL_API mil_status mil_blob_writer_open(const char *path, unsigned flags, mil_blob_writer **out, mil_diag *d);

/* Appends one blob exactly as the reference writer lays it out: metadata
 * at M = end of file rounded up to 64 (zero gap), payload at M + 64,
 * reserved fields zero, padding_size_in_bits = sizeInBytes*8 - numel*bits
 * for sub-byte types (0 otherwise). `data` holds `numel` elements in
 * libmil's in-memory layout (value.h), `nbytes` bytes: numel * element size,
 * or ceil(numel*bits/8) for sub-byte types, whose unused high bits of the
 * last byte are written as zero whatever they hold. Unless the writer was
 * opened with MIL_BLOB_WRITE_NO_DEDUP, a blob with the same dtype and bytes
 * as an earlier one is not written again and gets the earlier offset.
 * *meta_offset_out (may be NULL) receives M, the value for
 * BlobFileValue.offset. Large payloads are written straight from `data`.
 * Errors: MIL_ERR_INVALID (dtype not storable, numel < 1, nbytes not
 * matching numel, closed/failed writer), MIL_ERR_IO (write failure; the
 * writer then refuses further calls), MIL_ERR_NOMEM. */
MIL_API mil_status mil_blob_writer_add(mil_blob_writer *w, mil_dtype dt, const void *data, size_t nbytes, int64_t numel,
                                       uint64_t *meta_offset_out, mil_diag *d);

/* Produces bytes [offset, offset + n) of a payload into dst (n is at most
 * 4 MiB); returns false on failure. */
typedef bool (*mil_blob_read_fn)(void *ud, size_t offset, size_t n, void *dst);

/* As mil_blob_writer_add, with the payload's bytes produced piecewise by
 * `read` (called with increasing and repeated ranges of at most 4 MiB), so
 * that a payload computed on the fly (a deferred value, value.h) is written
 * without being held whole. A reader failure is MIL_ERR_IO (the writer
 * stays usable when it happens before anything of the blob is written).
 * Other errors as mil_blob_writer_add. */
MIL_API mil_status mil_blob_writer_add_stream(mil_blob_writer *w, mil_dtype dt, mil_blob_read_fn read, void *ud,
                                              size_t nbytes, int64_t numel, uint64_t *meta_offset_out, mil_diag *d);

/* Number of distinct blobs written so far. */
MIL_API uint32_t mil_blob_writer_count(const mil_blob_writer *w);

/* Bytes in the file so far (including buffered bytes). */
MIL_API uint64_t mil_blob_writer_size(const mil_blob_writer *w);

/* Flushes, writes the final header (count), closes the file and frees w
 * (always, even on error). Until this returns MIL_OK the file is not a
 * complete weight file (its header count is still 0). Errors: MIL_ERR_IO (any write or close failed,
 * including an earlier one), reported with the path and offset. */
MIL_API mil_status mil_blob_writer_close(mil_blob_writer *w, mil_diag *d);

/* Closes and deletes the partly written file and frees w. NULL is ignored. */
MIL_API void mil_blob_writer_abort(mil_blob_writer *w);

#ifdef __cplusplus
}
#endif
#endif

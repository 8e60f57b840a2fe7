/* Weight blob file reader (weight.bin, storage format version 2).
 *
 * Mirrors the checks of coremltools' MILBlob StorageReader / MMapFileReader
 * (formats.md 4.5, "Reader validation") plus the two recommended extra
 * checks (element count equals the tensor's, byte types exactly n * size)
 * and payload alignment. The file is mapped read-only once; every read is
 * bounds-checked against the mapping before the payload is touched, and
 * the returned pointer is a view into the mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/blob_internal.h"
#include "io/fsafe.h"

struct mil_blob_file {
  const uint8_t *base; /* mapping, size bytes */
  uint64_t size;
  int fd; /* kept open: metadata records are read with pread, not through the mapping */
  uint32_t count; /* header count */
  uint64_t *metas; /* offsets of the metadata records found by following the chain from the header (ascending) */
  uint32_t n_metas;
  unsigned refs;
  char *path;
};

/* ---- BlobDataType table (formats.md 4.3) -------------------------------- */

static const io_blob_type k_types[] = {
    {1, MIL_DT_FP16, 16},      {2, MIL_DT_FP32, 32},       {3, MIL_DT_UINT8, 8},     {4, MIL_DT_INT8, 8},
    {5, MIL_DT_BF16, 16},      {6, MIL_DT_INT16, 16},      {7, MIL_DT_UINT16, 16},   {8, MIL_DT_INT4, 4},
    {9, MIL_DT_UINT1, 1},      {10, MIL_DT_UINT2, 2},      {11, MIL_DT_UINT4, 4},    {12, MIL_DT_UINT3, 3},
    {13, MIL_DT_UINT6, 6},     {14, MIL_DT_INT32, 32},     {15, MIL_DT_UINT32, 32},  {16, MIL_DT_FP8E4M3FN, 8},
    {17, MIL_DT_FP8E5M2, 8},
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

const io_blob_type *io_blob_type_of_dtype(mil_dtype dt) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (k_types[i].dtype == dt) return &k_types[i];
  return NULL;
}

const io_blob_type *io_blob_type_of_code(uint32_t code) {
  if (code >= 1 && code <= N_TYPES) return &k_types[code - 1]; /* rows are in code order */
  return NULL;
}

const char *io_blob_dtype_name(mil_dtype dt) {
  switch (dt) {
  case MIL_DT_BOOL: return "bool";
  case MIL_DT_STRING: return "string";
  case MIL_DT_FP16: return "fp16";
  case MIL_DT_FP32: return "fp32";
  case MIL_DT_FP64: return "fp64";
  case MIL_DT_BF16: return "bf16";
  case MIL_DT_INT8: return "int8";
  case MIL_DT_INT16: return "int16";
  case MIL_DT_INT32: return "int32";
  case MIL_DT_INT64: return "int64";
  case MIL_DT_INT4: return "int4";
  case MIL_DT_UINT8: return "uint8";
  case MIL_DT_UINT16: return "uint16";
  case MIL_DT_UINT32: return "uint32";
  case MIL_DT_UINT64: return "uint64";
  case MIL_DT_UINT4: return "uint4";
  case MIL_DT_UINT2: return "uint2";
  case MIL_DT_UINT1: return "uint1";
  case MIL_DT_UINT6: return "uint6";
  case MIL_DT_UINT3: return "uint3";
  case MIL_DT_FP8E4M3FN: return "fp8e4m3fn";
  case MIL_DT_FP8E5M2: return "fp8e5m2";
  case MIL_DT_COMPLEX64: return "complex64";
  case MIL_DT_COMPLEX128: return "complex128";
  default: return "unknown";
  }
}

uint32_t mil_blob_dtype_code(mil_dtype dt) {
  const io_blob_type *t = io_blob_type_of_dtype(dt);
  return t ? t->code : 0;
}

mil_dtype mil_blob_dtype_from_code(uint32_t code) {
  const io_blob_type *t = io_blob_type_of_code(code);
  return t ? t->dtype : MIL_DT_UNUSED;
}

/* coremltools load.py should_use_weight_file: numpy dtypes float16,
 * float32, uint8, int8 always, plus uint16, int16, int32, uint32 from iOS18
 * (spec 9). Sub-byte values are uint8/int8 arrays there. */
bool mil_blob_dtype_supported(mil_dtype dt, int spec_version) {
  switch (dt) {
  case MIL_DT_FP16:
  case MIL_DT_FP32:
  case MIL_DT_UINT8:
  case MIL_DT_INT8:
  case MIL_DT_INT4:
  case MIL_DT_UINT1:
  case MIL_DT_UINT2:
  case MIL_DT_UINT3:
  case MIL_DT_UINT4:
  case MIL_DT_UINT6: return true;
  case MIL_DT_INT16:
  case MIL_DT_UINT16:
  case MIL_DT_INT32:
  case MIL_DT_UINT32: return spec_version >= 9;
  default: return false;
  }
}

bool mil_blob_should_store(const mil_value *v, int spec_version) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->kind != MIL_TYPE_TENSOR) return false;
  return v->numel >= 10 && mil_blob_dtype_supported(v->type->dtype, spec_version);
}

/* ---- open / close -------------------------------------------------------- */

/* Follows the chain of metadata records from the storage header (each
 * payload ends where the next record starts, 64-byte aligned) and keeps
 * their offsets, so that check_meta can refuse a payload overlapping any
 * record. Stops quietly at the first record that does not chain (a
 * malformed file is reported when that blob is read). */
static void find_records(mil_blob_file *f) {
  uint64_t off = MIL_BLOB_HEADER_SIZE;
  uint32_t cap = 0;
  for (uint32_t i = 0; i < f->count && off <= f->size && f->size - off >= MIL_BLOB_METADATA_SIZE; i++) {
    uint8_t m[MIL_BLOB_METADATA_SIZE];
    if (pread(f->fd, m, sizeof m, (off_t)off) != (ssize_t)sizeof m) break;
    if (io_le32(m + IO_BLOB_META_SENTINEL) != MIL_BLOB_SENTINEL) break;
    uint64_t size = io_le64(m + IO_BLOB_META_SIZE), doff = io_le64(m + IO_BLOB_META_OFFSET);
    if (doff > f->size || size > f->size - doff) break;
    if (f->n_metas == cap) {
      uint32_t nc = cap ? 2 * cap : 16;
      uint64_t *nm = realloc(f->metas, (size_t)nc * sizeof *nm);
      if (!nm) break;
      f->metas = nm;
      cap = nc;
    }
    f->metas[f->n_metas++] = off;
    uint64_t next = io_blob_align(doff + size);
    if (next <= off) break;
    off = next;
  }
}

/* The first metadata record (of those find_records found) that the byte
 * range [a, b) overlaps; UINT64_MAX when none. */
static uint64_t record_overlapping(const mil_blob_file *f, uint64_t a, uint64_t b) {
  uint32_t lo = 0, hi = f->n_metas; /* first record ending after a */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (f->metas[mid] + MIL_BLOB_METADATA_SIZE <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo < f->n_metas && f->metas[lo] < b ? f->metas[lo] : UINT64_MAX;
}

mil_status mil_blob_file_open(const char *path, mil_blob_file **out, mil_diag *d) {
  return io_blob_file_open_in(path, NULL, out, d);
}

mil_status io_blob_file_open_in(const char *path, const char *root, mil_blob_file **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!path || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_file_open: NULL path or out");
  struct stat st;
  mil_status ost;
  int fd = io_fs_open_regular(path, root, "weight file", &st, &ost, d);
  if (fd < 0) return ost;
  uint64_t size = (uint64_t)st.st_size;
  if (size < MIL_BLOB_HEADER_SIZE) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: file is %llu bytes, too short for the %u-byte storage header (an empty or "
                          "truncated weight file)",
                          path, (unsigned long long)size, MIL_BLOB_HEADER_SIZE);
  }
  if (size > (uint64_t)SIZE_MAX) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_IO, "%s: file of %llu bytes does not fit in the address space", path,
                          (unsigned long long)size);
  }
  void *base = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  if (base == MAP_FAILED) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot map weight file: %s", path, strerror(e));
  }
  const uint8_t *b = base;
  uint32_t version = io_le32(b + IO_BLOB_HDR_VERSION);
  if (version != MIL_BLOB_VERSION) {
    munmap(base, (size_t)size);
    close(fd);
    /* the field's value is not shown: a file that is no weight file (a
     * path pointing elsewhere) must not have its bytes echoed */
    if (version == 1)
      return mil_diag_error(d, MIL_ERR_FORMAT, "%s: storage header at offset %d: version 1, expected %u (version 1 is "
                            "the old blob_v1 format, which is not supported)", path, IO_BLOB_HDR_VERSION,
                            MIL_BLOB_VERSION);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: not a weight file: the storage header's version field (offset %d) "
                          "is not %u", path, IO_BLOB_HDR_VERSION, MIL_BLOB_VERSION);
  }
  mil_blob_file *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  if (!f || !p) {
    free(f);
    free(p);
    munmap(base, (size_t)size);
    close(fd);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory opening weight file", path);
  }
  f->base = b;
  f->size = size;
  f->fd = fd;
  f->count = io_le32(b + IO_BLOB_HDR_COUNT);
  f->refs = 1;
  f->path = p;
  find_records(f);
  *out = f;
  return MIL_OK;
}

mil_blob_file *mil_blob_file_retain(mil_blob_file *f) {
  if (f) __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
  return f;
}

void mil_blob_file_close(mil_blob_file *f) {
  if (!f) return;
  if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  munmap((void *)f->base, (size_t)f->size);
  close(f->fd);
  free(f->metas);
  free(f->path);
  free(f);
}

const char *mil_blob_file_path(const mil_blob_file *f) { return f ? f->path : NULL; }
uint64_t mil_blob_file_size(const mil_blob_file *f) { return f ? f->size : 0; }
uint32_t mil_blob_file_count(const mil_blob_file *f) { return f ? f->count : 0; }
const void *mil_blob_file_base(const mil_blob_file *f) { return f ? f->base : NULL; }

mil_status mil_blob_file_check(const mil_blob_file *f, mil_diag *d) {
  if (!f) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_file_check: NULL file");
  struct stat st;
  if (fstat(f->fd, &st) != 0)
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot stat the weight file: %s", f->path, strerror(errno));
  if ((uint64_t)st.st_size < f->size)
    return mil_diag_error(d, MIL_ERR_IO,
                          "%s: the weight file is now %llu bytes, but was %llu bytes when the model was loaded (it "
                          "was truncated or rewritten in place since); its weights cannot be read: load the model "
                          "again",
                          f->path, (unsigned long long)st.st_size, (unsigned long long)f->size);
  return MIL_OK;
}

/* ---- metadata validation ------------------------------------------------- */

#define ULL(x) ((unsigned long long)(x))

/* Checks the record at `off` in the order of the reference reader. With
 * `want` != MIL_DT_UNUSED the stored type must be want's BlobDataType;
 * otherwise any known type is accepted. Fills *info on success. */
static mil_status check_meta(const mil_blob_file *f, uint64_t off, mil_dtype want, mil_blob_info *info, mil_diag *d) {
  const char *path = f->path;
  if (off > f->size || f->size - off < MIL_BLOB_METADATA_SIZE)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: blob at offset %llu: metadata record [%llu, %llu) lies outside the file (size %llu)",
                          path, ULL(off), ULL(off), ULL(off) + MIL_BLOB_METADATA_SIZE, ULL(f->size));
  /* pread rather than the mapping: touching the record would map in the
   * neighbouring pages (the kernel's fault-around), i.e. most weights of a
   * model of small tensors, just to read 64 bytes each */
  uint8_t m[MIL_BLOB_METADATA_SIZE];
  ssize_t got = pread(f->fd, m, sizeof m, (off_t)off);
  if (got != (ssize_t)sizeof m)
    return mil_diag_error(d, MIL_ERR_IO, "%s: blob at offset %llu: cannot read its metadata record: %s", path, ULL(off),
                          got < 0 ? strerror(errno) : "short read");
  uint32_t sentinel = io_le32(m + IO_BLOB_META_SENTINEL);
  if (sentinel != MIL_BLOB_SENTINEL)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: blob at offset %llu: sentinel 0x%08X, expected 0x%08X", path, ULL(off),
                          sentinel, MIL_BLOB_SENTINEL);
  uint32_t code = io_le32(m + IO_BLOB_META_DTYPE);
  const io_blob_type *t = io_blob_type_of_code(code);
  if (want != MIL_DT_UNUSED) {
    const io_blob_type *wt = io_blob_type_of_dtype(want);
    if (!wt)
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob at offset %llu: MIL dtype %s cannot be stored in a weight file",
                            path, ULL(off), io_blob_dtype_name(want));
    if (code != wt->code)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: data type %u (%s), expected %u (%s) for MIL dtype %s", path,
                            ULL(off), code, t ? io_blob_dtype_name(t->dtype) : "unknown", wt->code,
                            io_blob_dtype_name(want), io_blob_dtype_name(want));
  } else if (!t) {
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: blob at offset %llu: data type %u, expected a BlobDataType in 1..%u",
                          path, ULL(off), code, (unsigned)N_TYPES);
  }
  uint64_t size = io_le64(m + IO_BLOB_META_SIZE);
  uint64_t doff = io_le64(m + IO_BLOB_META_OFFSET);
  uint64_t pad = io_le64(m + IO_BLOB_META_PADDING);
  if (doff > f->size || size > f->size - doff)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: blob at offset %llu: payload (offset field %llu, sizeInBytes %llu) extends past the "
                          "end of the file (size %llu)",
                          path, ULL(off), ULL(doff), ULL(size), ULL(f->size));
  if (size == 0)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: blob at offset %llu: sizeInBytes 0, expected > 0", path, ULL(off));
  /* a payload never overlaps the storage header or a metadata record (the
   * writer puts each payload after its own record); one that does would
   * read header bytes as weights */
  if (doff < MIL_BLOB_HEADER_SIZE)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: blob at offset %llu: payload [%llu, %llu) overlaps the storage header [0, %u)", path,
                          ULL(off), ULL(doff), ULL(doff + size), MIL_BLOB_HEADER_SIZE);
  uint64_t hit = doff < off + MIL_BLOB_METADATA_SIZE && off < doff + size ? off : record_overlapping(f, doff, doff + size);
  if (hit != UINT64_MAX)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: blob at offset %llu: payload [%llu, %llu) overlaps the metadata record at offset %llu "
                          "[%llu, %llu)", path, ULL(off), ULL(doff), ULL(doff + size), ULL(hit), ULL(hit),
                          ULL(hit) + MIL_BLOB_METADATA_SIZE);
  int bits = t->bits;
  uint64_t n;
  if (bits < 8) {
    if (pad >= 8)
      return mil_diag_error(d, MIL_ERR_FORMAT, "%s: blob at offset %llu: padding_size_in_bits %llu, expected < 8", path,
                            ULL(off), ULL(pad));
    if ((bits == 1 || bits == 2 || bits == 4) && pad % (uint64_t)bits != 0)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: padding_size_in_bits %llu, expected a multiple of %d for %s",
                            path, ULL(off), ULL(pad), bits, io_blob_dtype_name(t->dtype));
    uint64_t used = size * 8 - pad; /* size <= file size, so no overflow */
    if (used % (uint64_t)bits != 0)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: sizeInBytes %llu and padding_size_in_bits %llu leave %llu bits, "
                            "expected a multiple of %d for %s",
                            path, ULL(off), ULL(size), ULL(pad), ULL(used), bits, io_blob_dtype_name(t->dtype));
    n = used / (uint64_t)bits;
    uint64_t need = (n * (uint64_t)bits + 7) / 8;
    if (size != need)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: sizeInBytes %llu, expected %llu for %llu %s elements "
                            "(padding_size_in_bits %llu)",
                            path, ULL(off), ULL(size), ULL(need), ULL(n), io_blob_dtype_name(t->dtype), ULL(pad));
  } else {
    uint64_t es = (uint64_t)bits / 8;
    if (size % es != 0)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: sizeInBytes %llu, expected a multiple of %llu (%s element size)",
                            path, ULL(off), ULL(size), ULL(es), io_blob_dtype_name(t->dtype));
    if (doff % es != 0)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: payload offset %llu, expected a multiple of %llu (%s element "
                            "size)",
                            path, ULL(off), ULL(doff), ULL(es), io_blob_dtype_name(t->dtype));
    n = size / es;
  }
  info->meta_offset = off;
  info->data_offset = doff;
  info->nbytes = size;
  info->padding_bits = pad;
  info->blob_dtype = code;
  info->dtype = t->dtype;
  info->numel = (int64_t)n; /* n <= 8 * file size < 2^63 */
  return MIL_OK;
}

mil_status mil_blob_file_info(const mil_blob_file *f, uint64_t meta_offset, mil_blob_info *info, mil_diag *d) {
  if (!f || !info) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_file_info: NULL argument");
  return check_meta(f, meta_offset, MIL_DT_UNUSED, info, d);
}

mil_status mil_blob_file_read(mil_blob_file *f, uint64_t meta_offset, mil_dtype dtype, int64_t numel,
                              const void **data, size_t *nbytes, mil_diag *d) {
  if (data) *data = NULL;
  if (nbytes) *nbytes = 0;
  if (!f || !data || !nbytes) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_file_read: NULL argument");
  if (numel < 0)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob at offset %llu: requested element count %lld is negative",
                          f->path, ULL(meta_offset), (long long)numel);
  if (!io_blob_type_of_dtype(dtype))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob at offset %llu: MIL dtype %s cannot be stored in a weight file",
                          f->path, ULL(meta_offset), io_blob_dtype_name(dtype));
  mil_blob_info info;
  mil_status st = check_meta(f, meta_offset, dtype, &info, d);
  if (st != MIL_OK) return st;
  if (info.numel != numel) {
    const io_blob_type *t = io_blob_type_of_dtype(dtype);
    if (t->bits >= 8)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: blob at offset %llu: sizeInBytes %llu, expected %llu (%lld elements of %d bytes); the "
                            "blob holds %lld elements",
                            f->path, ULL(meta_offset), ULL(info.nbytes), ULL(numel) * (unsigned)(t->bits / 8),
                            (long long)numel, t->bits / 8, (long long)info.numel);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: blob at offset %llu: element count %lld, expected %lld", f->path,
                          ULL(meta_offset), (long long)info.numel, (long long)numel);
  }
  *data = f->base + info.data_offset;
  *nbytes = (size_t)info.nbytes;
  return MIL_OK;
}

/* ---- enumeration --------------------------------------------------------- */

void mil_blob_iter_init(const mil_blob_file *f, mil_blob_iter *it) {
  (void)f;
  it->next_meta = MIL_BLOB_HEADER_SIZE;
  it->index = 0;
}

mil_status mil_blob_iter_next(const mil_blob_file *f, mil_blob_iter *it, mil_blob_info *info, bool *done,
                              mil_diag *d) {
  if (!f || !it || !info || !done) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_iter_next: NULL argument");
  *done = false;
  if (it->index >= f->count) {
    *done = true;
    return MIL_OK;
  }
  if (it->next_meta >= f->size)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: storage header at offset %d: count %u, but the file ends (size %llu) after %u blobs",
                          f->path, IO_BLOB_HDR_COUNT, f->count, ULL(f->size), it->index);
  mil_status st = check_meta(f, it->next_meta, MIL_DT_UNUSED, info, d);
  if (st != MIL_OK) return st;
  uint64_t next = io_blob_align(info->data_offset + info->nbytes); /* both <= size: no overflow */
  if (next <= it->next_meta)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: blob at offset %llu: payload offset %llu + sizeInBytes %llu ends before the record, "
                          "expected the next record after offset %llu",
                          f->path, ULL(it->next_meta), ULL(info->data_offset), ULL(info->nbytes), ULL(it->next_meta));
  it->next_meta = next;
  it->index++;
  return MIL_OK;
}

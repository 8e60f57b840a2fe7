/* Weight blob file writer (weight.bin, storage format version 2).
 *
 * Produces the same bytes as coremltools' MILBlob StorageWriter
 * (formats.md 4.5): header (count, version 2) at 0; for each blob, metadata
 * at the end of file rounded up to 64 with a zero gap, payload right after
 * the metadata, reserved fields zero. Small records go through a buffer;
 * large payloads are written straight from the caller's memory, so saving
 * gigabytes of weights costs about what copying a file does.
 *
 * Unlike the reference, identical blobs (same dtype and bytes) are written
 * once by default. To keep that cheap, a blob is first keyed by a sampled
 * hash (dtype, size, the first 4 KiB, 64 words spread over the payload, the
 * last byte); only when that key matches an earlier blob are full hashes
 * computed (the new blob's from memory, the old one's by reading it back,
 * each at most once), and only equal full hashes lead to a byte comparison.
 * Distinct weights therefore cost a few KiB of reads each, and no input
 * makes the work grow faster than the bytes written plus one read-back per
 * blob.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/blob_internal.h"

/* Small buffers, reused from one blob to the next: every page of a fresh
 * buffer costs a page fault and a clear, which for megabyte buffers is more
 * than the copy itself; the kernel copies each write() into the page cache
 * at the same speed in pieces of a few hundred KiB (and larger single
 * writes were seen to take several times the CPU time). */
#define BUF_CAP (256u << 10)     /* write buffer (metadata and small payloads) */
#define DIRECT_MIN (64u << 10)   /* payloads and streamed pieces this large bypass the buffer */
#define WRITE_MAX (1u << 20)     /* largest single write() */
#define CMP_CHUNK (256u << 10)   /* read-back chunk for duplicate checks */

#define SAMPLE_HEAD 4096u        /* sampled-key prefix */
#define SAMPLE_WORDS 64u         /* sampled-key words spread over the payload */

typedef struct dedup_entry {
  uint64_t key;  /* sampled key (includes dtype and size) */
  uint64_t full; /* full hash, valid when has_full */
  uint64_t meta_offset;
  uint64_t data_offset;
  uint64_t nbytes;
  mil_dtype dtype;
  bool has_full;
  bool used;
} dedup_entry;

struct mil_blob_writer {
  int fd;
  char *path;
  unsigned flags;
  uint8_t *buf;     /* bytes [flushed, flushed + buf_len) of the file */
  size_t buf_len;
  uint64_t flushed; /* bytes already handed to write() */
  uint32_t count;
  mil_status err;   /* sticky I/O error */
  dedup_entry *tab; /* open addressing, power-of-two capacity */
  size_t tab_cap, tab_n;
  uint8_t *stream_buf; /* the streamed blobs' buffer, kept from one blob to the next */
  size_t stream_cap;
};

#define ULL(x) ((unsigned long long)(x))

/* ---- hashing ------------------------------------------------------------- */

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* 64x64 -> 128-bit multiply folded to 64 bits. */
static inline uint64_t mum(uint64_t a, uint64_t b) {
#ifdef __SIZEOF_INT128__
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
  uint64_t r = a * (b | 1);
  return r ^ (r >> 29) ^ b;
#endif
}

/* Full hash: four independent multiply-fold lanes over 64-byte stripes,
 * then a tail of 1..64 bytes. Streaming (stripes may arrive in pieces that
 * are multiples of 64) so it can run over a read-back as well as memory. */
typedef struct hstate {
  uint64_t a, b, c, e;
} hstate;

static const uint64_t K1 = 0x9E3779B185EBCA87ULL, K2 = 0xC2B2AE3D27D4EB4FULL, K3 = 0x165667B19E3779F9ULL,
                      K4 = 0x85EBCA77C2B2AE63ULL;

static void hs_init(hstate *s, uint64_t seed) {
  s->a = seed ^ K1;
  s->b = seed ^ K2;
  s->c = seed ^ K3;
  s->e = seed ^ K4;
}

static void hs_stripes(hstate *s, const uint8_t *p, size_t n) { /* n % 64 == 0 */
  uint64_t a = s->a, b = s->b, c = s->c, e = s->e;
  for (size_t i = 0; i < n; i += 64) {
    a = mum(load64(p + i) ^ K1, load64(p + i + 8) ^ a);
    b = mum(load64(p + i + 16) ^ K2, load64(p + i + 24) ^ b);
    c = mum(load64(p + i + 32) ^ K3, load64(p + i + 40) ^ c);
    e = mum(load64(p + i + 48) ^ K4, load64(p + i + 56) ^ e);
  }
  s->a = a, s->b = b, s->c = c, s->e = e;
}

static uint64_t hs_final(const hstate *s, const uint8_t *tail, size_t tn, uint64_t total) {
  uint64_t h = mum(s->a ^ K2, s->b ^ K3) ^ mum(s->c ^ K4, s->e ^ K1) ^ total;
  size_t i = 0;
  for (; i + 8 <= tn; i += 8) h = mum(h ^ K1, load64(tail + i) ^ K2);
  for (; i < tn; i++) h = mum(h ^ K3, (uint64_t)tail[i] ^ K4);
  return mum(h ^ K1, total ^ K2);
}

/* The payload as written is data[0 .. n-1) followed by `last` (the last
 * byte with unused bits cleared). Its stripes cover the first
 * stripe_len(n) bytes, which never include the last byte. */
static size_t stripe_len(size_t n) { return (n - 1) / 64 * 64; }

/* A blob's payload: in memory, or produced piecewise by a reader
 * (mil_blob_writer_add_stream) into a buffer of STREAM_CHUNK bytes (small
 * enough to stay in the L2 cache between the reader and write()). */
#define STREAM_CHUNK (256u << 10)

typedef struct bsrc {
  const uint8_t *mem;
  mil_blob_read_fn read;
  void *ud;
  uint8_t *buf;
} bsrc;

/* Bytes [off, off + n) of the payload (n <= STREAM_CHUNK), valid until the
 * next call; NULL when the reader fails. */
static const uint8_t *src_at(const bsrc *s, size_t off, size_t n) {
  if (s->mem) return s->mem + off;
  return s->read(s->ud, off, n, s->buf) ? s->buf : NULL;
}

/* The full hash of the payload as written: n - 1 bytes, then `last`.
 * false when the reader fails. */
static bool full_hash_src(const bsrc *src, size_t n, uint8_t last, mil_dtype dt, uint64_t *out) {
  hstate s;
  hs_init(&s, (uint64_t)dt);
  size_t m = stripe_len(n);
  for (size_t i = 0; i < m;) {
    size_t k = m - i > CMP_CHUNK ? CMP_CHUNK : m - i; /* multiples of 64 */
    const uint8_t *p = src_at(src, i, k);
    if (!p) return false;
    hs_stripes(&s, p, k);
    i += k;
  }
  uint8_t tail[64];
  const uint8_t *p = n - 1 - m ? src_at(src, m, n - 1 - m) : tail;
  if (!p) return false;
  memcpy(tail, p, n - 1 - m);
  tail[n - 1 - m] = last;
  *out = hs_final(&s, tail, n - m, n);
  return true;
}

/* Sampled key: dtype, size, first SAMPLE_HEAD bytes, SAMPLE_WORDS words at
 * evenly spaced offsets, the last byte. false when the reader fails. */
static bool sample_key(const bsrc *src, size_t n, uint8_t last, mil_dtype dt, uint64_t *out) {
  uint64_t h = mum((uint64_t)dt ^ K1, (uint64_t)n ^ K2);
  size_t body = n - 1;
  size_t head = body < SAMPLE_HEAD ? body : SAMPLE_HEAD;
  const uint8_t *data = head ? src_at(src, 0, head) : NULL;
  if (head && !data) return false;
  size_t i = 0;
  for (; i + 8 <= head; i += 8) h = mum(h ^ K3, load64(data + i) ^ K4);
  for (; i < head; i++) h = mum(h ^ K1, (uint64_t)data[i] ^ K3);
  if (body > SAMPLE_HEAD + 8) {
    size_t span = body - SAMPLE_HEAD - 8;
    for (size_t k = 1; k <= SAMPLE_WORDS; k++) {
      const uint8_t *wd = src_at(src, SAMPLE_HEAD + span / SAMPLE_WORDS * k, 8);
      if (!wd) return false;
      h = mum(h ^ K2, load64(wd) ^ K4);
    }
  }
  *out = mum(h ^ K3, (uint64_t)last ^ K1);
  return true;
}

/* ---- low-level output ---------------------------------------------------- */

static mil_status io_fail(mil_blob_writer *w, uint64_t off, const char *what, int e, mil_diag *d) {
  w->err = MIL_ERR_IO;
  return mil_diag_error(d, MIL_ERR_IO, "%s: %s at offset %llu failed: %s", w->path, what, ULL(off),
                        e ? strerror(e) : "short write");
}

static mil_status write_all(mil_blob_writer *w, const uint8_t *p, size_t n, mil_diag *d) {
  while (n > 0) {
    size_t chunk = n > WRITE_MAX ? WRITE_MAX : n;
    ssize_t r = write(w->fd, p, chunk);
    if (r < 0) {
      if (errno == EINTR) continue;
      return io_fail(w, w->flushed, "write", errno, d);
    }
    if (r == 0) return io_fail(w, w->flushed, "write", 0, d);
    p += r;
    n -= (size_t)r;
    w->flushed += (uint64_t)r;
  }
  return MIL_OK;
}

static mil_status flush_buf(mil_blob_writer *w, mil_diag *d) {
  if (w->buf_len == 0) return MIL_OK;
  size_t n = w->buf_len;
  w->buf_len = 0;
  return write_all(w, w->buf, n, d);
}

/* Appends n bytes (src NULL = zeros) at the logical end of the file. */
static mil_status put(mil_blob_writer *w, const void *src, size_t n, mil_diag *d) {
  if (n >= DIRECT_MIN && src) {
    mil_status st = flush_buf(w, d);
    if (st != MIL_OK) return st;
    return write_all(w, src, n, d);
  }
  while (n > 0) {
    if (w->buf_len == BUF_CAP) {
      mil_status st = flush_buf(w, d);
      if (st != MIL_OK) return st;
    }
    size_t k = BUF_CAP - w->buf_len;
    if (k > n) k = n;
    if (src) {
      memcpy(w->buf + w->buf_len, src, k);
      src = (const uint8_t *)src + k;
    } else {
      memset(w->buf + w->buf_len, 0, k);
    }
    w->buf_len += k;
    n -= k;
  }
  return MIL_OK;
}

static uint64_t logical_end(const mil_blob_writer *w) { return w->flushed + w->buf_len; }

/* ---- open ---------------------------------------------------------------- */

mil_status mil_blob_writer_open(const char *path, unsigned flags, mil_blob_writer **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!path || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_writer_open: NULL path or out");
  if (flags & ~(unsigned)MIL_BLOB_WRITE_NO_DEDUP)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: mil_blob_writer_open: unknown flags 0x%x", path, flags);
  mil_blob_writer *w = calloc(1, sizeof *w);
  if (!w) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory creating weight writer", path);
  w->path = strdup(path);
  w->buf = malloc(BUF_CAP);
  if (!w->path || !w->buf) {
    free(w->path);
    free(w->buf);
    free(w);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory creating weight writer", path);
  }
  w->flags = flags;
  w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (w->fd < 0) {
    int e = errno;
    free(w->path);
    free(w->buf);
    free(w);
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot create weight file: %s", path, strerror(e));
  }
  uint8_t hdr[MIL_BLOB_HEADER_SIZE] = {0};
  io_put_le32(hdr + IO_BLOB_HDR_COUNT, 0);
  io_put_le32(hdr + IO_BLOB_HDR_VERSION, MIL_BLOB_VERSION);
  put(w, hdr, sizeof hdr, d); /* fits the empty buffer; cannot fail */
  *out = w;
  return MIL_OK;
}

/* ---- deduplication ------------------------------------------------------- */

/* Copies file bytes [pos, pos + k) into dst: the flushed part by pread,
 * the rest from the write buffer. Returns -1 (errno set) on a read error. */
static int read_region(mil_blob_writer *w, uint64_t pos, uint8_t *dst, size_t k) {
  while (k > 0 && pos < w->flushed) {
    size_t part = pos + k > w->flushed ? (size_t)(w->flushed - pos) : k;
    ssize_t r = pread(w->fd, dst, part, (off_t)pos);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return -1;
    }
    dst += r, pos += (uint64_t)r, k -= (size_t)r;
  }
  if (k) memcpy(dst, w->buf + (pos - w->flushed), k);
  return 0;
}

/* Does the file region [off, off + n) hold the payload's first n - 1
 * bytes followed by `last`? Returns 1 / 0, or -1 on a read error (errno
 * set; EIO when the source's reader failed). */
static int region_equal(mil_blob_writer *w, uint64_t off, const bsrc *src, size_t n, uint8_t last,
                        uint8_t *scratch) {
  for (size_t i = 0; i < n;) {
    size_t k = n - i > CMP_CHUNK ? CMP_CHUNK : n - i;
    if (read_region(w, off + i, scratch, k) != 0) return -1;
    bool has_last = i + k == n;
    size_t body = has_last ? k - 1 : k;
    const uint8_t *p = body ? src_at(src, i, body) : scratch;
    if (!p) {
      errno = EIO;
      return -1;
    }
    if (body && memcmp(scratch, p, body) != 0) return 0;
    if (has_last && scratch[body] != last) return 0;
    i += k;
  }
  return 1;
}

/* full_hash_src of a blob already in the file (its last byte is stored
 * masked, so the two agree). */
static int full_hash_file(mil_blob_writer *w, const dedup_entry *e, uint8_t *scratch, uint64_t *out) {
  size_t n = (size_t)e->nbytes, m = stripe_len(n);
  hstate s;
  hs_init(&s, (uint64_t)e->dtype);
  for (size_t i = 0; i < m;) {
    size_t k = m - i > CMP_CHUNK ? CMP_CHUNK : m - i; /* multiples of 64 */
    if (read_region(w, e->data_offset + i, scratch, k) != 0) return -1;
    hs_stripes(&s, scratch, k);
    i += k;
  }
  uint8_t tail[64];
  if (read_region(w, e->data_offset + m, tail, n - m) != 0) return -1;
  *out = hs_final(&s, tail, n - m, n);
  return 0;
}

static mil_status tab_grow(mil_blob_writer *w, mil_diag *d) {
  size_t cap = w->tab_cap ? w->tab_cap * 2 : 64;
  dedup_entry *t = calloc(cap, sizeof *t);
  if (!t) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory in the weight writer", w->path);
  for (size_t i = 0; i < w->tab_cap; i++) {
    if (!w->tab[i].used) continue;
    size_t j = (size_t)w->tab[i].key & (cap - 1);
    while (t[j].used) j = (j + 1) & (cap - 1);
    t[j] = w->tab[i];
  }
  free(w->tab);
  w->tab = t;
  w->tab_cap = cap;
  return MIL_OK;
}

/* ---- add ----------------------------------------------------------------- */

static mil_status add_src(mil_blob_writer *w, mil_dtype dt, bsrc *src, size_t nbytes, int64_t numel,
                          uint64_t *meta_offset_out, mil_diag *d);

mil_status mil_blob_writer_add(mil_blob_writer *w, mil_dtype dt, const void *data, size_t nbytes, int64_t numel,
                               uint64_t *meta_offset_out, mil_diag *d) {
  if (meta_offset_out) *meta_offset_out = 0;
  if (!data && w && w->err == MIL_OK && nbytes)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: NULL data", w->path, w->count);
  bsrc src = {data, NULL, NULL, NULL};
  return add_src(w, dt, &src, nbytes, numel, meta_offset_out, d);
}

mil_status mil_blob_writer_add_stream(mil_blob_writer *w, mil_dtype dt, mil_blob_read_fn read, void *ud, size_t nbytes,
                                      int64_t numel, uint64_t *meta_offset_out, mil_diag *d) {
  if (meta_offset_out) *meta_offset_out = 0;
  if (!read && w && w->err == MIL_OK)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: NULL reader", w->path, w->count);
  bsrc src = {NULL, read, ud, NULL};
  /* one buffer for every streamed blob of the writer (as large as the
   * largest piece read so far): a model of many weights would otherwise
   * map, fault in and unmap a fresh buffer per weight */
  size_t want = nbytes < STREAM_CHUNK ? (nbytes > 64 ? nbytes : 64) : STREAM_CHUNK;
  if (w && w->stream_cap < want) {
    uint8_t *b = malloc(want);
    if (!b) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory in the weight writer", w->path);
    free(w->stream_buf);
    w->stream_buf = b;
    w->stream_cap = want;
  }
  if (w) src.buf = w->stream_buf;
  return add_src(w, dt, &src, nbytes, numel, meta_offset_out, d);
}

static mil_status src_fail(mil_blob_writer *w, mil_diag *d) {
  return mil_diag_error(d, MIL_ERR_IO, "%s: blob #%u: reading the payload from its source failed", w->path, w->count);
}

/* The payload's n - 1 first bytes, then `last`, appended to the file. */
static mil_status put_payload(mil_blob_writer *w, const bsrc *src, size_t n, uint8_t last, mil_diag *d) {
  mil_status st = MIL_OK;
  if (src->mem) {
    st = put(w, src->mem, n - 1, d);
  } else {
    for (size_t i = 0; st == MIL_OK && i < n - 1;) {
      size_t k = n - 1 - i > STREAM_CHUNK ? STREAM_CHUNK : n - 1 - i;
      const uint8_t *p = src_at(src, i, k);
      if (!p) return src_fail(w, d);
      st = put(w, p, k, d);
      i += k;
    }
  }
  return st == MIL_OK ? put(w, &last, 1, d) : st;
}

static mil_status add_src(mil_blob_writer *w, mil_dtype dt, bsrc *src, size_t nbytes, int64_t numel,
                          uint64_t *meta_offset_out, mil_diag *d) {
  if (!w) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_writer_add: NULL writer");
  if (w->err != MIL_OK)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: mil_blob_writer_add after an earlier write error", w->path);
  const io_blob_type *t = io_blob_type_of_dtype(dt);
  if (!t)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: dtype %s cannot be stored in a weight file", w->path,
                          w->count, io_blob_dtype_name(dt));
  if (numel < 1)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: element count %lld, expected >= 1 (a weight file cannot "
                          "hold an empty blob)", w->path, w->count, (long long)numel);
  uint64_t n = (uint64_t)numel, want;
  if (n > UINT64_MAX / 64)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: element count %lld is too large", w->path, w->count,
                          (long long)numel);
  want = (n * (uint64_t)t->bits + 7) / 8;
  if ((uint64_t)nbytes != want)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: blob #%u: %zu bytes given, expected %llu for %lld %s elements",
                          w->path, w->count, nbytes, ULL(want), (long long)numel, io_blob_dtype_name(dt));
  uint64_t pad = t->bits < 8 ? nbytes * 8 - n * (uint64_t)t->bits : 0;
  const uint8_t *lp = src_at(src, nbytes - 1, 1);
  if (!lp) return src_fail(w, d);
  uint8_t last = *lp;
  if (pad) last &= (uint8_t)(0xFFu >> pad); /* unused high bits are zero in the file */

  uint64_t key = 0, full = 0;
  bool have_full = false;
  bool dedup = !(w->flags & MIL_BLOB_WRITE_NO_DEDUP);
  if (dedup) {
    if (!sample_key(src, nbytes, last, dt, &key)) return src_fail(w, d);
    uint8_t *scratch = NULL;
    for (size_t j = (size_t)key & (w->tab_cap - 1); w->tab_cap && w->tab[j].used; j = (j + 1) & (w->tab_cap - 1)) {
      dedup_entry *e = &w->tab[j];
      if (e->key != key || e->dtype != dt || e->nbytes != nbytes) continue;
      if (!scratch && !(scratch = malloc(CMP_CHUNK)))
        return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory in the weight writer", w->path);
      if (!have_full) {
        if (!full_hash_src(src, nbytes, last, dt, &full)) {
          free(scratch);
          return src_fail(w, d);
        }
        have_full = true;
      }
      int eq = 1;
      if (!e->has_full) {
        eq = full_hash_file(w, e, scratch, &e->full) == 0 ? 1 : -1;
        e->has_full = eq > 0;
      }
      if (eq > 0 && e->full != full) continue;
      if (eq > 0) eq = region_equal(w, e->data_offset, src, nbytes, last, scratch);
      if (eq < 0) {
        int er = errno;
        free(scratch);
        return io_fail(w, e->data_offset, "reading back for the duplicate check", er, d);
      }
      if (eq) {
        free(scratch);
        if (meta_offset_out) *meta_offset_out = e->meta_offset;
        return MIL_OK;
      }
    }
    free(scratch);
  }

  uint64_t end = logical_end(w);
  uint64_t meta = io_blob_align(end);
  uint8_t rec[MIL_BLOB_METADATA_SIZE] = {0};
  io_put_le32(rec + IO_BLOB_META_SENTINEL, MIL_BLOB_SENTINEL);
  io_put_le32(rec + IO_BLOB_META_DTYPE, t->code);
  io_put_le64(rec + IO_BLOB_META_SIZE, nbytes);
  io_put_le64(rec + IO_BLOB_META_OFFSET, meta + MIL_BLOB_METADATA_SIZE);
  io_put_le64(rec + IO_BLOB_META_PADDING, pad);
  mil_status st = put(w, NULL, (size_t)(meta - end), d);
  if (st == MIL_OK) st = put(w, rec, sizeof rec, d);
  if (st == MIL_OK) st = put_payload(w, src, nbytes, last, d);
  if (st != MIL_OK) return st;

  if (dedup) {
    if ((w->tab_n + 1) * 2 > w->tab_cap && (st = tab_grow(w, d)) != MIL_OK) return st;
    size_t j = (size_t)key & (w->tab_cap - 1);
    while (w->tab[j].used) j = (j + 1) & (w->tab_cap - 1);
    w->tab[j] = (dedup_entry){key, full, meta, meta + MIL_BLOB_METADATA_SIZE, nbytes, dt, have_full, true};
    w->tab_n++;
  }
  w->count++;
  if (meta_offset_out) *meta_offset_out = meta;
  return MIL_OK;
}

uint32_t mil_blob_writer_count(const mil_blob_writer *w) { return w ? w->count : 0; }
uint64_t mil_blob_writer_size(const mil_blob_writer *w) { return w ? logical_end(w) : 0; }

/* ---- close --------------------------------------------------------------- */

static void writer_free(mil_blob_writer *w) {
  free(w->stream_buf);
  free(w->tab);
  free(w->buf);
  free(w->path);
  free(w);
}

mil_status mil_blob_writer_close(mil_blob_writer *w, mil_diag *d) {
  if (!w) return mil_diag_error(d, MIL_ERR_INVALID, "mil_blob_writer_close: NULL writer");
  mil_status st = w->err;
  if (st != MIL_OK) mil_diag_error(d, MIL_ERR_IO, "%s: weight file incomplete after an earlier write error", w->path);
  if (st == MIL_OK) st = flush_buf(w, d);
  if (st == MIL_OK) {
    uint8_t cnt[4];
    io_put_le32(cnt, w->count);
    ssize_t r;
    do r = pwrite(w->fd, cnt, sizeof cnt, IO_BLOB_HDR_COUNT);
    while (r < 0 && errno == EINTR);
    if (r != (ssize_t)sizeof cnt) st = io_fail(w, IO_BLOB_HDR_COUNT, "writing the header count", r < 0 ? errno : 0, d);
  }
  if (close(w->fd) != 0 && st == MIL_OK)
    st = mil_diag_error(d, MIL_ERR_IO, "%s: closing weight file failed: %s", w->path, strerror(errno));
  writer_free(w);
  return st;
}

void mil_blob_writer_abort(mil_blob_writer *w) {
  if (!w) return;
  close(w->fd);
  unlink(w->path);
  writer_free(w);
}

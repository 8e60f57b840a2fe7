/* External data of a TensorProto (data_location = EXTERNAL): the keys
 * location / offset / length / checksum of onnx/docs/ExternalData.md,
 * memory-mapped (never copied whole). Mirrors the path checks onnx's
 * checker learned from CVE-2022-25882 (".." components) and CVE-2024-27318
 * (symlinks): onnx/checker.cc resolve_external_data_location and
 * verify_path_containment: no absolute path, no "..", the file itself no
 * symbolic link, its real path (directory symlinks resolved) inside the
 * model's directory, a regular file with one hard link. The checksum is the SHA1 of the whole
 * file (nettle). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <nettle/sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/tensor/onnx_tensor_internal.h"

struct ot_map {
  void *base;
  size_t len;
  int refs;
};

void ot_map_ref(ot_map *m) {
  if (m) __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
}

void ot_map_unref(ot_map *m) {
  if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  munmap(m->base, m->len);
  free(m);
}

const void *ot_map_base(const ot_map *m) { return m ? m->base : NULL; }
size_t ot_map_len(const ot_map *m) { return m ? m->len : 0; }

/* A non-negative decimal integer (the whole string). */
static bool parse_u64(const char *v, uint64_t *out) {
  if (!v || !*v) return false;
  uint64_t x = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    unsigned d = (unsigned)(*p - '0');
    if (x > ((uint64_t)INT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

/* Whether location has a ".." path component. */
static bool has_dotdot(const char *loc) {
  for (const char *p = loc; *p;) {
    const char *e = p;
    while (*e && *e != '/' && *e != '\\') e++;
    if (e - p == 2 && p[0] == '.' && p[1] == '.') return true;
    p = *e ? e + 1 : e;
  }
  return false;
}

static mil_status check_sha1(const ot_src *s, const ot_ctx *c, int fd, uint64_t size, const char *want,
                             const char *path) {
  size_t wl = strlen(want);
  if (wl != 2 * SHA1_DIGEST_SIZE || strspn(want, "0123456789abcdefABCDEF") != wl)
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: key 'checksum' is \"%.48s\"; expected 40 hex digits (SHA1 of %s)", want, path);
  struct sha1_ctx h;
  sha1_init(&h);
  if (size) {
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return ot_err(c, s, MIL_ERR_IO, "external data: %s: cannot map the file: %s", path, strerror(errno));
    madvise(m, (size_t)size, MADV_SEQUENTIAL);
    sha1_update(&h, (size_t)size, m);
    munmap(m, (size_t)size);
  }
  uint8_t dig[SHA1_DIGEST_SIZE];
  sha1_digest(&h, sizeof dig, dig);
  char got[2 * SHA1_DIGEST_SIZE + 1];
  for (int i = 0; i < SHA1_DIGEST_SIZE; i++) snprintf(got + 2 * i, 3, "%02x", dig[i]);
  if (strcasecmp(got, want) != 0)
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: %s: SHA1 is %s, but key 'checksum' says %s (file changed or corrupt)", path,
                got, want);
  return MIL_OK;
}

/* Opens base_dir/loc after the path checks; *fd and the resolved path. */
static mil_status open_inside(const ot_src *s, const ot_ctx *c, const char *loc, char *path, size_t cap, int *fd) {
  if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%s\" is an absolute path; only paths relative to the model's "
                "directory are allowed (CVE-2022-25882)", loc);
  if (has_dotdot(loc))
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%s\" has a '..' component; only paths inside the model's "
                "directory are allowed (CVE-2022-25882)", loc);
  if ((size_t)snprintf(path, cap, "%s/%s", c->base_dir, loc) >= cap)
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%.64s...\" is too long", loc);
  struct stat ls;
  if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode))
    return ot_err(c, s, MIL_ERR_INVALID, "external data: %s (location \"%s\") is a symbolic link; refused as onnx's "
                  "checker does (CVE-2024-27318)", path, loc);
  /* O_NONBLOCK: a FIFO must not block the open; fstat refuses it below */
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (*fd < 0)
    return ot_err(c, s, MIL_ERR_IO, "external data: cannot open %s (location \"%s\"): %s", path, loc, strerror(errno));
  char base_real[PATH_MAX], file_real[PATH_MAX];
  struct stat a, b;
  if (!realpath(c->base_dir, base_real) || !realpath(path, file_real) || fstat(*fd, &a) != 0 ||
      stat(file_real, &b) != 0) {
    int e = errno;
    close(*fd);
    return ot_err(c, s, MIL_ERR_IO, "external data: cannot resolve %s: %s", path, strerror(e));
  }
  if (S_ISDIR(a.st_mode)) { /* "." or "sub/": the model's directory or one inside it, not a data file */
    close(*fd);
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%s\" names a directory (%s), not a file", loc,
                  file_real);
  }
  size_t bl = strlen(base_real);
  bool inside = strncmp(file_real, base_real, bl) == 0 && (file_real[bl] == '/' || (bl == 1 && base_real[0] == '/'));
  if (!inside || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    close(*fd);
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%s\" resolves to %s, outside the model's directory %s "
                "(through a symbolic link; refused as onnx does since CVE-2024-27318)", loc, file_real, base_real);
  }
  if (!S_ISREG(a.st_mode)) {
    close(*fd);
    return ot_err(c, s, MIL_ERR_INVALID, "external data: %s is not a regular file", path);
  }
  if (a.st_nlink > 1) {
    close(*fd);
    return ot_err(c, s, MIL_ERR_INVALID, "external data: %s has %ju hard links; refused as onnx's checker does (a "
                  "hard link can reach any file of the file system)", path, (uintmax_t)a.st_nlink);
  }
  return MIL_OK;
}

/* ---- the sized allocator ---- */

#define SIZED_HDR 16 /* keeps the malloc alignment of the block after it */

static void *sized_alloc(void *ud, size_t n) {
  (void)ud;
  if (n > SIZE_MAX - SIZED_HDR) return NULL;
  unsigned char *p = malloc(n + SIZED_HDR);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  return p + SIZED_HDR;
}

static void sized_free(void *ud, void *q) {
  (void)ud;
  if (q) free((unsigned char *)q - SIZED_HDR);
}

ProtobufCAllocator onnx_sized_allocator = {sized_alloc, sized_free, NULL};

size_t onnx_sized_string_len(const char *s) {
  size_t n;
  memcpy(&n, s - SIZED_HDR, sizeof n);
  return n ? n - 1 : 0;
}

mil_status ot_ext_map(const ot_src *s, const ot_ctx *c, size_t nbytes, ot_map **map, const void **bytes) {
  *map = NULL;
  *bytes = NULL;
  const char *loc = NULL, *off_s = NULL, *len_s = NULL, *sum = NULL;
  for (size_t i = 0; i < s->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = s->external_data[i];
    const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
    const char **slot = !strcmp(k, "location") ? &loc : !strcmp(k, "offset") ? &off_s : !strcmp(k, "length") ? &len_s
                        : !strcmp(k, "checksum") ? &sum : NULL;
    if (!slot) continue; /* other keys (e.g. "basepath") carry nothing libmil needs */
    if (*slot) return ot_err(c, s, MIL_ERR_FORMAT, "external data: key '%s' appears twice in external_data (13)", k);
    *slot = v;
  }
  if (loc && loc[0] && (c->flags & OT_SIZED_STRINGS) && onnx_sized_string_len(loc) != strlen(loc))
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location holds a NUL byte after \"%s\" (%zu bytes in the "
                  "model, %zu before the NUL); refused, as a C path would silently be cut there", loc,
                  onnx_sized_string_len(loc), strlen(loc));
  if (!loc || !loc[0])
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: data_location is EXTERNAL but external_data (13) has no %s key 'location'",
                loc ? "non-empty" : "");
  uint64_t off = 0, len = 0;
  if (off_s && !parse_u64(off_s, &off))
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: key 'offset' is \"%.40s\"; expected a non-negative decimal integer", off_s);
  if (len_s && !parse_u64(len_s, &len))
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: key 'length' is \"%.40s\"; expected a non-negative decimal integer", len_s);
  if (!c->base_dir)
    return ot_err(c, s, MIL_ERR_INVALID, "external data: location \"%s\" needs the model's directory (read the tensor from a file, or "
                "give a base directory)", loc);
  char path[PATH_MAX + 256];
  int fd = -1;
  mil_status st = open_inside(s, c, loc, path, sizeof path, &fd);
  if (st != MIL_OK) return st;
  struct stat sb;
  fstat(fd, &sb);
  uint64_t size = (uint64_t)sb.st_size;
  if (!len_s) len = off <= size ? size - off : 0;
  if (len != nbytes) {
    close(fd);
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: %s: %s %" PRIu64 " bytes, but dims say %zu bytes of %s", path,
                len_s ? "key 'length' says" : "the file holds (after the offset)", len, nbytes,
                mil_onnx_dtype_name(s->data_type));
  }
  if (off > size || len > size - off) {
    close(fd);
    return ot_err(c, s, MIL_ERR_FORMAT, "external data: %s is %" PRIu64 " bytes, too short for bytes [%" PRIu64 ", %" PRIu64
                ") (offset %" PRIu64 " + length %" PRIu64 ")", path, size, off, off + len, off, len);
  }
  if (sum && !(c->flags & MIL_ONNX_NO_CHECKSUM) && (st = check_sha1(s, c, fd, size, sum, path)) != MIL_OK) {
    close(fd);
    return st;
  }
  if (nbytes == 0) {
    close(fd);
    return MIL_OK;
  }
  long page = sysconf(_SC_PAGESIZE);
  uint64_t aoff = off - off % (uint64_t)(page > 0 ? page : 4096);
  size_t mlen = (size_t)(len + (off - aoff));
  void *base = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, (off_t)aoff);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) return ot_err(c, s, MIL_ERR_IO, "external data: %s: cannot map %zu bytes: %s", path, mlen, strerror(e));
  ot_map *m = malloc(sizeof *m);
  if (!m) {
    munmap(base, mlen);
    return ot_err(c, s, MIL_ERR_NOMEM, "external data: out of memory");
  }
  *m = (ot_map){base, mlen, 1};
  *map = m;
  *bytes = (const uint8_t *)base + (off - aoff);
  return MIL_OK;
}

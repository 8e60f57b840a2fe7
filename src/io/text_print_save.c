/* mil_save_text: a program as a .mil file with its large consts in a weight
 * file beside it ("net.mil" + "net.weight.bin"), referred to relative to the
 * text so that the pair can be moved together and read back by
 * mil_parse_file (which resolves @blob paths against the .mil's directory). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "io/io_internal.h"
#include "mil/blob.h"
#include "mil/model.h"

typedef struct saver {
  mil_blob_writer *w;
  int spec;
  ir_ptrmap offsets; /* value -> offset + 1 in the weight file */
  const char *ref;   /* the weight file's name as the text refers to it */
  mil_status st;
  mil_diag *d;
} saver;

static bool read_value(void *ud, size_t offset, size_t n, void *dst) { return mil_value_read(ud, offset, n, dst); }

static int store_const(mil_op *op, void *ud) {
  saver *s = ud;
  if (!mil_op_is_const(op) || op->n_outputs != 1) return 0;
  const mil_value *v = op->outputs[0]->val;
  if (!v || v->kind != MIL_VAL_TENSOR || !mil_blob_should_store(v, s->spec) || ir_ptrmap_get(&s->offsets, v)) return 0;
  uint64_t off = 0;
  mil_status st = mil_value_is_deferred(v)
                      ? mil_blob_writer_add_stream(s->w, v->type->dtype, read_value, (void *)v, v->nbytes, v->numel,
                                                   &off, s->d)
                      : mil_blob_writer_add(s->w, v->type->dtype, mil_value_data(v), v->nbytes, v->numel, &off, s->d);
  if (st == MIL_OK && !ir_ptrmap_put(&s->offsets, v, (void *)(uintptr_t)(off + 1))) st = MIL_ERR_NOMEM;
  if (st != MIL_OK) {
    s->st = st;
    return 1;
  }
  return 0;
}

static const char *blob_ref(void *ud, const mil_value *v, uint64_t *offset) {
  saver *s = ud;
  uintptr_t o = (uintptr_t)ir_ptrmap_get(&s->offsets, v);
  if (!o) return NULL;
  *offset = (uint64_t)(o - 1);
  return s->ref;
}

/* 0666 minus the umask, as open(O_CREAT) gives (mkstemp gives 0600). */
static void set_create_mode(const char *path) {
  mode_t u = umask(0);
  umask(u);
  chmod(path, 0666 & ~u);
}

/* A unique temporary sibling of path (created empty); NULL on failure. */
static char *temp_file(const char *path, mil_diag *d) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (!tmp) return NULL;
  snprintf(tmp, n, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    mil_diag_error(d, MIL_ERR_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
    free(tmp);
    return NULL;
  }
  close(fd);
  set_create_mode(tmp);
  return tmp;
}

/* "dir/net.mil" -> "dir/net.weight.bin" (the name without a final ".mil"). */
static char *weight_path(const char *path) {
  size_t n = strlen(path);
  if (n > 4 && !strcmp(path + n - 4, ".mil")) n -= 4;
  char *w = malloc(n + 12);
  if (w) {
    memcpy(w, path, n);
    memcpy(w + n, ".weight.bin", 12);
  }
  return w;
}

static mil_status write_text(const mil_program *p, const char *tmp, const mil_print_extra *x, mil_diag *d) {
  FILE *f = fopen(tmp, "w");
  if (!f) return mil_diag_error(d, MIL_ERR_IO, "%s: cannot open for writing: %s", tmp, strerror(errno));
  mil_print_options po = {MIL_PRINT_COMPLETE, false};
  mil_status st = mil_print_program_file_with(p, &po, x, f);
  if (fclose(f) != 0 && st == MIL_OK) st = MIL_ERR_IO;
  if (st != MIL_OK) mil_diag_error(d, st, "%s: writing failed", tmp);
  return st;
}

mil_status mil_save_text(const mil_program *p, const char *path, bool inline_weights, mil_diag *d) {
  if (!p || !path || !*path) return mil_diag_error(d, MIL_ERR_INVALID, "mil_save_text: no program or path");
  saver s;
  memset(&s, 0, sizeof s);
  s.d = d;
  ir_ptrmap_init(&s.offsets);
  s.spec = p->n_functions ? mil_spec_version_for_opset(p->functions[0]->opset) : 0;
  if (s.spec < MIL_SPEC_VERSION_MIN) s.spec = MIL_SPEC_VERSION_MIN;
  char *wpath = inline_weights ? NULL : weight_path(path);
  char *wtmp = NULL, *tmp = NULL;
  mil_status st = MIL_OK;
  if (!inline_weights && !wpath) st = MIL_ERR_NOMEM;
  if (st == MIL_OK && wpath) {
    const char *slash = strrchr(wpath, '/');
    s.ref = slash ? slash + 1 : wpath;
    if (!(wtmp = temp_file(wpath, d))) st = MIL_ERR_IO;
    if (st == MIL_OK) st = mil_blob_writer_open(wtmp, 0, &s.w, d);
    if (st == MIL_OK) {
      mil_program_walk((mil_program *)p, store_const, &s);
      st = s.st;
      uint32_t n = mil_blob_writer_count(s.w);
      if (st == MIL_OK && n) {
        st = mil_blob_writer_close(s.w, d);
      } else {
        mil_blob_writer_abort(s.w); /* removes wtmp */
        free(wtmp);
        wtmp = NULL;
      }
      s.w = NULL;
    }
  }
  mil_print_extra x = {NULL, blob_ref, &s};
  if (st == MIL_OK && !(tmp = temp_file(path, d))) st = MIL_ERR_IO;
  if (st == MIL_OK) st = write_text(p, tmp, &x, d);
  if (st == MIL_OK && wtmp) {
    set_create_mode(wtmp);
    if (rename(wtmp, wpath) != 0)
      st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot rename the weight file into place: %s", wpath, strerror(errno));
  }
  if (st == MIL_OK && rename(tmp, path) != 0)
    st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  if (st != MIL_OK) {
    if (tmp) remove(tmp);
    if (wtmp) remove(wtmp);
    if (st == MIL_ERR_NOMEM) mil_diag_error(d, st, "%s: out of memory", path);
  }
  ir_ptrmap_free(&s.offsets);
  free(tmp);
  free(wtmp);
  free(wpath);
  return st;
}

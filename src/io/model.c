/* The mil_model object: loading and saving by extension, atomic writes,
 * accessors, and the version/opset table of formats.md section 7.
 *
 * Mirrors coremltools.models.MLModel (loading a package or a spec with a
 * weights directory), coremltools.models.utils.save_spec / MLModel.save
 * (writing), and _OPSET in coremltools/__init__.py.
 *
 * .mlmodel and weights: an ML Program whose large consts live in
 * weight.bin cannot be a single .mlmodel file. libmil writes such a model's
 * weights to weights/weight.bin next to the .mlmodel (the "@model_path"
 * reading of formats.md 3.3, and where MLModel(spec, weights_dir=...) users
 * keep them); a model whose consts are all small needs no weights directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "io/model_internal.h"
#include "mil/ops.h"
#include "mil/text.h"

/* ------------------------------------------------------------------------ */
/* versions                                                                   */
/* ------------------------------------------------------------------------ */

const char *mil_opset_for_spec_version(int v) {
  static const char *const names[] = {"CoreML5", "CoreML6", "CoreML7", "CoreML8", "CoreML9"};
  return v >= MIL_SPEC_VERSION_MIN && v <= MIL_SPEC_VERSION_MAX ? names[v - MIL_SPEC_VERSION_MIN] : NULL;
}

int mil_spec_version_for_opset(const char *opset) {
  for (int v = MIL_SPEC_VERSION_MIN; opset && v <= MIL_SPEC_VERSION_MAX; v++)
    if (!strcmp(opset, mil_opset_for_spec_version(v))) return v;
  return 0;
}

const char *mil_feature_kind_name(mil_feature_kind k) {
  switch (k) {
  case MIL_FEATURE_INT64: return "int64";
  case MIL_FEATURE_DOUBLE: return "double";
  case MIL_FEATURE_STRING: return "string";
  case MIL_FEATURE_IMAGE: return "image";
  case MIL_FEATURE_MULTIARRAY: return "multiArray";
  case MIL_FEATURE_DICTIONARY: return "dictionary";
  case MIL_FEATURE_SEQUENCE: return "sequence";
  case MIL_FEATURE_STATE: return "state";
  default: return "none";
  }
}

const char *mil_array_dtype_name(mil_array_dtype t) {
  switch (t) {
  case MIL_ARRAY_FLOAT32: return "FLOAT32";
  case MIL_ARRAY_DOUBLE: return "DOUBLE";
  case MIL_ARRAY_FLOAT16: return "FLOAT16";
  case MIL_ARRAY_INT32: return "INT32";
  case MIL_ARRAY_INT8: return "INT8";
  default: return "INVALID";
  }
}

/* ------------------------------------------------------------------------ */
/* files                                                                      */
/* ------------------------------------------------------------------------ */

char *io_model_path_join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  bool slash = na && a[na - 1] == '/';
  char *s = malloc(na + nb + 2);
  if (!s) return NULL;
  memcpy(s, a, na);
  if (!slash) s[na++] = '/';
  memcpy(s + na, b, nb + 1);
  return s;
}

#define IO_MAX_FILE ((size_t)2 << 30)

mil_status io_model_read_file(const char *path, const char *root, const char *what, void **data, size_t *len,
                              mil_diag *d) {
  *data = NULL;
  *len = 0;
  struct stat st;
  mil_status ost;
  int fd = io_fs_open_regular(path, root, what, &st, &ost, d);
  if (fd < 0) return ost;
  if ((uint64_t)st.st_size > IO_MAX_FILE) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: %lld bytes, more than the 2 GiB a protobuf can hold", path,
                          (long long)st.st_size);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, n);
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = errno;
      free(buf);
      close(fd);
      return mil_diag_error(d, MIL_ERR_IO, "%s: read failed at byte %zu: %s", path, got, r ? strerror(e) : "unexpected end of file");
    }
    got += (size_t)r;
  }
  close(fd);
  *data = buf;
  *len = n;
  return MIL_OK;
}

mil_status io_model_write_file(const char *path, const void *data, size_t len, mil_diag *d) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return mil_diag_error(d, MIL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, (const uint8_t *)data + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return mil_diag_error(d, MIL_ERR_IO, "%s: write failed at byte %zu: %s", path, done, strerror(e));
    }
    done += (size_t)w;
  }
  if (close(fd) != 0) return mil_diag_error(d, MIL_ERR_IO, "%s: close failed: %s", path, strerror(errno));
  return MIL_OK;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

void io_model_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  else remove(path);
}

bool io_model_path_exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

bool io_model_path_is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The extension of the last path component ("mlpackage"), or "". */
const char *io_model_extension(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot + 1 : "";
}

/* A copy of path without trailing slashes. */
char *io_model_clean_path(const char *path) {
  char *p = io_model_strdup(path);
  if (!p) return NULL;
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
  return p;
}

/* The directory part of path ("." when none). */
char *io_model_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return io_model_strdup(".");
  if (slash == path) return io_model_strdup("/");
  size_t n = (size_t)(slash - path);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, path, n);
    s[n] = 0;
  }
  return s;
}

/* ------------------------------------------------------------------------ */
/* the model object                                                           */
/* ------------------------------------------------------------------------ */

void io_model_drop_view(mil_model *m) {
  io_desc_view_free(m->view);
  m->view = NULL;
}

void mil_model_free(mil_model *m) {
  if (!m) return;
  io_model_drop_view(m);
  mil_program_free(m->prog);
  io_pb_free(m->desc);
  for (int32_t i = 0; i < m->n_weights; i++) mil_blob_file_close(m->weights[i]);
  free(m->weights);
  free(m->path);
  free(m);
}

mil_program *mil_model_program(const mil_model *m) { return m->prog; }

void mil_model_set_program(mil_model *m, mil_program *prog) {
  if (prog == m->prog) return;
  mil_program_free(m->prog);
  m->prog = prog;
  io_model_drop_view(m);
}

mil_program *mil_model_take_program(mil_model *m) {
  mil_program *p = m->prog;
  m->prog = NULL;
  io_model_drop_view(m);
  return p;
}

int mil_model_spec_version(const mil_model *m) { return m->spec_version; }

mil_status mil_model_set_spec_version(mil_model *m, int v) {
  if (v < MIL_SPEC_VERSION_MIN || v > MIL_SPEC_VERSION_MAX) return MIL_ERR_INVALID;
  m->spec_version = v;
  io_model_drop_view(m);
  return MIL_OK;
}

const char *mil_model_path(const mil_model *m) { return m->path ? m->path : ""; }

int32_t mil_model_n_weight_files(const mil_model *m) { return m->n_weights; }

mil_blob_file *mil_model_weight_file(const mil_model *m, int32_t i) {
  return i >= 0 && i < m->n_weights ? m->weights[i] : NULL;
}

mil_status mil_model_check_weights(const mil_model *m, mil_diag *d) {
  for (int32_t i = 0; m && i < m->n_weights; i++) {
    mil_status st = mil_blob_file_check(m->weights[i], d);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

const mil_model_desc *mil_model_description(mil_model *m) {
  static const mil_model_desc empty = {false, "main", 0, NULL, "", "", "", "", 0, NULL, NULL};
  if (!m->view) {
    if (m->desc) {
      m->view = io_desc_view_new(m->desc, NULL);
    } else if (m->prog) {
      Coreml__ModelDescription *syn = NULL;
      if (io_desc_synthesize(m->prog, m->spec_version, NULL, &syn, NULL) == MIL_OK) m->view = io_desc_view_new(syn, syn);
    }
    if (!m->view) return &empty;
  }
  return io_desc_view_get(m->view);
}

const mil_function_desc *mil_model_function_desc(mil_model *m, const char *name) {
  const mil_model_desc *md = mil_model_description(m);
  if (!name) name = md->default_function_name;
  for (int32_t i = 0; i < md->n_functions; i++)
    if (!strcmp(md->functions[i].name, name)) return &md->functions[i];
  if (!md->multi_function && md->n_functions == 1 && m->prog && m->prog->n_functions == 1 &&
      !strcmp(m->prog->functions[0]->name, name))
    return &md->functions[0];
  return NULL;
}

const char *mil_model_metadata(mil_model *m, const char *key) {
  const mil_model_desc *md = mil_model_description(m);
  for (int32_t i = 0; i < md->n_user_defined; i++)
    if (!strcmp(md->user_keys[i], key)) return md->user_values[i];
  return NULL;
}

mil_status mil_model_set_metadata(mil_model *m, const char *key, const char *value) {
  if (!m->desc && !(m->desc = io_pb_new(&coreml__model_description__descriptor))) return MIL_ERR_NOMEM;
  Coreml__ModelDescription *desc = m->desc;
  if (!desc->metadata && !(desc->metadata = io_pb_new(&coreml__metadata__descriptor))) return MIL_ERR_NOMEM;
  Coreml__Metadata *meta = desc->metadata;
  io_model_drop_view(m);
  for (size_t i = 0; i < meta->n_userdefined; i++) {
    Coreml__Metadata__UserDefinedEntry *e = meta->userdefined[i];
    if (!e->key || strcmp(e->key, key)) continue;
    if (!value) {
      io_pb_free(e);
      memmove(&meta->userdefined[i], &meta->userdefined[i + 1], (meta->n_userdefined - i - 1) * sizeof e);
      meta->n_userdefined--;
      return MIL_OK;
    }
    char *nv = io_model_strdup(value);
    if (!nv) return MIL_ERR_NOMEM;
    if (e->value != protobuf_c_empty_string) free(e->value);
    e->value = nv;
    return MIL_OK;
  }
  if (!value) return MIL_OK;
  Coreml__Metadata__UserDefinedEntry *e = io_pb_new(&coreml__metadata__user_defined_entry__descriptor);
  if (!e || !(e->key = io_model_strdup(key)) || !(e->value = io_model_strdup(value)) ||
      !io_pb_push(&meta->userdefined, &meta->n_userdefined, e)) {
    io_pb_free(e);
    return MIL_ERR_NOMEM;
  }
  return MIL_OK;
}

mil_status mil_model_sync_description(mil_model *m, mil_diag *d) {
  if (!m->prog) return mil_diag_error(d, MIL_ERR_INVALID, "%s: the model has no program", mil_model_path(m));
  Coreml__ModelDescription *nd = NULL;
  mil_status st = io_desc_synthesize(m->prog, m->spec_version, m->desc, &nd, d);
  if (st != MIL_OK) return st;
  io_model_drop_view(m);
  io_pb_free(m->desc);
  m->desc = nd;
  return MIL_OK;
}

/* The highest spec version the program's opsets imply, CoreML3 (iOS13, 4)
 * included (0 if none is a known opset), and at least
 * IO_SPEC_MULTI_FUNCTION for several functions: the one rule the
 * description check (io_desc_validate) and the writer apply too. */
static int spec_from_opsets(const mil_program *p) {
  int v = 0;
  for (int32_t i = 0; i < p->n_functions; i++) {
    int f = mil_opset_version(p->functions[i]->opset);
    if (f > v) v = f;
  }
  if (p->n_functions > 1 && v && v < IO_SPEC_MULTI_FUNCTION) v = IO_SPEC_MULTI_FUNCTION;
  return v;
}

/* Only an ML Program (.mlpackage / .mlmodel) needs CoreML5 or later: every
 * function's opset must be one (coremltools' _OPSET; older targets are
 * neural networks). */
mil_status io_model_check_opsets(const mil_model *m, const char *path, mil_diag *d) {
  for (int32_t i = 0; i < m->prog->n_functions; i++) {
    const mil_function *f = m->prog->functions[i];
    if (mil_spec_version_for_opset(f->opset)) continue;
    int v = mil_opset_version(f->opset);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED,
                          "%s: writing an ML Program model needs opset CoreML5 (iOS15) or later, but function '%s' "
                          "has %s%s%s%s; retarget it to iOS15..iOS18 first (`mil convert/opt --target iOS15`, "
                          "mil_program_retarget), or write .mil text",
                          path, f->name, f->opset, v > 0 ? " (" : "", v > 0 ? mil_opset_target_name(v) : "",
                          v > 0 ? ")" : "");
  }
  return MIL_OK;
}

mil_status mil_model_from_program(mil_program *prog, int spec_version, mil_model **out, mil_diag *d) {
  *out = NULL;
  if (!prog) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_from_program: no program");
  if (spec_version == 0) spec_version = spec_from_opsets(prog);
  if (spec_version < MIL_IOS13 || spec_version > MIL_SPEC_VERSION_MAX) {
    mil_program_free(prog);
    return mil_diag_error(d, MIL_ERR_INVALID, "specification version %d is not a MIL program version (%d..%d)",
                          spec_version, MIL_IOS13, MIL_SPEC_VERSION_MAX);
  }
  mil_model *m = calloc(1, sizeof *m);
  if (!m) {
    mil_program_free(prog);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  }
  m->prog = prog;
  m->spec_version = spec_version;
  mil_status st = mil_model_sync_description(m, d);
  if (st != MIL_OK) {
    mil_model_free(m);
    return st;
  }
  *out = m;
  return MIL_OK;
}

/* ------------------------------------------------------------------------ */
/* loading                                                                    */
/* ------------------------------------------------------------------------ */

/* The protobuf decoder behind mil_model_load_proto and the file loaders.
 * root: canonical directory weight files must resolve into (NULL: any). */
static mil_status load_proto(const void *data, size_t len, const char *name, const char *weights_dir,
                             const char *root, mil_model **out, mil_diag *d) {
  *out = NULL;
  if (!data && len) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_load_proto: no data");
  io_weights w;
  io_weights_init(&w, weights_dir, root);
  if ((weights_dir && !w.dir) || (root && !w.root)) {
    io_weights_free(&w);
    return MIL_ERR_NOMEM;
  }
  mil_model *m = NULL;
  mil_status st = io_model_decode(data ? data : "", len, name ? name : "<memory>", &w, &m, d);
  if (st == MIL_OK && (st = io_weights_give(&w, m)) != MIL_OK) mil_diag_error(d, st, "out of memory");
  if (st == MIL_OK && !(m->path = io_model_strdup(name ? name : ""))) st = MIL_ERR_NOMEM;
  io_weights_free(&w);
  if (st != MIL_OK) {
    mil_model_free(m);
    return st;
  }
  *out = m;
  return MIL_OK;
}

/* An explicit weights directory is the caller's choice: its files are not
 * confined to it. */
mil_status mil_model_load_proto(const void *data, size_t len, const char *name, const char *weights_dir,
                                mil_model **out, mil_diag *d) {
  return load_proto(data, len, name, weights_dir, NULL, out, d);
}

static mil_status load_protobuf_file(const char *file, const char *weights_dir, const char *root, mil_model **out,
                                     mil_diag *d) {
  void *buf;
  size_t len;
  mil_status st = io_model_read_file(file, root, "model file", &buf, &len, d);
  if (st != MIL_OK) return st;
  st = load_proto(buf, len, file, weights_dir, root, out, d);
  free(buf);
  return st;
}

static mil_status load_mil_text(const char *path, mil_model **out, mil_diag *d) {
  mil_program *p = NULL;
  mil_status st = mil_parse_file(path, &p, d);
  if (st != MIL_OK) return st;
  int spec = spec_from_opsets(p);
  if (!spec) {
    /* report while the program (which owns the opset string) is alive */
    const char *opset = p->n_functions && p->functions[0]->opset ? p->functions[0]->opset : "(none)";
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: opset '%s' is not a MIL opset (CoreML3..CoreML9)", path, opset);
    mil_program_free(p);
    return st;
  }
  mil_model *m = calloc(1, sizeof *m);
  if (!m || !(m->path = io_model_strdup(path))) {
    free(m);
    mil_program_free(p);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  }
  m->prog = p;
  m->spec_version = spec;
  *out = m;
  return MIL_OK;
}

/* One attempt at loading path (clean, extension ext). */
static mil_status load_once(const char *path, const char *ext, mil_model **m, mil_diag *d) {
  mil_status st;
  if (!strcmp(ext, "mlpackage")) {
    io_package pk;
    st = io_package_open(path, &pk, d);
    if (st == MIL_OK) {
      st = load_protobuf_file(pk.model_path, pk.weights_dir, pk.root, m, d);
      io_package_close(&pk);
    }
  } else if (!strcmp(ext, "mlmodel")) {
    /* the model and its weights/ directory: files must stay in its directory */
    char *dir = io_model_dir_of(path);
    char *wdir = dir ? io_model_path_join(dir, "weights") : NULL;
    char *root = dir ? io_fs_root(dir) : NULL;
    if (!wdir) st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    else if (!root) st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot resolve: %s", dir, strerror(errno));
    else st = load_protobuf_file(path, io_model_path_is_dir(wdir) ? wdir : NULL, root, m, d);
    free(dir);
    free(wdir);
    free(root);
  } else if (!strcmp(ext, "mil")) {
    st = load_mil_text(path, m, d);
  } else {
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: unknown model extension '%s%s' (expected .mlpackage, .mlmodel or "
                        ".mil)", path, ext[0] ? "." : "", ext);
  }
  return st;
}

/* Holds what is at path (the link itself for a symlink) for the length of
 * a load: an O_PATH descriptor neither reads nor blocks (a FIFO), and while
 * it is open the object's inode cannot be freed and its number given to a
 * newer save, so comparing it with what is at path afterwards tells
 * whether a save replaced the model meanwhile. -1 when nothing is there. */
static int path_hold(const char *path) { return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC); }

/* True when path still names the object fd holds (both absent counts too). */
static bool path_same(const char *path, int fd) {
  struct stat a, b;
  bool here = lstat(path, &a) == 0;
  if (fd < 0) return !here;
  return here && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

#define LOAD_ATTEMPTS 8

mil_status mil_model_load(const char *path_in, mil_model **out, mil_diag *d) {
  if (!out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_load: out is NULL");
  *out = NULL;
  if (!path_in || !path_in[0]) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_load: empty path");
  char *path = io_model_clean_path(path_in);
  if (!path) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  const char *ext = io_model_extension(path);
  mil_status st;
  mil_model *m = NULL;
  /* A save replaces a model while it may be read: a package is swapped
   * whole, a .mlmodel renamed over (its new weights under a new name). When
   * what is at path changed during the load, the parts read may come from
   * both sides: read again (a few times at most), and when it keeps
   * changing, fail rather than return a model made of two saves. */
  for (int attempt = 0;; attempt++) {
    int held = path_hold(path);
    mil_diag tmp;
    mil_diag_init(&tmp);
    tmp.max_msgs = d ? d->max_msgs : 0;
    st = load_once(path, ext, &m, &tmp);
    bool moved = !path_same(path, held);
    if (held >= 0) close(held);
    if (moved) {
      mil_model_free(m);
      m = NULL;
      mil_diag_clear(&tmp);
      if (attempt + 1 < LOAD_ATTEMPTS) continue;
      st = mil_diag_error(d, MIL_ERR_IO, "%s: the model was replaced while it was being read, %d times in a row; "
                          "not returning a model that may mix two saves", path, LOAD_ATTEMPTS);
      break;
    }
    size_t errs = 0, warns = 0;
    for (size_t i = 0; d && i < tmp.count; i++) {
      mil_diag_add(d, tmp.msgs[i].severity, "%s", tmp.msgs[i].text);
      errs += tmp.msgs[i].severity == MIL_SEV_ERROR;
      warns += tmp.msgs[i].severity == MIL_SEV_WARNING;
    }
    if (d) d->n_errors += tmp.n_errors - errs, d->n_warnings += tmp.n_warnings - warns; /* those not stored */
    mil_diag_clear(&tmp);
    break;
  }
  mil_release_free_memory(); /* the decoded protobuf tree, freed amid the program's arena */
  if (st == MIL_OK) {
    free(m->path);
    m->path = path;
    *out = m;
    return MIL_OK;
  }
  free(path);
  return st;
}

/* ------------------------------------------------------------------------ */
/* saving                                                                     */
/* ------------------------------------------------------------------------ */

mil_status mil_model_serialize(mil_model *m, mil_blob_writer *weights, void **data, size_t *len, mil_diag *d) {
  if (!m || !m->prog) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_serialize: no program");
  mil_status st = io_model_check_opsets(m, "<memory>", d);
  if (st == MIL_OK) st = mil_model_sync_description(m, d);
  if (st != MIL_OK) return st;
  return io_model_encode(m, weights, NULL, "<memory>", data, len, d);
}

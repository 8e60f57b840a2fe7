/* Saving a mil_model: .mlpackage, .mlmodel (+ its weight file) and .mil,
 * each replacing what is at the target atomically.
 *
 * Mirrors coremltools.models.utils.save_spec / MLModel.save for the layout;
 * the replacement rules are libmil's own (coremltools writes in place):
 *
 *  .mlpackage  built in a temporary sibling directory, then swapped with
 *              the old package in one renameat2(RENAME_EXCHANGE) (or moved
 *              into place when there was none); the old one is removed
 *              afterwards.
 *  .mlmodel    the weights go to a fresh file weights/<stem>.<16 hex>.bin
 *              that nothing refers to yet, the model (which names that file)
 *              to a temporary sibling renamed over the target last; only
 *              then are the old model's weight files (the same pattern,
 *              same stem) removed. Each .mlmodel owns its weight files, so
 *              two models in one directory never share one. Saves into one
 *              weights directory are serialized by flock(2) on it.
 *  .mil        a temporary sibling renamed over the target.
 *
 * A crash at any moment leaves the old model or the new one at the target
 * (plus, at worst, an unreferenced temporary or weight file). Temporaries
 * are named "<target>.tmp-<pid>-<hex>": SIGINT/SIGTERM/SIGHUP remove them
 * (mil_save_cleanup_on_signals), and the next save to the same target
 * removes those whose process is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "io/model_internal.h"
#include "mil/text.h"

/* ------------------------------------------------------------------------ */
/* crash points (tests)                                                       */
/* ------------------------------------------------------------------------ */

/* When > 0, the n-th step of the saves of this process raises
 * io_save_crash_signal (SIGKILL unless set): tests simulate a crash, or an
 * interruption, between any two steps of a save. */
IO_MODEL_HIDDEN int io_save_crash_at;
IO_MODEL_HIDDEN int io_save_crash_signal;
static int g_steps;

static void step(void) {
  if (io_save_crash_at > 0 && ++g_steps == io_save_crash_at) raise(io_save_crash_signal ? io_save_crash_signal : SIGKILL);
}

/* ------------------------------------------------------------------------ */
/* temporaries                                                                */
/* ------------------------------------------------------------------------ */

static uint64_t random64(void) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint64_t)(uintptr_t)&r ^ (uint64_t)getpid() << 32;
  return r;
}

/* "<path>.tmp-<pid>-<random>": a sibling on the same file system. */
static char *temp_sibling(const char *path) {
  size_t n = strlen(path) + 48;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s.tmp-%ld-%08x", path, (long)getpid(), (unsigned)random64());
  return s;
}

/* The pid in "<base>.tmp-<pid>-<hex>", or -1 when name is not of that form. */
static long temp_owner(const char *name, const char *base) {
  size_t nb = strlen(base);
  if (strncmp(name, base, nb) || strncmp(name + nb, ".tmp-", 5)) return -1;
  const char *p = name + nb + 5;
  long pid = 0;
  if (*p < '0' || *p > '9') return -1;
  while (*p >= '0' && *p <= '9' && pid < 100000000) pid = pid * 10 + (*p++ - '0');
  if (*p++ != '-' || !*p) return -1;
  for (; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return -1;
  return pid;
}

static bool pid_gone(long pid) { return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH; }

static const char *base_of(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Removes the temporaries of earlier saves to path whose process is gone. */
static void remove_stale_temps(const char *path) {
  char *dir = io_model_dir_of(path);
  DIR *dh = dir ? opendir(dir) : NULL;
  const char *base = base_of(path);
  for (struct dirent *e; dh && (e = readdir(dh));) {
    if (!pid_gone(temp_owner(e->d_name, base))) continue;
    char *p = io_model_path_join(dir, e->d_name);
    if (p) io_model_remove_tree(p);
    free(p);
  }
  if (dh) closedir(dh);
  free(dir);
}

/* Puts tmp (a finished file or directory) at path, replacing what is
 * there; the old content is removed only once the new one is in place. */
static mil_status replace_path(const char *tmp, const char *path, bool is_dir, mil_diag *d) {
  if (!io_model_path_exists(path) || !is_dir) {
    if (rename(tmp, path) != 0)
      return mil_diag_error(d, MIL_ERR_IO, "%s: cannot move the new model into place: %s", path, strerror(errno));
    return MIL_OK;
  }
  /* a directory cannot be renamed over a non-empty one: swap atomically */
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
    step();
    io_model_remove_tree(tmp); /* now the old package */
    return MIL_OK;
  }
  /* no exchange on this file system: a short window without a package at
   * path (the old one waits at a temporary name) */
  char *old = temp_sibling(path);
  if (!old) return MIL_ERR_NOMEM;
  mil_status st = MIL_OK;
  if (rename(path, old) != 0) {
    st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot move the old package aside: %s", path, strerror(errno));
  } else if (rename(tmp, path) != 0) {
    st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot move the new package into place: %s", path, strerror(errno));
    rename(old, path);
  } else {
    step();
    io_model_remove_tree(old);
  }
  free(old);
  return st;
}

mil_status io_model_replace_path(const char *tmp, const char *path, bool is_dir, mil_diag *d) {
  return replace_path(tmp, path, is_dir, d);
}

/* ------------------------------------------------------------------------ */
/* .mlmodel weight files                                                      */
/* ------------------------------------------------------------------------ */

#define WNAME_TAIL 21 /* ".<16 hex>.bin" */

/* "<stem>.<16 hex>.bin" (malloc'ed). */
static char *fresh_weight_name(const char *stem) {
  size_t n = strlen(stem) + WNAME_TAIL + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s.%016llx.bin", stem, (unsigned long long)random64());
  return s;
}

/* Is name a weight file of the .mlmodel whose stem is `stem`? */
static bool is_weight_file_of(const char *name, const char *stem) {
  size_t ns = strlen(stem), n = strlen(name);
  if (n != ns + WNAME_TAIL || strncmp(name, stem, ns) || name[ns] != '.' || strcmp(name + n - 4, ".bin")) return false;
  for (size_t i = ns + 1; i < ns + 17; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

/* Removes the weight files of stem other than keep (NULL: all). */
static void remove_weight_files(const char *wdir, const char *stem, const char *keep) {
  DIR *dh = opendir(wdir);
  for (struct dirent *e; dh && (e = readdir(dh));) {
    if (!is_weight_file_of(e->d_name, stem) || (keep && !strcmp(e->d_name, keep))) continue;
    char *p = io_model_path_join(wdir, e->d_name);
    if (p) unlink(p);
    free(p);
  }
  if (dh) closedir(dh);
}

/* Creates (if needed), opens and locks the weights directory wdir, which
 * must resolve inside `dir`. Returns the locked descriptor or -1 (*st). */
static int lock_weights_dir(const char *wdir, const char *dir, mil_status *st, mil_diag *d) {
  char *root = io_fs_root(dir);
  if (!root) {
    *st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot resolve: %s", dir, strerror(errno));
    return -1;
  }
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    if (mkdir(wdir, 0777) != 0 && errno != EEXIST) {
      *st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot create directory: %s", wdir, strerror(errno));
      break;
    }
    fd = open(wdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue; /* removed meanwhile by another save */
      *st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot open the weights directory: %s", wdir, strerror(errno));
      break;
    }
    if ((*st = io_fs_check_inside(wdir, root, "the weights directory", NULL, d)) != MIL_OK) {
      close(fd);
      fd = -1;
      break;
    }
    struct stat sb;
    /* no flock on this file system: saves are not serialized, each still atomic */
    if (flock(fd, LOCK_EX) == 0 && fstat(fd, &sb) == 0 && sb.st_nlink == 0) {
      close(fd); /* removed while we waited */
      fd = -1;
    }
  }
  if (fd < 0 && *st == MIL_OK)
    *st = mil_diag_error(d, MIL_ERR_IO, "%s: the weights directory keeps disappearing", wdir);
  free(root);
  return fd;
}

/* Refuses a .mlmodel target inside a .mlpackage: it would add files the
 * package does not list, and share the package's weights directory. */
static mil_status refuse_inside_package(const char *path, mil_diag *d) {
  char *dir = io_model_dir_of(path);
  char *real = dir ? io_fs_root(dir) : NULL;
  free(dir);
  mil_status st = MIL_OK;
  for (char *s = real; s && *s && st == MIL_OK;) {
    char *e = strchr(s + 1, '/');
    size_t n = e ? (size_t)(e - real) : strlen(real);
    if (n >= 10 && !strncmp(real + n - 10, ".mlpackage", 10)) {
      char c = real[n];
      real[n] = 0;
      char *man = io_model_path_join(real, "Manifest.json");
      if (man && io_model_path_exists(man))
        st = mil_diag_error(d, MIL_ERR_IO, "%s: lies inside the package %s; writing a .mlmodel there would put files "
                            "the package does not list next to its own model and weights. Save the package itself "
                            "(%s) or write the .mlmodel elsewhere", path, real, real);
      free(man);
      real[n] = c;
    }
    s = e;
  }
  free(real);
  return st;
}

/* ------------------------------------------------------------------------ */
/* saving                                                                     */
/* ------------------------------------------------------------------------ */

/* Writes the model protobuf to `model_file`, blob consts to `weight_file`
 * (removed again when no const needed it), blob references naming
 * blob_name (NULL: the package's). *wrote_blobs tells which. */
static mil_status write_model_files(mil_model *m, const char *model_file, const char *weight_file,
                                    const char *blob_name, const char *name, bool *wrote_blobs, mil_diag *d) {
  mil_blob_writer *bw = NULL;
  *wrote_blobs = false;
  mil_status st = mil_blob_writer_open(weight_file, MIL_BLOB_WRITE_NO_DEDUP, &bw, d);
  if (st != MIL_OK) return st;
  void *data = NULL;
  size_t len = 0;
  st = io_model_encode(m, bw, blob_name, name, &data, &len, d);
  if (st != MIL_OK) {
    mil_blob_writer_abort(bw);
    return st;
  }
  uint32_t count = mil_blob_writer_count(bw);
  st = mil_blob_writer_close(bw, d);
  if (st == MIL_OK && count == 0) remove(weight_file);
  step();
  if (st == MIL_OK) st = io_model_write_file(model_file, data, len, d);
  free(data);
  step();
  *wrote_blobs = count > 0;
  return st;
}

static mil_status save_package(mil_model *m, const char *path, mil_diag *d) {
  if (io_model_path_exists(path)) {
    if (!io_model_path_is_dir(path))
      return mil_diag_error(d, MIL_ERR_IO, "%s: exists and is not a directory; not replacing it", path);
    char *man = io_model_path_join(path, "Manifest.json");
    bool has_manifest = man && io_model_path_exists(man);
    free(man);
    if (!has_manifest && rmdir(path) != 0 && errno != ENOENT)
      return mil_diag_error(d, MIL_ERR_IO, "%s: is a non-empty directory without Manifest.json; not replacing it", path);
  }
  remove_stale_temps(path);
  char *tmp = temp_sibling(path);
  if (!tmp) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  /* what an interrupted save leaves, files before their directories */
  static const char *const layout[] = {"Data/com.apple.CoreML/weights/weight.bin", "Data/com.apple.CoreML/model.mlmodel",
                                       "Manifest.json", "Data/com.apple.CoreML/weights", "Data/com.apple.CoreML", "Data"};
  char *paths[7] = {0};
  int n = 0;
  for (; n < 6; n++)
    if (!(paths[n] = io_model_path_join(tmp, layout[n]))) break;
  paths[n++] = tmp;
  int slot = n == 7 ? io_tmp_register((const char *const *)paths, 7) : -1;
  for (int i = 0; i < n - 1; i++) free(paths[i]);
  io_package pk;
  mil_status st = io_package_create(tmp, &pk, d);
  step();
  char *wfile = st == MIL_OK ? io_model_path_join(pk.weights_dir, "weight.bin") : NULL;
  if (st == MIL_OK && !wfile) st = MIL_ERR_NOMEM;
  if (st == MIL_OK) {
    bool blobs;
    char *name = io_model_path_join(path, "Data/com.apple.CoreML/model.mlmodel");
    st = name ? write_model_files(m, pk.model_path, wfile, NULL, name, &blobs, d) : MIL_ERR_NOMEM;
    free(name);
  }
  if (st == MIL_OK) st = replace_path(tmp, path, true, d);
  if (st != MIL_OK) io_model_remove_tree(tmp);
  io_tmp_unregister(slot);
  step();
  if (pk.model_path || pk.weights_dir) io_package_close(&pk);
  free(wfile);
  free(tmp);
  return st;
}

static mil_status save_mlmodel(mil_model *m, const char *path, mil_diag *d) {
  if (io_model_path_is_dir(path)) return mil_diag_error(d, MIL_ERR_IO, "%s: is a directory; not replacing it", path);
  mil_status st = refuse_inside_package(path, d);
  if (st != MIL_OK) return st;
  char *dir = io_model_dir_of(path);
  char *wdir = dir ? io_model_path_join(dir, "weights") : NULL;
  char *stem = io_model_strdup(base_of(path));
  if (stem) stem[strlen(stem) - strlen(".mlmodel")] = 0; /* the extension is .mlmodel */
  char *wname = stem ? fresh_weight_name(stem) : NULL;
  char *wfile = wdir && wname ? io_model_path_join(wdir, wname) : NULL;
  char *blob_name = wname ? io_model_path_join("@model_path/weights", wname) : NULL;
  char *tmp = temp_sibling(path);
  if (!dir || !wdir || !stem || !wname || !wfile || !blob_name || !tmp) st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  int lock = -1;
  if (st == MIL_OK) {
    remove_stale_temps(path);
    lock = lock_weights_dir(wdir, dir, &st, d);
  }
  bool blobs = false;
  if (st == MIL_OK) {
    const char *reg[] = {tmp, wfile};
    int slot = io_tmp_register(reg, 2);
    step();
    st = write_model_files(m, tmp, wfile, blob_name, path, &blobs, d);
    /* forgotten before the rename: once the model names wfile, nothing
     * may remove it */
    io_tmp_unregister(slot);
    if (st == MIL_OK && rename(tmp, path) != 0)
      st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot move the new model into place: %s", path, strerror(errno));
    if (st != MIL_OK) {
      remove(tmp);
      remove(wfile);
    } else {
      step();
      /* the old model's weights, and those of saves that died */
      remove_weight_files(wdir, stem, blobs ? wname : NULL);
      step();
    }
  }
  if (lock >= 0) {
    if (!blobs) rmdir(wdir); /* when empty */
    close(lock);
  }
  free(dir);
  free(wdir);
  free(stem);
  free(wname);
  free(wfile);
  free(blob_name);
  free(tmp);
  return st;
}

/* .mil text with the weights in a weight file beside it ("net.mil" +
 * "net.weight.bin", mil_save_text in mil/text.h), each written to a
 * temporary sibling and renamed, the weight file first. */
static mil_status save_mil_text(mil_model *m, const char *path, mil_diag *d) {
  remove_stale_temps(path);
  step();
  return mil_save_text(m->prog, path, false, d);
}

mil_status mil_model_save(mil_model *m, const char *path_in, mil_diag *d) {
  if (!m || !m->prog) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_save: no model or program");
  if (!path_in || !path_in[0]) return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_save: empty path");
  char *path = io_model_clean_path(path_in);
  if (!path) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  const char *ext = io_model_extension(path);
  mil_status st;
  if (!strcmp(ext, "mil")) {
    st = save_mil_text(m, path, d);
  } else if (strcmp(ext, "mlpackage") && strcmp(ext, "mlmodel")) {
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: unknown model extension '%s%s' (expected .mlpackage, .mlmodel or "
                        ".mil)", path, ext[0] ? "." : "", ext);
  } else if ((st = io_model_check_opsets(m, path, d)) != MIL_OK) {
  } else if ((st = mil_model_sync_description(m, d)) != MIL_OK) {
    mil_diag_error(d, st, "%s: cannot describe the model's inputs and outputs", path);
  } else {
    st = !strcmp(ext, "mlpackage") ? save_package(m, path, d) : save_mlmodel(m, path, d);
  }
  free(path);
  return st;
}

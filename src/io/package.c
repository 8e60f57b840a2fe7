/* .mlpackage directories and their Manifest.json (formats.md section 5).
 *
 * Mirrors coremltools' modelpackage/src/ModelPackage.cpp (the manifest
 * keys, the fileFormatVersion test, the item checks) and the layout
 * coremltools.models.utils.save_spec writes:
 *
 *   X.mlpackage/Manifest.json
 *   X.mlpackage/Data/com.apple.CoreML/model.mlmodel
 *   X.mlpackage/Data/com.apple.CoreML/weights/weight.bin
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "io/model_internal.h"

#define AUTHOR "com.apple.CoreML"

void io_package_close(io_package *pk) {
  free(pk->model_path);
  free(pk->weights_dir);
  free(pk->root);
  memset(pk, 0, sizeof *pk);
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static const char *json_str(const cJSON *obj, const char *key) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* "1.0.0" -> three non-negative integers; false when malformed. */
static bool parse_version(const char *s, long v[3]) {
  for (int i = 0; i < 3; i++) {
    if (*s < '0' || *s > '9') return false;
    long x = 0;
    while (*s >= '0' && *s <= '9') {
      if (x > 100000000) return false;
      x = x * 10 + (*s++ - '0');
    }
    v[i] = x;
    if (i < 2 && *s++ != '.') return false;
  }
  return *s == 0;
}

/* An item path must stay inside Data/: relative, no "..". */
static bool safe_rel_path(const char *p) {
  if (!p[0] || p[0] == '/') return false;
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') return false;
    s += n;
    if (*s == '/') s++;
  }
  return true;
}

mil_status io_package_open(const char *pkg, io_package *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  if (!exists(pkg)) return mil_diag_error(d, MIL_ERR_IO, "%s: no such package (%s)", pkg, strerror(ENOENT));
  if (!is_dir(pkg)) return mil_diag_error(d, MIL_ERR_FORMAT, "%s: a .mlpackage must be a directory", pkg);
  /* every file the package names must resolve inside it */
  if (!(out->root = io_fs_root(pkg))) return mil_diag_error(d, MIL_ERR_IO, "%s: cannot resolve: %s", pkg, strerror(errno));
  char *mpath = io_model_path_join(pkg, "Manifest.json");
  if (!mpath) {
    io_package_close(out);
    return MIL_ERR_NOMEM;
  }
  mil_status st;
  if (!exists(mpath)) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: not a valid package: Manifest.json is missing", pkg);
    free(mpath);
    io_package_close(out);
    return st;
  }
  void *buf;
  size_t len;
  if ((st = io_model_read_file(mpath, out->root, "the manifest", &buf, &len, d)) != MIL_OK) {
    free(mpath);
    io_package_close(out);
    return st;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    size_t off = at && at >= (const char *)buf && at <= (const char *)buf + len ? (size_t)(at - (const char *)buf) : 0;
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: byte %zu: not valid JSON", mpath, off);
    goto out;
  }
  if (!cJSON_IsObject(root)) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: expected a JSON object at the top level", mpath);
    goto out;
  }
  const char *ver = json_str(root, "fileFormatVersion");
  long v[3];
  if (!ver) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: key 'fileFormatVersion' (a string) is missing", mpath);
    goto out;
  }
  if (!parse_version(ver, v)) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: fileFormatVersion '%s' is not of the form major.minor.patch", mpath, ver);
    goto out;
  }
  /* the reference rejects anything it considers newer than 1.0.0 (and, by
   * the form of its test, any x.0.p with p > 0) */
  if (v[0] > 1 || (v[0] == 1 && v[1] > 0) || (v[1] == 0 && v[2] > 0)) {
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: fileFormatVersion '%s' is not supported (expected 1.0.0)", mpath, ver);
    goto out;
  }
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(root, "itemInfoEntries");
  if (items && !cJSON_IsObject(items)) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: 'itemInfoEntries' must be an object", mpath);
    goto out;
  }
  const char *root_id = json_str(root, "rootModelIdentifier");
  if (!root_id) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: key 'rootModelIdentifier' (a string) is missing", mpath);
    goto out;
  }
  char *data_dir = io_model_path_join(pkg, "Data");
  if (!data_dir) {
    st = MIL_ERR_NOMEM;
    goto out;
  }
  const cJSON *it;
  const char *root_path = NULL, *weights_path = NULL;
  st = MIL_OK;
  cJSON_ArrayForEach(it, items) {
    static const char *const keys[] = {"path", "name", "author", "description"};
    for (int k = 0; k < 4; k++)
      if (!json_str(it, keys[k])) {
        st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: item '%s' lacks the string key '%s'", mpath, it->string, keys[k]);
        break;
      }
    if (st != MIL_OK) break;
    const char *ip = json_str(it, "path");
    if (!safe_rel_path(ip)) {
      st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: item '%s' has path '%s', which is not a relative path inside Data/",
                          mpath, it->string, ip);
      break;
    }
    char *full = io_model_path_join(data_dir, ip);
    if (!full) {
      st = MIL_ERR_NOMEM;
      break;
    }
    bool ok = exists(full);
    if (ok) st = io_fs_check_inside(full, out->root, "a package item", NULL, d);
    free(full);
    if (!ok) {
      st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: item '%s' (%s) refers to Data/%s, which does not exist", mpath,
                          it->string, json_str(it, "name"), ip);
      break;
    }
    if (st != MIL_OK) break;
    if (!strcmp(it->string, root_id)) root_path = ip;
    if (!strcmp(json_str(it, "name"), "weights") && !strcmp(json_str(it, "author"), AUTHOR)) weights_path = ip;
  }
  if (st == MIL_OK && !root_path)
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: rootModelIdentifier '%s' is not among the itemInfoEntries", mpath, root_id);
  if (st == MIL_OK) {
    out->model_path = io_model_path_join(data_dir, root_path);
    if (!out->model_path) st = MIL_ERR_NOMEM;
  }
  if (st == MIL_OK && is_dir(out->model_path))
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: the root model item Data/%s is a directory, expected a file", mpath,
                        root_path);
  if (st == MIL_OK) {
    if (weights_path) {
      out->weights_dir = io_model_path_join(data_dir, weights_path);
    } else {
      /* @model_path/weights: the weights directory next to the root model */
      char *dir = io_model_strdup(out->model_path);
      char *slash = dir ? strrchr(dir, '/') : NULL;
      if (slash) *slash = 0;
      if (dir) out->weights_dir = io_model_path_join(dir, "weights");
      free(dir);
      if (out->weights_dir && !is_dir(out->weights_dir)) {
        free(out->weights_dir);
        out->weights_dir = NULL;
      }
    }
  }
  free(data_dir);
out:
  cJSON_Delete(root);
  free(buf);
  free(mpath);
  if (st != MIL_OK) io_package_close(out);
  return st;
}

/* A random (version 4) UUID in the 36-character lowercase text form. */
static void new_uuid(char out[37]) {
  uint8_t b[16];
  ssize_t got = getrandom(b, sizeof b, 0);
  if (got != (ssize_t)sizeof b) {
    /* fall back to a time/address mix; uniqueness within a package is all that matters */
    uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)out << 16) ^ (uint64_t)getpid();
    for (int i = 0; i < 16; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b[i] = (uint8_t)x;
    }
  }
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
  static const char hex[] = "0123456789abcdef";
  int k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[k++] = '-';
    out[k++] = hex[b[i] >> 4];
    out[k++] = hex[b[i] & 15];
  }
  out[k] = 0;
}

static mil_status make_dir(const char *path, mil_diag *d) {
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot create directory: %s", path, strerror(errno));
  return MIL_OK;
}

mil_status io_package_create(const char *dir, io_package *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_status st = make_dir(dir, d);
  char *data = io_model_path_join(dir, "Data");
  char *coreml = data ? io_model_path_join(data, AUTHOR) : NULL;
  char *weights = coreml ? io_model_path_join(coreml, "weights") : NULL;
  char *model = coreml ? io_model_path_join(coreml, "model.mlmodel") : NULL;
  char *manifest = io_model_path_join(dir, "Manifest.json");
  if (!data || !coreml || !weights || !model || !manifest) st = MIL_ERR_NOMEM;
  if (st == MIL_OK) st = make_dir(data, d);
  if (st == MIL_OK) st = make_dir(coreml, d);
  if (st == MIL_OK) st = make_dir(weights, d);
  if (st == MIL_OK) {
    char model_id[37], weights_id[37];
    new_uuid(model_id);
    do new_uuid(weights_id);
    while (!strcmp(model_id, weights_id));
    /* nlohmann::json dump(4) layout: sorted keys, 4-space indent, final newline */
    const char *first = strcmp(model_id, weights_id) < 0 ? model_id : weights_id;
    const char *second = first == model_id ? weights_id : model_id;
    char text[1400];
    int n = snprintf(text, sizeof text, "{\n    \"fileFormatVersion\": \"1.0.0\",\n    \"itemInfoEntries\": {\n");
    for (int i = 0; i < 2; i++) {
      const char *id = i ? second : first;
      bool is_model = id == model_id;
      n += snprintf(text + n, sizeof text - (size_t)n,
                    "        \"%s\": {\n            \"author\": \"" AUTHOR "\",\n            \"description\": \"%s\",\n"
                    "            \"name\": \"%s\",\n            \"path\": \"" AUTHOR "/%s\"\n        }%s\n",
                    id, is_model ? "CoreML Model Specification" : "CoreML Model Weights",
                    is_model ? "model.mlmodel" : "weights", is_model ? "model.mlmodel" : "weights", i ? "" : ",");
    }
    n += snprintf(text + n, sizeof text - (size_t)n, "    },\n    \"rootModelIdentifier\": \"%s\"\n}\n", model_id);
    st = io_model_write_file(manifest, text, (size_t)n, d);
  }
  if (st == MIL_OK) {
    out->model_path = model;
    out->weights_dir = weights;
    model = weights = NULL;
  }
  free(data);
  free(coreml);
  free(weights);
  free(model);
  free(manifest);
  return st;
}

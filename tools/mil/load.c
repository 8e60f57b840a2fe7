/* Loading any model the CLI accepts, and the checks `mil validate` runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/convert.h"
#include "mil/ops.h"
#include "mil/blob.h"

mil_status cli_load_model(const char *path, mil_model **out, mil_diag *d) {
  size_t n = strlen(path);
  /* an ONNX model is converted as `mil convert` does (fp16 precision) */
  bool onnx = n > 5 && strcmp(path + n - 5, ".onnx") == 0;
  if (!onnx) return mil_model_load(path, out, d);
  /* at the default target (iOS15); a model whose quantized weights need
   * iOS18's blockwise layout (MatMulNBits, blocked DequantizeLinear) is
   * converted for iOS18 instead, so that `mil run` / `mil verify` take it */
  mil_diag first;
  mil_diag_init(&first);
  mil_status st = mil_convert(path, NULL, out, &first);
  bool retry = false;
  for (size_t i = 0; st != MIL_OK && i < first.count; i++)
    if (first.msgs[i].severity == MIL_SEV_ERROR && strstr(first.msgs[i].text, "--target iOS18")) retry = true;
  if (retry) {
    mil_diag_clear(&first);
    mil_convert_options o = {.target = MIL_IOS18};
    mil_diag_add(d, MIL_SEV_NOTE, "%s: converted with --target iOS18 (its quantized weights need it)", path);
    return mil_convert(path, &o, out, d);
  }
  for (size_t i = 0; i < first.count; i++) mil_diag_add(d, first.msgs[i].severity, "%s", first.msgs[i].text);
  mil_diag_clear(&first);
  return st;
}

mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_model *m = NULL;
  mil_status st = cli_load_model(path, &m, d);
  if (st != MIL_OK) return st;
  out->model = m;
  out->program = mil_model_program(m);
  return MIL_OK;
}

mil_status cli_load_any(const char *path, cli_loaded *out, mil_diag *d) {
  size_t n = strlen(path);
  if (n > 4 && strcmp(path + n - 4, ".mil") == 0) {
    memset(out, 0, sizeof *out);
    return mil_parse_file(path, &out->program, d);
  }
  return cli_load(path, out, d);
}

void cli_unload(cli_loaded *m) {
  if (m->model) mil_model_free(m->model);
  else mil_program_free(m->program);
  memset(m, 0, sizeof *m);
}

mil_status cli_validate_program(const mil_program *p, mil_diag *d) { return mil_program_validate(p, d); }

/* The file a const's blob_file names: "@model_path/<rel>" is one of the
 * model's weight files (the one whose path ends in "/<rel>"); any other
 * relative name is relative to the directory of the file loaded. */
static char *resolve_blob(cli_blob_paths *b, const char *name) {
  char *cand = NULL;
  if (!strncmp(name, "@model_path/", 12)) {
    const char *rel = name + 12;
    size_t rn = strlen(rel);
    for (int32_t i = 0; b->m->model && i < mil_model_n_weight_files(b->m->model); i++) {
      const char *wp = mil_blob_file_path(mil_model_weight_file(b->m->model, i));
      size_t wn = wp ? strlen(wp) : 0;
      if (wn > rn && !strcmp(wp + wn - rn, rel) && wp[wn - rn - 1] == '/') {
        cand = strdup(wp);
        break;
      }
    }
  } else if (name[0] == '/') {
    cand = strdup(name);
  } else {
    const char *slash = strrchr(b->model_path, '/');
    size_t dn = slash ? (size_t)(slash - b->model_path) + 1 : 0;
    cand = malloc(dn + strlen(name) + 1);
    if (cand) {
      memcpy(cand, b->model_path, dn);
      strcpy(cand + dn, name);
    }
  }
  if (!cand) return NULL;
  char *abs = realpath(cand, NULL);
  free(cand);
  return abs;
}

const char *cli_blob_abs_ref(void *ud, const mil_value *v, uint64_t *offset) {
  cli_blob_paths *b = ud;
  if (!v->blob_file) return NULL;
  int i = 0;
  while (i < b->n && b->keys[i] != v->blob_file && strcmp(b->keys[i], v->blob_file)) i++;
  if (i == b->n) {
    if (b->n == 16) return NULL; /* more weight files than any model has: print the values */
    b->keys[b->n] = v->blob_file;
    b->vals[b->n++] = resolve_blob(b, v->blob_file);
  }
  *offset = v->blob_offset;
  return b->vals[i];
}

void cli_blob_paths_free(cli_blob_paths *b) {
  for (int i = 0; i < b->n; i++) free(b->vals[i]);
  b->n = 0;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  while (n > 1 && s[n - 1] == '/') n--;
  return n >= m && strncmp(s + n - m, suffix, m) == 0;
}

bool cli_output_format_ok(const char *path, bool allow_stdout) {
  if (allow_stdout && strcmp(path, "-") == 0) return true;
  return ends_with(path, ".mil") || ends_with(path, ".mlmodel") || ends_with(path, ".mlpackage");
}

mil_status cli_write_output(const char *out, const char *in_path, cli_loaded *m, bool inline_weights, mil_diag *d) {
  if (strcmp(out, "-") == 0) {
    mil_print_options po = {MIL_PRINT_COMPLETE, false};
    cli_blob_paths bp = {.model_path = in_path, .m = m};
    mil_print_extra x = {NULL, inline_weights ? NULL : cli_blob_abs_ref, &bp};
    mil_status st = mil_print_program_file_with(m->program, &po, &x, stdout);
    cli_blob_paths_free(&bp);
    if (st == MIL_OK && fflush(stdout) != 0) st = MIL_ERR_IO;
    if (st != MIL_OK) mil_diag_error(d, st, "writing to standard output failed");
    return st;
  }
  /* .mil needs no model: any program prints, whatever its opset or I/O types */
  if (ends_with(out, ".mil")) return mil_save_text(m->program, out, inline_weights, d);
  if (!ends_with(out, ".mlmodel") && !ends_with(out, ".mlpackage"))
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: unknown output format (use .mil, .mlmodel, .mlpackage or -)",
                          out);
  if (m->model) return mil_model_save(m->model, out, d);
  /* a program without a model around it: synthesize the description */
  mil_model *nm = NULL;
  mil_status st = mil_model_from_program(m->program, 0, &nm, d);
  m->program = NULL; /* owned by nm now (also on failure) */
  if (st == MIL_OK) st = mil_model_save(nm, out, d);
  m->model = nm;
  if (nm) m->program = mil_model_program(nm);
  return st;
}

/* "line:col" of the op named `op` in the .mil text (the first non-blank of
 * the line holding name="op"), or 0 when not found. */
static int locate_op(const char *text, const char *op, int *line, int *col) {
  size_t n = strlen(op);
  char *pat = malloc(n + 10);
  if (!pat) return 0;
  snprintf(pat, n + 10, "name=\"%s\")", op);
  const char *hit = strstr(text, pat);
  free(pat);
  if (!hit) return 0;
  const char *bol = hit;
  while (bol > text && bol[-1] != '\n') bol--;
  *line = 1;
  for (const char *q = text; q < bol; q++) *line += *q == '\n';
  const char *s = bol;
  while (*s == ' ' || *s == '\t') s++;
  *col = (int)(s - bol) + 1;
  return 1;
}

void cli_diag_locate(mil_diag *d, size_t from, const char *path) {
  size_t pn = strlen(path);
  bool text = pn > 4 && !strcmp(path + pn - 4, ".mil");
  char *src = NULL;
  if (text) {
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0) {
      long len = ftell(f);
      if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (src = malloc((size_t)len + 1))) {
        size_t got = fread(src, 1, (size_t)len, f);
        src[got] = 0;
      }
    }
    if (f) fclose(f);
  }
  for (size_t i = from; i < d->count; i++) {
    char *t = d->msgs[i].text;
    if (!strncmp(t, path, pn) && t[pn] == ':') continue; /* already names the file */
    int line = 0, col = 0;
    const char *op = strstr(t, "op '");
    if (src && op) {
      const char *e = strchr(op + 4, '\'');
      char *name = e ? strndup(op + 4, (size_t)(e - op - 4)) : NULL;
      if (name && !locate_op(src, name, &line, &col)) line = 0;
      free(name);
    }
    size_t need = pn + strlen(t) + 32;
    char *nt = malloc(need);
    if (!nt) continue;
    if (line) snprintf(nt, need, "%s:%d:%d: %s", path, line, col, t);
    else snprintf(nt, need, "%s: %s", path, t);
    free(t);
    d->msgs[i].text = nt;
  }
  free(src);
}

int cli_parse_target(const char *cmd, const char *name, int *version) {
  for (int v = MIL_IOS15; v <= MIL_IOS26; v++)
    if (name && !strcmp(name, mil_opset_target_name(v))) {
      *version = v;
      return CLI_OK;
    }
  return cli_usage_error(cmd, "--target must be one of iOS15, iOS16, iOS17, iOS18, iOS26, got '%s'",
                         name ? name : "");
}

/* The renamed inputs and outputs an ONNX import records in the model's
 * metadata (MIL_ONNX_NAMES_KEY: {"inputs": {MIL: ONNX}, "outputs": {...}}),
 * read back for the CLI and the bindings: a small reader for exactly that
 * shape of JSON (strings with \" \\ \/ \b \f \n \r \t \uXXXX escapes). */
#include <stdlib.h>
#include <string.h>

#include "mil/onnx.h"

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

static void put_utf8(char **o, unsigned cp) {
  if (cp < 0x80) *(*o)++ = (char)cp;
  else if (cp < 0x800) {
    *(*o)++ = (char)(0xC0 | (cp >> 6));
    *(*o)++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *(*o)++ = (char)(0xE0 | (cp >> 12));
    *(*o)++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *(*o)++ = (char)(0x80 | (cp & 0x3F));
  }
}

/* A JSON string at *p (after spaces) decoded into a malloc'd buffer;
 * NULL when malformed. */
static char *str(const char **pp) {
  const char *p = ws(*pp);
  if (*p != '"') return NULL;
  p++;
  char *out = malloc(strlen(p) * 3 + 1), *o = out;
  if (!out) return NULL;
  while (*p && *p != '"') {
    if (*p != '\\') {
      *o++ = *p++;
      continue;
    }
    p++;
    char e = *p ? *p++ : 0;
    const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
    const char *m = e ? strchr(map, e) : NULL;
    if (e == 'u') {
      unsigned cp = 0;
      for (int k = 0; k < 4; k++, p++) {
        char h = *p;
        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (v < 0) {
          free(out);
          return NULL;
        }
        cp = cp * 16 + (unsigned)v;
      }
      put_utf8(&o, cp);
    } else if (m && (m - map) % 2 == 0)
      *o++ = m[1];
    else {
      free(out);
      return NULL;
    }
  }
  if (*p != '"') {
    free(out);
    return NULL;
  }
  *o = 0;
  *pp = p + 1;
  return out;
}

int32_t mil_onnx_renames(mil_model *m, mil_onnx_rename_fn fn, void *ud) {
  const char *js = m ? mil_model_metadata(m, MIL_ONNX_NAMES_KEY) : NULL;
  if (!js) return 0;
  const char *p = ws(js);
  if (*p++ != '{') return -1;
  int32_t count = 0;
  for (;;) {
    p = ws(p);
    if (*p == '}') return count;
    char *section = str(&p);
    if (!section) return -1;
    bool is_out = !strcmp(section, "outputs");
    free(section);
    p = ws(p);
    if (*p++ != ':') return -1;
    p = ws(p);
    if (*p++ != '{') return -1;
    for (;;) {
      p = ws(p);
      if (*p == '}') {
        p++;
        break;
      }
      char *mil = str(&p);
      p = ws(p);
      char *onnx = mil && *p == ':' ? (p++, str(&p)) : NULL;
      if (!onnx) {
        free(mil);
        return -1;
      }
      if (fn) fn(ud, is_out, mil, onnx);
      count++;
      free(mil);
      free(onnx);
      p = ws(p);
      if (*p == ',') p++;
    }
    p = ws(p);
    if (*p == ',') p++;
  }
}

typedef struct find_ud {
  const char *want;
  bool output;
  char *found;
} find_ud;

static void find_cb(void *ud, bool is_output, const char *mil_name, const char *onnx_name) {
  find_ud *f = ud;
  if (!f->found && is_output == f->output && !strcmp(onnx_name, f->want)) f->found = strdup(mil_name);
}

char *mil_onnx_model_name(mil_model *m, bool output, const char *onnx_name) {
  find_ud f = {onnx_name, output, NULL};
  if (!onnx_name) return NULL;
  (void)mil_onnx_renames(m, find_cb, &f);
  return f.found;
}

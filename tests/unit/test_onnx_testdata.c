/* Every TensorProto .pb of ONNX's own backend tests (Debian's
 * libonnx-testdata, /usr/share/libonnx-testdata/data/{node,simple,
 * pytorch-converted,pytorch-operator}/<test>/test_data_set_N/) reads, and
 * written back and read again holds bit-identical elements (NaN payloads
 * included), in raw_data and in the typed fields. Which files are tensors is
 * what the test's model.onnx declares for that input or output (the others
 * are SequenceProto / OptionalProto). Prints the count per DataType.
 * Exits 77 (SKIPPED) when the package is not installed; MIL_ONNX_TESTDATA
 * overrides the directory. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mil/onnx_tensor.h"
#include "onnx.pb-c.h"

#define SKIP 77

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
  if (b && sz > 0 && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *n = sz > 0 ? (size_t)sz : 0;
  return b;
}

static int64_t g_count[MIL_ONNX_DTYPE_MAX + 1], g_tensors, g_other, g_failed, g_narrow_refused;

static bool same_elements(const mil_onnx_tensor *a, const mil_onnx_tensor *b) {
  if (a->onnx_type != b->onnx_type || a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  if (a->dtype == MIL_DT_STRING) {
    for (int64_t i = 0; i < a->numel; i++)
      if (strcmp(((const char *const *)a->data)[i], ((const char *const *)b->data)[i]) != 0) return false;
    return true;
  }
  return a->nbytes == b->nbytes && (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

static void fail(const char *path, const char *what, const mil_diag *d) {
  g_failed++;
  fprintf(stderr, "FAIL %s: %s%s%s\n", path, what, d && mil_diag_first_error(d) ? ": " : "",
          d && mil_diag_first_error(d) ? mil_diag_first_error(d) : "");
}

/* One .pb declared a tensor. */
static void check_tensor(const char *path) {
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts exact = {MIL_ONNX_DIALECT_AUTO, MIL_ONNX_EXACT, NULL};
  mil_onnx_tensor *t = NULL;
  if (mil_onnx_tensor_read(path, &exact, &t, &d) != MIL_OK) {
    fail(path, "read", &d);
    mil_diag_clear(&d);
    return;
  }
  g_tensors++;
  g_count[t->onnx_type]++;
  if (t->dialect != MIL_ONNX_DIALECT_ONNX) fail(path, "not read as the ONNX dialect", NULL);
  for (int enc = MIL_ONNX_ENC_RAW; enc <= MIL_ONNX_ENC_TYPED; enc++) {
    mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, (mil_onnx_encoding)enc, t->onnx_type, t->name, NULL};
    void *buf = NULL;
    size_t len = 0;
    mil_onnx_tensor *back = NULL;
    if (mil_onnx_tensor_encode(t->dtype, t->rank, t->shape, t->data, &wo, &buf, &len, &d) != MIL_OK) {
      fail(path, "write back", &d);
    } else if (mil_onnx_tensor_read_mem(buf, len, path, &exact, &back, &d) != MIL_OK) {
      fail(path, "read the written tensor", &d);
    } else if (!same_elements(t, back) || strcmp(t->name, back->name) != 0) {
      fail(path, enc == MIL_ONNX_ENC_RAW ? "raw_data round trip differs" : "typed round trip differs", NULL);
    }
    mil_onnx_tensor_free(back);
    free(buf);
  }
  mil_onnx_tensor_free(t);
  /* the default (coremltools') narrowing reads it too, or refuses a value that does not fit */
  mil_diag_clear(&d);
  mil_onnx_tensor *n = NULL;
  mil_status st = mil_onnx_tensor_read(path, NULL, &n, &d);
  if (st == MIL_ERR_UNSUPPORTED) g_narrow_refused++;
  else if (st != MIL_OK) fail(path, "narrowing read", &d);
  mil_onnx_tensor_free(n);
  mil_diag_clear(&d);
}

/* The declared types of a model's graph inputs that are not initializers,
 * and of its outputs; true for a tensor type. */
typedef struct decl {
  int n_in, n_out;
  bool in_tensor[256], out_tensor[256];
} decl;

static bool read_decl(const char *model, decl *dc) {
  size_t n;
  uint8_t *b = slurp(model, &n);
  if (!b) return false;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, b);
  free(b);
  if (!m || !m->graph) {
    if (m) onnx__model_proto__free_unpacked(m, NULL);
    return false;
  }
  const Onnx__GraphProto *g = m->graph;
  dc->n_in = dc->n_out = 0;
  for (size_t i = 0; i < g->n_input && dc->n_in < 256; i++) {
    bool init = false;
    for (size_t k = 0; k < g->n_initializer && !init; k++)
      init = g->initializer[k]->name && g->input[i]->name && !strcmp(g->initializer[k]->name, g->input[i]->name);
    if (init) continue;
    const Onnx__TypeProto *tp = g->input[i]->type;
    dc->in_tensor[dc->n_in++] = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  }
  for (size_t i = 0; i < g->n_output && dc->n_out < 256; i++) {
    const Onnx__TypeProto *tp = g->output[i]->type;
    dc->out_tensor[dc->n_out++] = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  }
  onnx__model_proto__free_unpacked(m, NULL);
  return true;
}

static void walk_test(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  decl dc;
  if (!read_decl(path, &dc)) return; /* no model (e.g. "real" tests that download theirs) */
  DIR *dd = opendir(dir);
  if (!dd) return;
  struct dirent *e;
  while ((e = readdir(dd))) {
    if (strncmp(e->d_name, "test_data_set_", 14) != 0) continue;
    char set[2048];
    snprintf(set, sizeof set, "%s/%s", dir, e->d_name);
    DIR *sd = opendir(set);
    if (!sd) continue;
    struct dirent *f;
    while ((f = readdir(sd))) {
      int idx;
      bool is_in = sscanf(f->d_name, "input_%d.pb", &idx) == 1, is_out = sscanf(f->d_name, "output_%d.pb", &idx) == 1;
      if (!is_in && !is_out) continue;
      snprintf(path, sizeof path, "%s/%s", set, f->d_name);
      bool tensor = is_in ? (idx < dc.n_in && dc.in_tensor[idx]) : (idx < dc.n_out && dc.out_tensor[idx]);
      if (tensor) check_tensor(path);
      else g_other++;
    }
    closedir(sd);
  }
  closedir(dd);
}

int main(void) {
  const char *root = getenv("MIL_ONNX_TESTDATA");
  if (!root) root = "/usr/share/libonnx-testdata/data";
  struct stat sb;
  if (stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    printf("SKIPPED: %s not found (apt-get install libonnx-testdata)\n", root);
    return SKIP;
  }
  const char *groups[] = {"node", "simple", "pytorch-converted", "pytorch-operator", "real"};
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    char gd[512];
    snprintf(gd, sizeof gd, "%s/%s", root, groups[g]);
    DIR *dd = opendir(gd);
    if (!dd) continue;
    struct dirent *e;
    while ((e = readdir(dd))) {
      if (e->d_name[0] == '.') continue;
      char td[1024];
      snprintf(td, sizeof td, "%s/%s", gd, e->d_name);
      walk_test(td);
    }
    closedir(dd);
  }
  printf("TensorProto files read, written back (raw_data and typed) and read again: %" PRId64 "\n", g_tensors);
  for (int t = 1; t <= MIL_ONNX_DTYPE_MAX; t++)
    if (g_count[t]) printf("  %-16s %6" PRId64 "\n", mil_onnx_dtype_name(t), g_count[t]);
  printf("files declared as sequences / optionals (not tensors): %" PRId64 "\n", g_other);
  printf("refused by the default narrowing (a value outside int32 / fp32): %" PRId64 "\n", g_narrow_refused);
  printf("failures: %" PRId64 "\n", g_failed);
  if (g_tensors == 0) {
    printf("no TensorProto found under %s\n", root);
    return 1;
  }
  return g_failed ? 1 : 0;
}

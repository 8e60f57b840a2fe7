/* Fuzz target: a .mlpackage built in a temporary directory from the input.
 *
 * Layout of the input: u16 manifest length M, u16 model length P (both
 * little-endian), then M bytes of Manifest.json, P bytes of model.mlmodel,
 * and the rest as weights/weight.bin. M == 0 means "use a valid manifest"
 * and P == 0 "use a valid model" (one const with 16 fp32 values in
 * weight.bin at offset 64), so the fuzzer can work on one part at a time.
 * The package is loaded with mil_model_load; a loaded model is saved to a
 * second package and reloaded. Any crash, sanitizer report or hang is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mil/mil.h"
#include "mil/model.h"

static char g_dir[256], g_pkg[320], g_out[320];
static uint8_t *g_model, *g_weights;
static size_t g_model_len, g_weights_len;

static const char k_manifest[] =
    "{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {"
    "\"a\": {\"author\": \"com.apple.CoreML\", \"description\": \"CoreML Model Specification\", "
    "\"name\": \"model.mlmodel\", \"path\": \"com.apple.CoreML/model.mlmodel\"}, "
    "\"b\": {\"author\": \"com.apple.CoreML\", \"description\": \"CoreML Model Weights\", "
    "\"name\": \"weights\", \"path\": \"com.apple.CoreML/weights\"}}, \"rootModelIdentifier\": \"a\"}";

static void put(const char *rel, const void *data, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_pkg, rel);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (n && fwrite(data, 1, n, f) != n) abort();
  fclose(f);
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) abort();
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) abort();
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* A valid package whose model and weight file serve as defaults. */
static void build_default(void) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t s[2] = {4, 4};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, 2, s));
  mil_block *b = mil_function_body(f);
  mil_value *v = mil_value_new_tensor(p, MIL_DT_FP32, 2, s, false, NULL);
  for (int i = 0; i < 16; i++) mil_value_set_f64(v, i, i);
  mil_op *c = mil_const_new(p, "w", v);
  mil_block_append(b, c);
  mil_op *add = mil_op_new(p, "add", "y");
  mil_op_add_input(add, "x", x);
  mil_op_add_input(add, "y", c->outputs[0]);
  mil_var *y = mil_op_add_output(add, "y", x->type);
  mil_block_append(b, add);
  mil_block_set_outputs(b, 1, &y);
  mil_model *m = NULL;
  mil_diag d = {0};
  char tmp[400];
  snprintf(tmp, sizeof tmp, "%s/default.mlpackage", g_dir);
  if (mil_model_from_program(p, 0, &m, &d) != MIL_OK || mil_model_save(m, tmp, &d) != MIL_OK) abort();
  mil_model_free(m);
  mil_diag_clear(&d);
  char path[512];
  snprintf(path, sizeof path, "%s/Data/com.apple.CoreML/model.mlmodel", tmp);
  g_model = slurp(path, &g_model_len);
  snprintf(path, sizeof path, "%s/Data/com.apple.CoreML/weights/weight.bin", tmp);
  g_weights = slurp(path, &g_weights_len);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *t = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/milfuzzpkgXXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_dir)) abort();
  snprintf(g_pkg, sizeof g_pkg, "%s/in.mlpackage", g_dir);
  snprintf(g_out, sizeof g_out, "%s/out.mlpackage", g_dir);
  char path[512];
  mkdir(g_pkg, 0777);
  snprintf(path, sizeof path, "%s/Data", g_pkg);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/Data/com.apple.CoreML", g_pkg);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/Data/com.apple.CoreML/weights", g_pkg);
  mkdir(path, 0777);
  build_default();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  size_t mlen = (size_t)data[0] | (size_t)data[1] << 8;
  size_t plen = (size_t)data[2] | (size_t)data[3] << 8;
  const uint8_t *rest = data + 4;
  size_t left = size - 4;
  if (mlen > left) mlen = left;
  const uint8_t *man = rest;
  rest += mlen, left -= mlen;
  if (plen > left) plen = left;
  const uint8_t *model = rest;
  rest += plen, left -= plen;
  if (mlen) put("Manifest.json", man, mlen);
  else put("Manifest.json", k_manifest, sizeof k_manifest - 1);
  if (plen) put("Data/com.apple.CoreML/model.mlmodel", model, plen);
  else put("Data/com.apple.CoreML/model.mlmodel", g_model, g_model_len);
  if (left) put("Data/com.apple.CoreML/weights/weight.bin", rest, left);
  else put("Data/com.apple.CoreML/weights/weight.bin", g_weights, g_weights_len);
  mil_model *m = NULL;
  mil_diag d = {0};
  if (mil_model_load(g_pkg, &m, &d) == MIL_OK) {
    mil_diag d2 = {0};
    if (mil_model_save(m, g_out, &d2) == MIL_OK) {
      mil_model *again = NULL;
      if (mil_model_load(g_out, &again, &d2) != MIL_OK) {
        fprintf(stderr, "reload failed: %s\n", mil_diag_first_error(&d2));
        abort();
      }
      mil_model_free(again);
    }
    mil_diag_clear(&d2);
    mil_model_free(m);
  }
  mil_diag_clear(&d);
  return 0;
}

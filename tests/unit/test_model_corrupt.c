/* Damaged models: every defect is reported with the file, the offset or
 * field, what was expected and what was found, and nothing crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "Model.pb-c.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "unit/model_testutil.h"

static char *g_dir;  /* scratch directory */
static char *g_good; /* a valid package inside it */

/* A small valid package: input x (4, 4) fp32, one 16-element fp32 const
 * (stored in weight.bin at offset 64), an op adding them. */
static int setup(void **state) {
  (void)state;
  g_dir = mt_tempdir();
  g_good = mt_path(g_dir, "good.mlpackage");
  int64_t s[2] = {4, 4};
  float w[16];
  for (int i = 0; i < 16; i++) w[i] = (float)i;
  mil_program *p = mt_add_const_program("w", 2, s, w);
  mil_model *m = NULL;
  mil_diag d = {0};
  if (mil_model_from_program(p, 0, &m, &d) != MIL_OK || mil_model_save(m, g_good, &d) != MIL_OK) return -1;
  mil_model_free(m);
  mil_diag_clear(&d);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  mt_rm_rf(g_dir);
  free(g_good);
  free(g_dir);
  return 0;
}

/* A fresh copy of the good package; caller frees the path. */
static char *copy_good(const char *name) {
  char *dst = mt_path(g_dir, name);
  mt_rm_rf(dst);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", g_good, dst);
  assert_int_equal(system(cmd), 0);
  return dst;
}

/* Loads path, expects status st and a first error containing each needle. */
static void expect_error(const char *path, mil_status st, const char *const *needles) {
  mil_model *m = NULL;
  mil_diag d = {0};
  mil_status got = mil_model_load(path, &m, &d);
  /* all messages, in order: the first says what broke, later ones add context */
  static char msg[8192];
  msg[0] = 0;
  for (size_t i = 0; i < d.count; i++) {
    strncat(msg, d.msgs[i].text, sizeof msg - strlen(msg) - 2);
    strncat(msg, "\n", sizeof msg - strlen(msg) - 1);
  }
  if (getenv("MIL_TEST_VERBOSE")) fprintf(stderr, "%s", msg);
  if (got != st || !d.count) fail_msg("%s: status %d (want %d), message: %s", path, got, st, d.count ? msg : "(none)");
  for (; *needles; needles++)
    if (!strstr(msg, *needles)) fail_msg("messages lack '%s': %s", *needles, msg);
  assert_null(m);
  mil_diag_clear(&d);
}

#define NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})

static void expect_proto_error(const void *bytes, size_t n, mil_status st, const char *const *needles) {
  char *p = mt_path(g_dir, "raw.mlmodel");
  assert_true(mt_write(p, bytes, n));
  expect_error(p, st, needles);
  free(p);
}

static char *model_file(const char *pkg) { return mt_path(pkg, "Data/com.apple.CoreML/model.mlmodel"); }
static char *weight_file(const char *pkg) { return mt_path(pkg, "Data/com.apple.CoreML/weights/weight.bin"); }

/* Rewrites the package's model protobuf through fn. */
static void edit_model(const char *pkg, void (*fn)(Coreml__Model *)) {
  char *mf = model_file(pkg);
  size_t n;
  unsigned char *buf = mt_read(mf, &n);
  Coreml__Model *m = coreml__model__unpack(NULL, n, buf);
  assert_non_null(m);
  fn(m);
  size_t k = coreml__model__get_packed_size(m);
  unsigned char *out = malloc(k);
  coreml__model__pack(m, out);
  assert_true(mt_write(mf, out, k));
  coreml__model__free_unpacked(m, NULL);
  free(out);
  free(buf);
  free(mf);
}

/* ------------------------------------------------------------------------ */
/* protobuf                                                                   */
/* ------------------------------------------------------------------------ */

static void test_truncated_protobuf(void **state) {
  (void)state;
  char *pkg = copy_good("trunc.mlpackage");
  char *mf = model_file(pkg);
  size_t n;
  unsigned char *buf = mt_read(mf, &n);
  assert_true(mt_write(mf, buf, n / 2));
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("model.mlmodel: byte ", "remain"));
  free(buf), free(mf), free(pkg);
}

static void test_wire_errors(void **state) {
  (void)state;
  /* specificationVersion (field 1, a varint) sent length-delimited */
  static const uint8_t wrong_wt[] = {0x0a, 0x01, 0x07};
  expect_proto_error(wrong_wt, sizeof wrong_wt, MIL_ERR_FORMAT,
                     NEEDLES("raw.mlmodel: byte 0", "specificationVersion", "wire type 2", "expected 0"));
  /* a nested field with the wrong wire type reports the path to it:
   * Model.mlProgram { Program.version as fixed64 } */
  static const uint8_t nested[] = {0x08, 0x07, 0xb2, 0x1f, 0x09, 0x09, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_proto_error(nested, sizeof nested, MIL_ERR_FORMAT, NEEDLES("byte 5", "mlProgram(502)", "'version'", "wire type 1"));
  /* an over-long varint */
  static const uint8_t overlong[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  expect_proto_error(overlong, sizeof overlong, MIL_ERR_FORMAT, NEEDLES("byte 1", "over-long"));
  /* a group (wire type 3) */
  static const uint8_t group[] = {0x0b, 0x0c};
  expect_proto_error(group, sizeof group, MIL_ERR_FORMAT, NEEDLES("wire type 3"));
  /* a length running past the end */
  static const uint8_t past[] = {0x12, 0x40, 0x0a};
  expect_proto_error(past, sizeof past, MIL_ERR_FORMAT, NEEDLES("'description' (2) declares 64 bytes but only 1 remain"));
  /* packed floats that are not a whole number of elements, deep inside a value */
  /* messages nested past the limit: Model.pipeline.models[0].pipeline... */
  size_t cap = 4096, len = 0;
  uint8_t *deep = malloc(cap), *tmp = malloc(cap);
  for (int i = 0; i < 150; i++) {
    for (int k = 0; k < 2; k++) {
      /* wrap: k == 0 Pipeline.models (field 1), k == 1 Model.pipeline (field 202) */
      size_t h = 0;
      if (k == 0) tmp[h++] = 0x0a;
      else tmp[h++] = 0xd2, tmp[h++] = 0x0c;
      size_t l = len;
      do {
        tmp[h++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
        l >>= 7;
      } while (l);
      memcpy(tmp + h, deep, len);
      len += h;
      memcpy(deep, tmp, len);
    }
  }
  expect_proto_error(deep, len, MIL_ERR_FORMAT, NEEDLES("nested deeper than"));
  free(deep), free(tmp);
}

static void test_not_an_ml_program(void **state) {
  (void)state;
  static const uint8_t nn[] = {0x08, 0x04, 0xa2, 0x1f, 0x00}; /* neuralNetwork = 500 */
  expect_proto_error(nn, sizeof nn, MIL_ERR_UNSUPPORTED, NEEDLES("not an ML Program model (it is a neuralNetwork model)"));
  static const uint8_t pipe[] = {0x08, 0x04, 0xd2, 0x0c, 0x00}; /* pipeline = 202 */
  expect_proto_error(pipe, sizeof pipe, MIL_ERR_UNSUPPORTED, NEEDLES("(it is a pipeline model)"));
  static const uint8_t glm[] = {0x08, 0x01, 0xe2, 0x12, 0x00}; /* glmRegressor = 300 */
  expect_proto_error(glm, sizeof glm, MIL_ERR_UNSUPPORTED, NEEDLES("(it is a glmRegressor model)"));
  expect_proto_error("", 0, MIL_ERR_UNSUPPORTED, NEEDLES("not an ML Program model", "empty"));
}

/* Replaces a protobuf-c string (each is its own malloc block). */
static void repl(char **slot, const char *s) {
  if (*slot != protobuf_c_empty_string) free(*slot);
  *slot = strdup(s);
}

static void set_spec_11(Coreml__Model *m) { m->specificationversion = 11; }
static void set_spec_5(Coreml__Model *m) { m->specificationversion = 5; }
static void set_prog_version(Coreml__Model *m) { m->mlprogram->version = 2; }
static void set_bad_opset(Coreml__Model *m) {
  Milproto__Function *f = m->mlprogram->functions[0]->value;
  repl(&f->opset, "CoreML99");
}
static void set_unknown_binding(Coreml__Model *m) {
  Milproto__Block *b = m->mlprogram->functions[0]->value->block_specializations[0]->value;
  Milproto__Operation *add = b->operations[b->n_operations - 1];
  repl(&add->inputs[0]->value->arguments[0]->name, "nope");
}
static void set_unknown_output(Coreml__Model *m) {
  Milproto__Block *b = m->mlprogram->functions[0]->value->block_specializations[0]->value;
  repl(&b->outputs[0], "ghost");
}
static void set_rank_mismatch(Coreml__Model *m) {
  Milproto__Function *f = m->mlprogram->functions[0]->value;
  f->inputs[0]->type->tensortype->rank = 3;
}
static void set_docstring(Coreml__Model *m) {
  Milproto__Block *b = m->mlprogram->functions[0]->value->block_specializations[0]->value;
  for (size_t i = 0; i < b->operations[0]->n_attributes; i++)
    if (!strcmp(b->operations[0]->attributes[i]->key, "val")) repl(&b->operations[0]->attributes[i]->value->docstring, "hi");
}
static void set_const_dims(Coreml__Model *m) {
  /* the const's value type says 5 x 4: 20 elements, the blob holds 16 */
  Milproto__Block *b = m->mlprogram->functions[0]->value->block_specializations[0]->value;
  Milproto__Operation *c = b->operations[0];
  for (size_t i = 0; i < c->n_attributes; i++)
    if (!strcmp(c->attributes[i]->key, "val")) c->attributes[i]->value->type->tensortype->dimensions[0]->constant->size = 5;
  c->outputs[0]->type->tensortype->dimensions[0]->constant->size = 5;
}
static void set_const_dtype(Coreml__Model *m) {
  Milproto__Block *b = m->mlprogram->functions[0]->value->block_specializations[0]->value;
  Milproto__Operation *c = b->operations[0];
  for (size_t i = 0; i < c->n_attributes; i++)
    if (!strcmp(c->attributes[i]->key, "val")) c->attributes[i]->value->type->tensortype->datatype = MILPROTO__DATA_TYPE__FLOAT16;
  c->outputs[0]->type->tensortype->datatype = MILPROTO__DATA_TYPE__FLOAT16;
}
static void set_desc_bad_name(Coreml__Model *m) { repl(&m->description->input[0]->name, "not_an_input"); }
static void set_desc_int8(Coreml__Model *m) {
  m->description->input[0]->type->multiarraytype->datatype = COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8;
}

static void test_program_errors(void **state) {
  (void)state;
  struct {
    void (*fn)(Coreml__Model *);
    mil_status st;
    const char *const *needles;
  } cases[] = {
      {set_spec_11, MIL_ERR_UNSUPPORTED, NEEDLES("model.mlmodel", "specificationVersion is 11")},
      {set_spec_5, MIL_ERR_FORMAT, NEEDLES("specificationVersion is 5", "at least 6")},
      {set_prog_version, MIL_ERR_FORMAT, NEEDLES("Program.version is 2, expected 1")},
      {set_bad_opset, MIL_ERR_FORMAT, NEEDLES("opset 'CoreML99' has no entry in block_specializations")},
      {set_unknown_binding, MIL_ERR_FORMAT, NEEDLES("op 'y' (add)", "input 'x'", "refers to 'nope'")},
      {set_unknown_output, MIL_ERR_FORMAT, NEEDLES("block output 0 names 'ghost'")},
      {set_rank_mismatch, MIL_ERR_FORMAT, NEEDLES("input 'x'", "rank is 3 but 2 dimensions")},
      {set_docstring, MIL_ERR_UNSUPPORTED, NEEDLES("op 'w' (const)", "docString")},
      {set_const_dims, MIL_ERR_FORMAT, NEEDLES("op 'w' (const)", "weight.bin", "offset 64", "expected 80")},
      {set_const_dtype, MIL_ERR_FORMAT, NEEDLES("weight.bin: blob at offset 64: data type 2 (fp32), expected 1 (fp16)")},
      {set_desc_bad_name, MIL_ERR_FORMAT, NEEDLES("model description", "'not_an_input' is not an input")},
      {set_desc_int8, MIL_ERR_FORMAT, NEEDLES("INT8 arrays need specification version >= 10")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char name[64];
    snprintf(name, sizeof name, "p%zu.mlpackage", i);
    char *pkg = copy_good(name);
    edit_model(pkg, cases[i].fn);
    expect_error(pkg, cases[i].st, cases[i].needles);
    free(pkg);
  }
}

/* ------------------------------------------------------------------------ */
/* weight file                                                                */
/* ------------------------------------------------------------------------ */

static void patch(const char *file, size_t off, const void *bytes, size_t n) {
  size_t len;
  unsigned char *b = mt_read(file, &len);
  assert_true(off + n <= len);
  memcpy(b + off, bytes, n);
  assert_true(mt_write(file, b, len));
  free(b);
}

static void test_blob_errors(void **state) {
  (void)state;
  char *pkg = copy_good("w1.mlpackage");
  char *wf = weight_file(pkg);
  remove(wf);
  expect_error(pkg, MIL_ERR_IO, NEEDLES("weight.bin", "cannot open"));
  free(wf), free(pkg);

  pkg = copy_good("w2.mlpackage");
  wf = weight_file(pkg);
  patch(wf, 64, "\0\0\0\0", 4);
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("weight.bin: blob at offset 64: sentinel 0x00000000, expected 0xDEADBEEF"));
  free(wf), free(pkg);

  pkg = copy_good("w3.mlpackage");
  wf = weight_file(pkg);
  uint8_t sz[8] = {32, 0, 0, 0, 0, 0, 0, 0}; /* sizeInBytes 32 instead of 64 */
  patch(wf, 64 + 8, sz, 8);
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("blob at offset 64", "sizeInBytes 32, expected 64"));
  free(wf), free(pkg);

  pkg = copy_good("w4.mlpackage");
  wf = weight_file(pkg);
  uint8_t ver[4] = {1, 0, 0, 0};
  patch(wf, 4, ver, 4);
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("weight.bin", "version 1, expected 2"));
  free(wf), free(pkg);

  pkg = copy_good("w5.mlpackage");
  wf = weight_file(pkg);
  size_t len;
  unsigned char *b = mt_read(wf, &len);
  assert_true(mt_write(wf, b, 130)); /* the payload is cut off */
  free(b);
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("blob at offset 64", "past the end of the file"));
  free(wf), free(pkg);
}

/* ------------------------------------------------------------------------ */
/* package and manifest                                                       */
/* ------------------------------------------------------------------------ */

static void write_manifest(const char *pkg, const char *text) {
  char *mf = mt_path(pkg, "Manifest.json");
  assert_true(mt_write(mf, text, strlen(text)));
  free(mf);
}

#define ITEM_MODEL \
  "\"m1\": {\"author\": \"com.apple.CoreML\", \"description\": \"CoreML Model Specification\", " \
  "\"name\": \"model.mlmodel\", \"path\": \"com.apple.CoreML/model.mlmodel\"}"
#define ITEM_WEIGHTS \
  "\"w1\": {\"author\": \"com.apple.CoreML\", \"description\": \"CoreML Model Weights\", " \
  "\"name\": \"weights\", \"path\": \"com.apple.CoreML/weights\"}"

static void test_manifest_errors(void **state) {
  (void)state;
  struct {
    const char *text; /* NULL: delete Manifest.json */
    mil_status st;
    const char *const *needles;
  } cases[] = {
      {NULL, MIL_ERR_FORMAT, NEEDLES("Manifest.json is missing")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {", MIL_ERR_FORMAT, NEEDLES("Manifest.json: byte", "not valid JSON")},
      {"[1, 2]", MIL_ERR_FORMAT, NEEDLES("expected a JSON object")},
      {"{\"itemInfoEntries\": {" ITEM_MODEL "}, \"rootModelIdentifier\": \"m1\"}", MIL_ERR_FORMAT,
       NEEDLES("'fileFormatVersion' (a string) is missing")},
      {"{\"fileFormatVersion\": \"2.0.0\", \"itemInfoEntries\": {" ITEM_MODEL "}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_UNSUPPORTED, NEEDLES("fileFormatVersion '2.0.0' is not supported")},
      {"{\"fileFormatVersion\": \"1.1.0\", \"itemInfoEntries\": {" ITEM_MODEL "}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_UNSUPPORTED, NEEDLES("'1.1.0' is not supported")},
      {"{\"fileFormatVersion\": \"1.0\", \"itemInfoEntries\": {" ITEM_MODEL "}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_FORMAT, NEEDLES("'1.0' is not of the form major.minor.patch")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {" ITEM_MODEL "}}", MIL_ERR_FORMAT,
       NEEDLES("'rootModelIdentifier' (a string) is missing")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {" ITEM_MODEL "}, \"rootModelIdentifier\": \"zz\"}",
       MIL_ERR_FORMAT, NEEDLES("rootModelIdentifier 'zz' is not among the itemInfoEntries")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"rootModelIdentifier\": \"m1\"}", MIL_ERR_FORMAT,
       NEEDLES("rootModelIdentifier 'm1' is not among")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {\"m1\": {\"path\": \"com.apple.CoreML/model.mlmodel\", "
       "\"name\": \"model.mlmodel\", \"description\": \"x\"}}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_FORMAT, NEEDLES("item 'm1' lacks the string key 'author'")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {" ITEM_MODEL ", \"x\": {\"author\": \"someone\", "
       "\"description\": \"d\", \"name\": \"n\", \"path\": \"other/thing\"}}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_FORMAT, NEEDLES("item 'x' (n) refers to Data/other/thing, which does not exist")},
      {"{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {\"m1\": {\"author\": \"a\", \"description\": \"d\", "
       "\"name\": \"n\", \"path\": \"../../etc/passwd\"}}, \"rootModelIdentifier\": \"m1\"}",
       MIL_ERR_FORMAT, NEEDLES("not a relative path inside Data/")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char name[64];
    snprintf(name, sizeof name, "m%zu.mlpackage", i);
    char *pkg = copy_good(name);
    if (cases[i].text) {
      write_manifest(pkg, cases[i].text);
    } else {
      char *mf = mt_path(pkg, "Manifest.json");
      remove(mf);
      free(mf);
    }
    expect_error(pkg, cases[i].st, cases[i].needles);
    free(pkg);
  }
  /* a minimal hand-written manifest with other key order and spacing loads */
  char *pkg = copy_good("ok.mlpackage");
  write_manifest(pkg, "{\"rootModelIdentifier\":\"m1\",\"itemInfoEntries\":{" ITEM_WEIGHTS "," ITEM_MODEL
                      "},\"fileFormatVersion\":\"1.0.0\"}");
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_load(pkg, &m, &d), MIL_OK);
  mil_model_free(m);
  /* the model file itself missing */
  char *mf = model_file(pkg);
  remove(mf);
  expect_error(pkg, MIL_ERR_FORMAT, NEEDLES("refers to Data/com.apple.CoreML/model.mlmodel, which does not exist"));
  /* not a directory / not there */
  char *nope = mt_path(g_dir, "nope.mlpackage");
  expect_error(nope, MIL_ERR_IO, NEEDLES("nope.mlpackage: no such package"));
  char *file = mt_path(g_dir, "file.mlpackage");
  assert_true(mt_write(file, "x", 1));
  expect_error(file, MIL_ERR_FORMAT, NEEDLES("must be a directory"));
  expect_error("model.onnx", MIL_ERR_UNSUPPORTED, NEEDLES("unknown model extension '.onnx'"));
  mil_diag_clear(&d);
  free(mf), free(pkg), free(nope), free(file);
}

/* Random damage to a valid model never crashes or hangs the loader. */
static void test_random_damage(void **state) {
  (void)state;
  char *mf = model_file(g_good);
  size_t n;
  unsigned char *orig = mt_read(mf, &n);
  unsigned char *buf = malloc(n);
  char *wdir = mt_path(g_good, "Data/com.apple.CoreML/weights");
  uint64_t s = 0x9E3779B97F4A7C15ull;
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, orig, n);
    size_t len = n;
    int edits = 1 + iter % 4;
    for (int e = 0; e < edits; e++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      size_t at = (size_t)(s % len);
      switch ((s >> 32) % 4) {
      case 0: buf[at] ^= (uint8_t)(1u << ((s >> 40) % 8)); break;
      case 1: buf[at] = (uint8_t)(s >> 48); break;
      case 2: len = at + 1; break;
      default: buf[at] = 0xff; break;
      }
    }
    mil_model *m = NULL;
    mil_diag d = {0};
    mil_status st = mil_model_load_proto(buf, len, "fuzz.mlmodel", wdir, &m, &d);
    if (st == MIL_OK) {
      ok++;
      assert_non_null(m);
      mil_model_free(m);
    } else {
      failed++;
      assert_non_null(mil_diag_first_error(&d));
    }
    mil_diag_clear(&d);
  }
  assert_int_equal(ok + failed, 3000);
  assert_true(failed > 0);
  free(orig), free(buf), free(mf), free(wdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncated_protobuf), cmocka_unit_test(test_wire_errors),
      cmocka_unit_test(test_not_an_ml_program),  cmocka_unit_test(test_program_errors),
      cmocka_unit_test(test_blob_errors),        cmocka_unit_test(test_manifest_errors),
      cmocka_unit_test(test_random_damage),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

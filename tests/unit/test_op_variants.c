/* The op registry covers exactly coremltools' op variants.
 *
 * tests/data/op_variants.txt lists every class coremltools registers with
 * register_op under ops/defs (iOS15..iOS18 folders, coreml and complex
 * dialects) as "<op_type> <opset>", opset being the register_op
 * opset_version (iOS13 when not given). Every listed variant must have a
 * registry row with that exact opset, and every registry row must be
 * listed. Missing and unlisted rows are printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/ops.h"

typedef struct variant {
  char type[128];
  int opset;
} variant;

/* "iOS17" -> 8 via the registry's own target names. */
static int target_version(const char *name) {
  for (int v = MIL_IOS13; v <= MIL_IOS26; v++) {
    const char *t = mil_opset_target_name(v);
    if (t && strcmp(t, name) == 0) return v;
  }
  return -1;
}

static size_t load_variants(variant **out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/data/op_variants.txt", MIL_TEST_DATA);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  size_t n = 0, cap = 256;
  variant *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  char line[512];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char type[128], target[32];
    if (sscanf(line, "%127s %31s", type, target) != 2) fail_msg("%s:%d: expected '<op_type> <iOSxx>'", path, lineno);
    int ver = target_version(target);
    if (ver < 0) fail_msg("%s:%d: unknown opset '%s'", path, lineno, target);
    if (n == cap) {
      cap *= 2;
      v = realloc(v, cap * sizeof *v);
      assert_non_null(v);
    }
    snprintf(v[n].type, sizeof v[n].type, "%s", type);
    v[n].opset = ver;
    n++;
  }
  fclose(f);
  *out = v;
  return n;
}

/* The list itself: sorted, no duplicates, and the known anchors present. */
static void test_list_is_sane(void **state) {
  (void)state;
  variant *v;
  size_t n = load_variants(&v);
  assert_true(n > 200);
  for (size_t i = 1; i < n; i++) {
    int c = strcmp(v[i - 1].type, v[i].type);
    assert_true(c < 0 || (c == 0 && v[i - 1].opset < v[i].opset));
  }
  bool conv17 = false, add13 = false;
  for (size_t i = 0; i < n; i++) {
    conv17 |= strcmp(v[i].type, "conv") == 0 && v[i].opset == MIL_IOS17;
    add13 |= strcmp(v[i].type, "add") == 0 && v[i].opset == MIL_IOS13;
  }
  assert_true(conv17);
  assert_true(add13);
  free(v);
}

static void test_every_variant_registered(void **state) {
  (void)state;
  variant *v;
  size_t n = load_variants(&v);
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    const mil_op_def *d = mil_op_def_find(v[i].type, v[i].opset);
    if (!d || d->opset != v[i].opset || strcmp(d->type, v[i].type) != 0) {
      if (!missing) printf("variants without a registry row:\n");
      printf("  missing: %s %s%s\n", v[i].type, mil_opset_target_name(v[i].opset),
             d ? " (an older variant answers instead)" : "");
      missing++;
    }
  }
  size_t unlisted = 0, rows = mil_op_def_count();
  for (size_t r = 0; r < rows; r++) {
    const mil_op_def *d = mil_op_def_at(r);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) found = v[i].opset == d->opset && strcmp(v[i].type, d->type) == 0;
    if (!found) {
      if (!unlisted) printf("registry rows that coremltools does not register:\n");
      const char *target = mil_opset_target_name(d->opset);
      printf("  unlisted: %s %s (family %s)\n", d->type, target ? target : "?", d->family);
      unlisted++;
    }
  }
  printf("op variants: %zu listed, %zu registry rows, %zu missing, %zu unlisted\n", n, rows, missing, unlisted);
  fflush(stdout);
  free(v);
  assert_int_equal(missing, 0);
  assert_int_equal(unlisted, 0);
}

/* Registry rows are well formed: a type, an infer callback, input names
 * unique within the row, and lookup by (type, opset) returns the row. */
static void test_rows_well_formed(void **state) {
  (void)state;
  size_t rows = mil_op_def_count();
  for (size_t r = 0; r < rows; r++) {
    const mil_op_def *d = mil_op_def_at(r);
    assert_non_null(d->type);
    assert_non_null(d->infer);
    assert_true(d->n_inputs >= 0);
    for (int32_t i = 0; i < d->n_inputs; i++)
      for (int32_t j = i + 1; j < d->n_inputs; j++)
        if (strcmp(d->inputs[i].name, d->inputs[j].name) == 0)
          fail_msg("%s (opset %d): input '%s' listed twice", d->type, d->opset, d->inputs[i].name);
    assert_ptr_equal(mil_op_def_find(d->type, d->opset), d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_is_sane),
      cmocka_unit_test(test_rows_well_formed),
      cmocka_unit_test(test_every_variant_registered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

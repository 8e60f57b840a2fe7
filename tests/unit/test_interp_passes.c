/* Passes checked numerically with the reference interpreter: for every
 * golden case of MIL_SHARED_DIR/corpus/passes, the input program, libmil's
 * result of the case's pass(es) and coremltools' expected program run on
 * the same random inputs (symbolic dims as 2), and their outputs are
 * compared (|a - b| <= 1e-2 + 1e-2 |b|, NaN equal to NaN).
 *
 * A case where coremltools' expected program computes what the input
 * computes but libmil's result does not is a pass that changed the
 * program's meaning: the test fails and lists them. Cases where
 * coremltools' own rewrite changes the numbers (fp16 casts, division by
 * zero turned into inf weights, random ops, ...) are counted and printed,
 * not failed. The interpreter must also run every case it can without
 * crashing (the run under the sanitizers checks that). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "golden_util.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/passes.h"
#include "mil/text.h"

static uint64_t mix(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static double get(const mil_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)t->data)[i]);
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  case MIL_DT_INT16: return ((const int16_t *)t->data)[i];
  case MIL_DT_UINT16: return ((const uint16_t *)t->data)[i];
  case MIL_DT_INT8: return ((const int8_t *)t->data)[i];
  case MIL_DT_BOOL: case MIL_DT_UINT8: return ((const uint8_t *)t->data)[i];
  default: return NAN;
  }
}

static void put(mil_dtype dt, void *p, int64_t i, double v) {
  switch (dt) {
  case MIL_DT_FP32: ((float *)p)[i] = (float)v; break;
  case MIL_DT_FP16: ((uint16_t *)p)[i] = mil_fp32_to_fp16((float)v); break;
  case MIL_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case MIL_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
  case MIL_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case MIL_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case MIL_DT_BOOL: case MIL_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  default: break;
  }
}

/* Outputs of one program on the case's inputs (owned copies). */
typedef struct result {
  bool ok;
  int32_t n;
  mil_tensor t[16];
  int64_t shapes[16][MIL_INTERP_MAX_RANK];
  void *bufs[16];
} result;

static void result_free(result *r) {
  for (int32_t i = 0; i < r->n; i++) free(r->bufs[i]);
  memset(r, 0, sizeof *r);
}

/* Runs p with inputs drawn from seed `seed` by input position (values
 * cast to each program's own input dtype). */
static void run_prog(mil_program *p, uint64_t seed, result *out) {
  memset(out, 0, sizeof *out);
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  if (!p || mil_interp_new(p, NULL, &ip, &d) != MIL_OK || mil_interp_n_outputs(ip) > 16) goto done;
  for (int32_t i = 0; i < mil_interp_n_inputs(ip); i++) {
    const mil_type *t = mil_interp_input_type(ip, i);
    if (t->kind == MIL_TYPE_STATE) continue;
    if (t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > 8 || mil_dtype_size(t->dtype) == 0) goto done;
    int64_t shape[8], n = 1;
    for (int32_t k = 0; k < t->rank; k++) n *= shape[k] = t->dims[k].size >= 0 ? t->dims[k].size : 2;
    size_t es = mil_dtype_size(t->dtype);
    void *buf = calloc((size_t)(n ? n : 1), es);
    if (!buf) goto done;
    uint64_t s = seed + (uint64_t)i * 1000003u;
    bool fl = mil_dtype_is_float(t->dtype);
    for (int64_t e = 0; e < n; e++) {
      uint64_t r = mix(&s);
      put(t->dtype, buf, e, fl ? (double)(r >> 11) / 9007199254740992.0 * 2 - 1 : (double)(r % 3));
    }
    mil_tensor tt = {t->dtype, t->rank, shape, buf, (size_t)n * es, n};
    mil_status st = mil_interp_set_input(ip, mil_interp_input_name(ip, i), &tt, &d);
    free(buf);
    if (st != MIL_OK) goto done;
  }
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) goto done;
  out->n = mil_interp_n_outputs(ip);
  for (int32_t i = 0; i < out->n; i++) {
    const mil_tensor *t = mil_interp_output_at(ip, i);
    out->bufs[i] = malloc(t->nbytes ? t->nbytes : 1);
    if (!out->bufs[i]) {
      result_free(out);
      goto done;
    }
    memcpy(out->bufs[i], t->data, t->nbytes);
    memcpy(out->shapes[i], t->shape, (size_t)t->rank * sizeof(int64_t));
    out->t[i] = *t;
    out->t[i].data = out->bufs[i];
    out->t[i].shape = out->shapes[i];
  }
  out->ok = true;
done:
  mil_interp_free(ip);
  mil_diag_clear(&d);
}

static bool same(const result *a, const result *b) {
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++) {
    if (a->t[i].numel != b->t[i].numel) return false;
    for (int64_t e = 0; e < a->t[i].numel; e++) {
      double x = get(&a->t[i], e), y = get(&b->t[i], e);
      if (isnan(x) && isnan(y)) continue;
      if (!(fabs(x - y) <= 1e-2 + 1e-2 * fabs(y))) return false;
    }
  }
  return true;
}

static mil_program *parse(const char *text, size_t len, const char *path) {
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options po = {path, NULL};
  if (mil_parse_program(text, len, &po, &p, &d) != MIL_OK) p = NULL;
  mil_diag_clear(&d);
  return p;
}

/* libmil's result of the case's pass(es) on its input, or NULL. */
static mil_program *apply_passes(const golden_case *c) {
  const char *missing;
  if (!golden_case_runnable(c, &missing)) return NULL;
  mil_program *p = parse(c->input, c->input_len, c->path);
  mil_diag d;
  mil_diag_init(&d);
  mil_pipeline *pl = NULL;
  mil_pipeline_run_options ro = {0};
  if (!p || golden_pipeline(c, &pl, &d) != MIL_OK || mil_pipeline_run(pl, p, &ro, NULL, &d) != MIL_OK) {
    mil_program_free(p);
    p = NULL;
  }
  mil_pipeline_free(pl);
  mil_diag_clear(&d);
  return p;
}

static void test_passes_numerically(void **state) {
  (void)state;
  char root[4096];
  snprintf(root, sizeof root, "%s/corpus/passes", MIL_SHARED_DIR);
  corpus_list l = {0};
  corpus_list_cases(root, &l);
  if (l.n == 0) {
    shared_skip("the corpus");
    return;
  }
  int cases = 0, ran = 0, ct_same = 0, ct_differs = 0, ours_run = 0, ours_same = 0, broken = 0;
  for (size_t k = 0; k < l.n; k++) {
    golden_case c;
    char err[1024];
    if (golden_case_read(l.paths[k], &c, err, sizeof err) != 0) continue;
    if (!c.input || !c.expected) {
      golden_case_free(&c);
      continue;
    }
    cases++;
    uint64_t seed = 12345 + k;
    mil_program *in = parse(c.input, c.input_len, c.path), *ex = parse(c.expected, c.expected_len, c.path);
    result rin, rex, rours;
    run_prog(in, seed, &rin);
    run_prog(ex, seed, &rex);
    memset(&rours, 0, sizeof rours);
    if (rin.ok) {
      mil_program *ours = apply_passes(&c);
      run_prog(ours, seed, &rours);
      mil_program_free(ours);
    }
    if (rin.ok && rex.ok) {
      ran++;
      bool ct_ok = same(&rex, &rin);
      ct_same += ct_ok;
      if (!ct_ok) {
        ct_differs++;
        printf("note: coremltools' rewrite changes the numbers: %s\n", c.path);
      }
      if (rours.ok) {
        ours_run++;
        bool ok = same(&rours, &rin);
        ours_same += ok;
        if (!ok && ct_ok) {
          broken++;
          print_error("libmil's %s changes what the program computes (coremltools' does not): %s\n",
                      c.pass ? c.pass : "pipeline", c.path);
        }
      }
    }
    result_free(&rin);
    result_free(&rex);
    result_free(&rours);
    mil_program_free(in);
    mil_program_free(ex);
    golden_case_free(&c);
  }
  corpus_list_free(&l);
  printf("%d golden cases; %d run (input and coremltools' expected): %d agree, %d differ; libmil's passes ran on %d: "
         "%d agree with the input, %d change its meaning where coremltools' rewrite does not\n",
         cases, ran, ct_same, ct_differs, ours_run, ours_same, broken);
  assert_true(ran > cases / 2); /* the interpreter runs most of the corpus */
  assert_int_equal(broken, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passes_numerically),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

/* Whole ONNX graphs from tests/data/onnx_graphs (written by gen.py there
 * with the onnx package, the expected outputs computed by numpy): each is
 * imported (fp32, the default pipeline), run with the interpreter on the
 * committed inputs and compared with the numpy outputs.
 *   topo_cast_after  the input Cast listed after its users (keep_io_types)
 *   topo_cycle       a real cycle: refused, naming a node on it
 *   if_lstm          an LSTM in both branches of an If on a run-time flag,
 *                    symbolic sequence and batch, outer-scope weights
 *   dq_conv, mm_int, dql_zero
 *                    DynamicQuantizeLinear, ConvInteger, MatMulInteger
 *                    against ONNX's reference semantics (half-to-even
 *                    rounding, saturation, per-channel zero points), exact
 *                    in fp32
 *   names            ONNX names that are not identifiers: renamed as
 *                    coremltools renames them, recorded in the metadata,
 *                    and the inputs fed by their ONNX names
 *   fp16_chain       Pow / ReduceSum beyond fp16's range: inf in the default
 *                    fp16 conversion; with a sample input the overflowing
 *                    ops stay fp32 (mil_convert_options samples)
 *   fp16_if          the same chain inside the branches of an If on a
 *                    run-time flag: with samples the If's blocks stay fp32
 *   fp16_static      int16 audio squared: without a sample the static check
 *                    warns (the declared int16 range reaches 1.07e9)
 *   random_ops       RandomUniform, RandomNormalLike, Bernoulli, Multinomial:
 *                    their distributions (gen_random.py) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/convert.h"
#include "mil/onnx.h"

static void path_of(char *buf, size_t n, const char *file) {
  snprintf(buf, n, "%s/data/onnx_graphs/%s", MIL_TEST_DATA, file);
}

static mil_npy *npy(const char *file) {
  char p[1024];
  path_of(p, sizeof p, file);
  mil_diag d;
  mil_diag_init(&d);
  mil_npy *a = NULL;
  if (mil_npy_read(p, &a, &d) != MIL_OK) fail_msg("%s: %s", p, mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return a;
}

static bool g_fp16; /* import with the fp16 pipeline (ct.convert's default) */

static mil_status import(const char *model, mil_model **m, mil_diag *d) {
  char p[1024];
  path_of(p, sizeof p, model);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = !g_fp16;
  return mil_convert(p, &o, m, d);
}

static double elem(const void *data, mil_dtype dt, int64_t k) {
  return dt == MIL_DT_INT32 ? (double)((const int32_t *)data)[k] : (double)((const float *)data)[k];
}

/* Imports model, feeds case.in<i>.npy to input i (by position), runs, and
 * checks every case.out<i>.npy within tol of the largest magnitude. */
static void run_case(const char *model, const char *cs, int n_in, int n_out, double tol) {
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (import(model, &m, &d) != MIL_OK) fail_msg("%s: %s", model, mil_diag_first_error(&d));
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_n_inputs(ip), n_in);
  mil_npy *ins[8];
  for (int i = 0; i < n_in; i++) {
    char f[256];
    snprintf(f, sizeof f, "%s.in%d.npy", cs, i);
    ins[i] = npy(f);
    mil_tensor t = {ins[i]->dtype, ins[i]->rank, ins[i]->shape, ins[i]->data, ins[i]->nbytes, ins[i]->numel};
    if (mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d) != MIL_OK)
      fail_msg("%s input %d: %s", cs, i, mil_diag_first_error(&d));
  }
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s: %s", cs, mil_diag_first_error(&d));
  assert_int_equal(mil_interp_n_outputs(ip), n_out);
  for (int i = 0; i < n_out; i++) {
    char f[256];
    snprintf(f, sizeof f, "%s.out%d.npy", cs, i);
    mil_npy *want = npy(f);
    const mil_tensor *y = mil_interp_output_at(ip, i);
    assert_int_equal(y->dtype, want->dtype);
    assert_true(y->dtype == MIL_DT_FP32 || y->dtype == MIL_DT_INT32);
    assert_int_equal(y->numel, want->numel);
    assert_int_equal(y->rank, want->rank);
    for (int k = 0; k < y->rank; k++) assert_int_equal(y->shape[k], want->shape[k]);
    double big = 0, err = 0;
    for (int64_t k = 0; k < y->numel; k++) {
      double a = elem(y->data, y->dtype, k), b = elem(want->data, want->dtype, k);
      big = fmax(big, fabs(b));
      err = isfinite(a) ? fmax(err, fabs(a - b)) : INFINITY;
    }
    if (err > tol * fmax(big, 1e-6)) fail_msg("%s output %d: max error %g (largest %g)", cs, i, err, big);
    mil_npy_free(want);
  }
  for (int i = 0; i < n_in; i++) mil_npy_free(ins[i]);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

static void test_topo_cast_listed_after_users(void **state) {
  (void)state;
  run_case("topo_cast_after.onnx", "topo_cast_after", 1, 1, 1e-3);
}

static void test_topo_cycle_refused(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(import("topo_cycle.onnx", &m, &d), MIL_ERR_INVALID);
  assert_null(m);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(e);
  assert_non_null(strstr(e, "cycle"));
  assert_true(strstr(e, "relu_in_cycle") || strstr(e, "add_in_cycle"));
  mil_diag_clear(&d);
}

static void test_if_lstm_then(void **state) {
  (void)state;
  run_case("if_lstm.onnx", "if_lstm_then", 4, 2, 1e-5);
}

static void test_if_lstm_else(void **state) {
  (void)state;
  run_case("if_lstm.onnx", "if_lstm_else", 4, 2, 1e-5);
}

/* Exact: the quantized values, the zero point and the int32 accumulator
 * equal the reference; the rescaled fp32 output is one product away. */
static void test_dynamic_quant_conv_integer(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) { /* fp32, then fp16 (the marked ops stay fp32) */
    g_fp16 = k == 1;
    run_case("dq_conv.onnx", "dq_conv", 1, 4, 1e-6);
    run_case("mm_int.onnx", "mm_int", 1, 1, 0);
    run_case("dql_zero.onnx", "dql_zero", 1, 3, 0);
  }
  g_fp16 = false;
}

/* SplitToSequence along a symbolic axis, split sizes given at run time
 * (their count known): each part a run-time slice (gen_split_seq.py). */
static void test_split_to_sequence_runtime_sizes(void **state) {
  (void)state;
  run_case("split_seq_runtime.onnx", "split_seq_runtime", 2, 2, 0);
}

/* MaxPool's Indices in 1, 2 and 3 spatial dims, with strides, dilations,
 * asymmetric pads and storage_order 1, against the loop of
 * gen_maxpool_indices.py; exact. */
static void test_maxpool_indices(void **state) {
  (void)state;
  for (int i = 0; i < 4; i++) {
    char model[64], cs[64];
    snprintf(model, sizeof model, "maxpool_idx%d.onnx", i);
    snprintf(cs, sizeof cs, "maxpool_idx%d", i);
    run_case(model, cs, 1, 2, 0);
  }
}

/* GridSample bicubic with border padding and align_corners, and with
 * zeros padding without (gen_grid_bicubic.py, PyTorch's references). */
static void test_grid_sample_bicubic(void **state) {
  (void)state;
  run_case("grid_bicubic_border.onnx", "grid_bicubic_border", 2, 1, 1e-5);
  run_case("grid_bicubic_zeros.onnx", "grid_bicubic_zeros", 2, 1, 1e-5);
}

static void test_input_value_fixes_if_branch(void **state) {
  (void)state;
  char p[1024];
  path_of(p, sizeof p, "if_lstm.onnx");
  double one = 1;
  mil_onnx_input_value fix = {"flag", {MIL_DT_FP64, 0, NULL, &one, 8, 1}};
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.input_values = &fix;
  o.n_input_values = 1;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (mil_onnx_import(p, &o, &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  assert_int_equal(mil_program_count_op_type(mil_model_program(m), "cond"), 0);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_n_inputs(ip), 3);
  for (int i = 0; i < 3; i++) {
    char f[64];
    snprintf(f, sizeof f, "if_lstm_then.in%d.npy", i);
    mil_npy *a = npy(f);
    mil_tensor t = {a->dtype, a->rank, a->shape, a->data, a->nbytes, a->numel};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
    mil_npy_free(a);
  }
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  mil_npy *want = npy("if_lstm_then.out0.npy");
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, want->numel);
  for (int64_t k = 0; k < y->numel; k++)
    assert_true(fabs(((const float *)y->data)[k] - ((const float *)want->data)[k]) < 1e-5);
  mil_npy_free(want);
  mil_interp_free(ip);
  mil_model_free(m);
  /* an unknown name and a value that does not fit are refused */
  fix.name = "nope";
  assert_int_equal(mil_onnx_import(p, &o, &m, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "--input-value names 'nope'"));
  mil_diag_clear(&d);
  double two[2] = {1, 0};
  fix = (mil_onnx_input_value){"flag", {MIL_DT_FP64, -1, NULL, two, 16, 2}};
  assert_int_equal(mil_onnx_import(p, &o, &m, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
}

typedef struct renames {
  int n_in, n_out;
  char seen[512];
} renames;

static void collect(void *ud, bool is_output, const char *mil_name, const char *onnx_name) {
  renames *r = ud;
  if (is_output) r->n_out++;
  else r->n_in++;
  size_t l = strlen(r->seen);
  snprintf(r->seen + l, sizeof r->seen - l, "%s=%s;", mil_name, onnx_name);
}

static void test_names_renamed_and_recorded(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (import("names.onnx", &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  /* coremltools' NameSanitizer: every non-word character becomes '_' */
  const char *label_mil = "__0____cat____1____dog__", *label_onnx = "{\"0\": \"cat\", \"1\": \"dog\"}";
  renames r = {0};
  assert_int_equal(mil_onnx_renames(m, collect, &r), 3);
  assert_int_equal(r.n_in, 2);
  assert_int_equal(r.n_out, 1);
  char want[512];
  snprintf(want, sizeof want, "onnx__Flatten_0=onnx::Flatten_0;x_1=x.1;%s=%s;", label_mil, label_onnx);
  assert_string_equal(r.seen, want);
  char *a = mil_onnx_model_name(m, false, "onnx::Flatten_0"), *b = mil_onnx_model_name(m, false, "x.1");
  char *o = mil_onnx_model_name(m, true, label_onnx);
  assert_string_equal(a, "onnx__Flatten_0");
  assert_string_equal(b, "x_1");
  assert_string_equal(o, label_mil);
  assert_null(mil_onnx_model_name(m, false, "onnx__Flatten_0")); /* already the model's name */
  assert_null(mil_onnx_model_name(m, true, "x.1"));                /* an input, not an output */
  /* the inputs fed under the model's names found from the ONNX names */
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  mil_npy *x0 = npy("names.in0.npy"), *x1 = npy("names.in1.npy"), *want_y = npy("names.out0.npy");
  mil_tensor t0 = {x0->dtype, x0->rank, x0->shape, x0->data, x0->nbytes, x0->numel};
  mil_tensor t1 = {x1->dtype, x1->rank, x1->shape, x1->data, x1->nbytes, x1->numel};
  assert_int_equal(mil_interp_set_input(ip, a, &t0, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, b, &t1, &d), MIL_OK);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  const mil_tensor *y = mil_interp_output(ip, o);
  assert_non_null(y);
  assert_int_equal(y->numel, want_y->numel);
  for (int64_t k = 0; k < y->numel; k++)
    assert_true(fabs(((const float *)y->data)[k] - ((const float *)want_y->data)[k]) < 1e-6);
  mil_npy_free(x0);
  mil_npy_free(x1);
  mil_npy_free(want_y);
  free(a);
  free(b);
  free(o);
  mil_interp_free(ip);
  /* a model whose names are all identifiers records none */
  mil_model_free(m);
  m = NULL;
  assert_int_equal(import("if_lstm.onnx", &m, &d), MIL_OK);
  assert_null(mil_model_metadata(m, MIL_ONNX_NAMES_KEY));
  assert_int_equal(mil_onnx_renames(m, NULL, NULL), 0);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* Converts fp16_chain (fp16, samples: NULL for none) and runs it on its
 * input; the output value. */
static float chain_output(const mil_convert_sample *samples, int n, mil_diag *d) {
  char p[1024];
  path_of(p, sizeof p, "fp16_chain.onnx");
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.samples = samples;
  o.n_samples = n;
  mil_model *m = NULL;
  if (mil_convert(p, &o, &m, d) != MIL_OK) fail_msg("%s", mil_diag_first_error(d));
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, d), MIL_OK);
  mil_npy *x = npy("fp16_chain.in0.npy");
  mil_tensor t = {x->dtype, x->rank, x->shape, x->data, x->nbytes, x->numel};
  assert_int_equal(mil_interp_set_input(ip, "x", &t, d), MIL_OK);
  assert_int_equal(mil_interp_run(ip, NULL, d), MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, 1);
  assert_int_equal(y->dtype, MIL_DT_FP32);
  float v = ((const float *)y->data)[0];
  mil_interp_free(ip);
  mil_model_free(m);
  mil_npy_free(x);
  return v;
}

static int count_warnings(const mil_diag *d, const char *a, const char *b) {
  int n = 0;
  for (size_t i = 0; i < d->count; i++)
    n += d->msgs[i].severity == MIL_SEV_WARNING && strstr(d->msgs[i].text, a) && (!b || strstr(d->msgs[i].text, b));
  return n;
}

static void test_fp16_sample_keeps_overflowing_ops_fp32(void **state) {
  (void)state;
  mil_npy *want = npy("fp16_chain.out0.npy"), *x = npy("fp16_chain.in0.npy");
  double ref = ((const float *)want->data)[0];
  mil_diag d;
  mil_diag_init(&d);
  /* the default fp16 conversion overflows */
  float plain = chain_output(NULL, 0, &d);
  assert_false(isfinite(plain));
  mil_diag_clear(&d);
  /* with the sample: finite, within 1e-3, the three overflowing ops reported */
  mil_convert_sample smp = {"x", {x->dtype, x->rank, x->shape, x->data, x->nbytes, x->numel}};
  float sampled = chain_output(&smp, 1, &d);
  assert_true(isfinite(sampled));
  if (fabs(sampled - ref) > 1e-3 * fabs(ref)) fail_msg("sampled %g, reference %g", sampled, ref);
  const char *kept[] = {"'sq' (pow)", "'ssum' (reduce_sum)", "'scaled' (mul)"};
  for (int k = 0; k < 3; k++)
    if (count_warnings(&d, kept[k], "stays fp32 (--sample): in fp16 it gives inf/NaN") != 1)
      fail_msg("no warning for op %s", kept[k]);
  /* the sqrt of ~6e3 stays fp16 */
  assert_int_equal(d.n_warnings, 3);
  mil_diag_clear(&d);
  /* a sample of no input, and an input without a sample, are refused */
  char p[1024];
  path_of(p, sizeof p, "fp16_chain.onnx");
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  mil_convert_sample two[2] = {smp, {"nope", smp.value}};
  o.samples = two;
  o.n_samples = 2;
  mil_model *m = NULL;
  assert_int_equal(mil_convert(p, &o, &m, &d), MIL_ERR_INVALID);
  assert_null(m);
  assert_non_null(strstr(mil_diag_first_error(&d), "--sample nope: the model has no input of that name"));
  mil_diag_clear(&d);
  mil_npy_free(want);
  mil_npy_free(x);
}

/* The overflowing chain inside the branches of an If on a run-time flag:
 * the probes cannot see into the branches; the cond's result is off, so
 * every op of its blocks stays fp32 (reported) and the output is finite. */
static void test_fp16_sample_inside_if(void **state) {
  (void)state;
  char p[1024];
  path_of(p, sizeof p, "fp16_if.onnx");
  mil_npy *x = npy("fp16_if.in0.npy"), *flag = npy("fp16_if.in1.npy"), *want = npy("fp16_if.out0.npy");
  mil_convert_sample smp[2] = {{"x", {x->dtype, x->rank, x->shape, x->data, x->nbytes, x->numel}},
                               {"flag", {flag->dtype, flag->rank, flag->shape, flag->data, flag->nbytes, flag->numel}}};
  for (int with = 0; with < 2; with++) {
    mil_convert_options o;
    memset(&o, 0, sizeof o);
    o.samples = with ? smp : NULL;
    o.n_samples = with ? 2 : 0;
    mil_diag d;
    mil_diag_init(&d);
    mil_model *m = NULL;
    if (mil_convert(p, &o, &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
    assert_int_equal(count_warnings(&d, "ops inside op 'y' (cond)", NULL), with);
    mil_interp *ip = NULL;
    assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
    assert_int_equal(mil_interp_set_input(ip, "x", &smp[0].value, &d), MIL_OK);
    assert_int_equal(mil_interp_set_input(ip, "flag", &smp[1].value, &d), MIL_OK);
    assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
    float y = ((const float *)mil_interp_output_at(ip, 0)->data)[0], ref = ((const float *)want->data)[0];
    if (with) assert_true(isfinite(y) && fabs(y - ref) <= 1e-3 * fabs(ref));
    else assert_false(isfinite(y));
    mil_interp_free(ip);
    mil_model_free(m);
    mil_diag_clear(&d);
  }
  mil_npy_free(x);
  mil_npy_free(flag);
  mil_npy_free(want);
}

/* Without samples an fp16 conversion warns about int16 audio squared; an
 * fp32 one does not, nor does a float input (no range known). */
static void test_fp16_static_warning(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  g_fp16 = true;
  assert_int_equal(import("fp16_static.onnx", &m, &d), MIL_OK);
  g_fp16 = false;
  assert_int_equal(d.n_warnings, 1);
  assert_int_equal(count_warnings(&d, "op 'sq' (mul) can reach 1.07e+09", "--sample"), 1);
  mil_model_free(m);
  mil_diag_clear(&d);
  assert_int_equal(import("fp16_static.onnx", &m, &d), MIL_OK);
  assert_int_equal(d.n_warnings, 0);
  mil_model_free(m);
  g_fp16 = true;
  assert_int_equal(import("fp16_chain.onnx", &m, &d), MIL_OK);
  g_fp16 = false;
  assert_int_equal(d.n_warnings, 0);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* An input type (ct.convert inputs=) names an ONNX input by its ONNX name
 * although the import renamed it (x.1 -> x_1; Silero's state ->
 * state_workaround): fp16 I/O at iOS16 leaves the typed input fp32 and
 * makes the other fp16. */
static void test_input_type_by_onnx_name(void **state) {
  (void)state;
  char p[1024];
  path_of(p, sizeof p, "names.onnx");
  mil_input_type it = mil_input_type_default("x.1", false);
  it.dtype = MIL_DT_FP32;
  mil_model_interface mi;
  memset(&mi, 0, sizeof mi);
  mi.n_inputs = 1;
  mi.inputs = &it;
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.target = MIL_IOS16;
  o.interface = &mi;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (mil_convert(p, &o, &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  mil_function *f = mil_program_find_function(mil_model_program(m), "main");
  assert_non_null(f);
  int seen = 0;
  for (int32_t i = 0; i < f->n_inputs; i++) {
    const mil_var *v = f->inputs[i];
    if (!strcmp(v->name, "x_1")) seen++, assert_int_equal(v->type->dtype, MIL_DT_FP32);
    if (!strcmp(v->name, "onnx__Flatten_0")) seen++, assert_int_equal(v->type->dtype, MIL_DT_FP16);
  }
  assert_int_equal(seen, 2);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* The random generators' distributions: uniform in [-2, 3) with mean 0.5,
 * normal with mean 5 and deviation 2, Bernoulli 0 / 1 where p is 0 / 1 and
 * a frequency near 0.3, Multinomial's class 2 near e^2 / (2 + e^2). */
static void test_random_ops(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (import("random_ops.onnx", &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  mil_npy *p = npy("random_ops.in0.npy"), *lg = npy("random_ops.in1.npy");
  mil_tensor tp = {p->dtype, p->rank, p->shape, p->data, p->nbytes, p->numel};
  mil_tensor tl = {lg->dtype, lg->rank, lg->shape, lg->data, lg->nbytes, lg->numel};
  assert_int_equal(mil_interp_set_input(ip, "p", &tp, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, "logits", &tl, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const mil_tensor *u = mil_interp_output(ip, "u"), *z = mil_interp_output(ip, "z"), *b = mil_interp_output(ip, "b"),
                   *mm = mil_interp_output(ip, "m");
  assert_true(u && z && b && mm);
  assert_int_equal(u->numel, 4000);
  double su = 0, sz = 0, szz = 0, f3 = 0;
  for (int64_t i = 0; i < 4000; i++) {
    float v = ((const float *)u->data)[i];
    assert_true(v >= -2.0f && v < 3.0f);
    su += v;
  }
  for (int64_t i = 0; i < 3000; i++) {
    double v = ((const float *)z->data)[i];
    sz += v, szz += v * v;
    float bv = ((const float *)b->data)[i];
    if (i < 1000) assert_true(bv == 0.0f);
    else if (i < 2000) assert_true(bv == 1.0f);
    else assert_true(bv == 0.0f || bv == 1.0f), f3 += bv;
  }
  double mz = sz / 3000, sdz = sqrt(szz / 3000 - mz * mz);
  if (fabs(su / 4000 - 0.5) > 0.1 || fabs(mz - 5) > 0.15 || fabs(sdz - 2) > 0.15 || fabs(f3 / 1000 - 0.3) > 0.06)
    fail_msg("uniform mean %g, normal mean %g sd %g, bernoulli frequency %g", su / 4000, mz, sdz, f3 / 1000);
  assert_int_equal(mm->numel, 1000);
  assert_int_equal(mm->dtype, MIL_DT_INT32);
  double c2 = 0;
  for (int64_t i = 0; i < 1000; i++) {
    int32_t k = ((const int32_t *)mm->data)[i];
    assert_true(k >= 0 && k <= 2);
    c2 += k == 2;
  }
  double want = exp(2.0) / (2 + exp(2.0));
  if (fabs(c2 / 1000 - want) > 0.06) fail_msg("multinomial class 2 frequency %g, want %g", c2 / 1000, want);
  mil_npy_free(p);
  mil_npy_free(lg);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topo_cast_listed_after_users),
      cmocka_unit_test(test_topo_cycle_refused),
      cmocka_unit_test(test_if_lstm_then),
      cmocka_unit_test(test_if_lstm_else),
      cmocka_unit_test(test_names_renamed_and_recorded),
      cmocka_unit_test(test_dynamic_quant_conv_integer),
      cmocka_unit_test(test_input_value_fixes_if_branch),
      cmocka_unit_test(test_split_to_sequence_runtime_sizes),
      cmocka_unit_test(test_grid_sample_bicubic),
      cmocka_unit_test(test_maxpool_indices),
      cmocka_unit_test(test_fp16_sample_keeps_overflowing_ops_fp32),
      cmocka_unit_test(test_fp16_sample_inside_if),
      cmocka_unit_test(test_fp16_static_warning),
      cmocka_unit_test(test_input_type_by_onnx_name),
      cmocka_unit_test(test_random_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

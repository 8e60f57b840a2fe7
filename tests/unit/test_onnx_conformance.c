/* The ONNX conformance runner: ONNX's own backend tests (Debian's
 * libonnx-testdata, /usr/share/libonnx-testdata/data/{node, simple,
 * pytorch-converted, pytorch-operator}/<test>/) through the importer.
 *
 * For each test: mil_convert of model.onnx with fp32 precision (the
 * DEFAULT pipeline without add_fp16_cast, as `mil convert --precision fp32`)
 * for iOS15, or for iOS18 when iOS15 cannot express the model,
 * the interpreter on test_data_set_0/input_*.pb, and each output compared
 * with output_*.pb by value (dtypes MIL narrows, int64 -> int32 and
 * double -> fp32, compare by value) with the criterion of ONNX's own backend
 * test runner (onnx/backend/test/runner: numpy.testing.assert_allclose with
 * the loader's defaults rtol = 1e-3, atol = 1e-7; none of these suites has a
 * data.json overriding them): |a - b| <= 1e-7 + 1e-3 |b|, NaN equal to NaN, ints and bools exactly (bfloat16 data, which ONNX's tests store
 * as its bit patterns in UINT16 tensors, is read as bf16). Each test runs in a child process, so a
 * crash is one failed test, not the end of the run.
 *
 * Outcomes: passed; unsupported (the import refuses the model with
 * MIL_ERR_UNSUPPORTED, or its data is a sequence / optional .pb: counted
 * as skipped); failed. Every failure must be listed with its reason in
 * tests/onnx_known_failures.txt ("suite/test  reason"); an unlisted failure
 * fails the test, and a listed test that passes is reported so the list
 * stays true. Prints a per-op table (the op of single-node models, else
 * "(graph)") and "onnx conformance: N passed, N failed, N skipped".
 * MIL_ONNX_TESTDATA overrides the data directory; exits 77 (skipped) when
 * it is absent. MIL_ONNX_FILTER=substring runs the tests whose name holds it
 * and prints every failure's message. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* onnx/backend/test/loader: TestCase rtol / atol when a test has no data.json */
#define ONNX_RTOL 1e-3
#define ONNX_ATOL 1e-7

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/convert.h"
#include "mil/onnx.h"
#include "mil/onnx_tensor.h"
#include "mil/ops.h"
#include "onnx.pb-c.h"

enum { R_PASS = 0, R_FAIL = 1, R_UNSUP = 2 };

static const char *g_root;
static const char *const k_suites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

/* ---------- known failures ---------- */

typedef struct known {
  char **names;
  bool *seen;
  size_t n;
} known;

static void load_known(known *k) {
  memset(k, 0, sizeof *k);
  FILE *f = fopen(MIL_TEST_DATA "/onnx_known_failures.txt", "r");
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char *sp = strpbrk(line, " \t\n");
    if (sp) *sp = 0;
    k->names = realloc(k->names, (k->n + 1) * sizeof *k->names);
    k->seen = realloc(k->seen, (k->n + 1) * sizeof *k->seen);
    k->names[k->n] = strdup(line);
    k->seen[k->n++] = false;
  }
  fclose(f);
}

static int known_index(const known *k, const char *id) {
  for (size_t i = 0; i < k->n; i++)
    if (strcmp(k->names[i], id) == 0) return (int)i;
  return -1;
}

/* ---------- one test (in the child) ---------- */

static double elem(mil_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case MIL_DT_FP32: return ((const float *)p)[i];
  case MIL_DT_FP64: return ((const double *)p)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_BF16: return mil_bf16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)p)[i];
  case MIL_DT_INT16: return ((const int16_t *)p)[i];
  case MIL_DT_INT8: return ((const int8_t *)p)[i];
  case MIL_DT_UINT8: return ((const uint8_t *)p)[i];
  case MIL_DT_UINT16: return ((const uint16_t *)p)[i];
  case MIL_DT_UINT32: return ((const uint32_t *)p)[i];
  case MIL_DT_UINT64: return (double)((const uint64_t *)p)[i];
  case MIL_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return NAN;
  }
}

static int tfail(FILE *msg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(msg, fmt, ap);
  va_end(ap);
  return R_FAIL;
}

static int count_pb(const char *dir, const char *prefix) {
  int n = 0;
  char p[4096];
  for (;; n++) {
    if (snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, n) >= (int)sizeof p) return n;
    if (access(p, R_OK) != 0) return n;
  }
}

/* Reads a .pb; R_UNSUP when it is not a TensorProto (sequence / optional). */
static int read_pb(const char *path, mil_onnx_tensor **t, FILE *msg) {
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts o;
  memset(&o, 0, sizeof o);
  o.flags = MIL_ONNX_EXACT;
  mil_status st = mil_onnx_tensor_read(path, &o, t, &d);
  int r = R_PASS;
  if (st != MIL_OK) {
    fprintf(msg, "%s: %s", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : mil_status_str(st));
    r = R_UNSUP;
  }
  mil_diag_clear(&d);
  return r;
}

static int run_one(const char *dir, FILE *msg) {
  char path[4096], data[4096];
  if (snprintf(path, sizeof path, "%s/model.onnx", dir) >= (int)sizeof path ||
      snprintf(data, sizeof data, "%s/test_data_set_0", dir) >= (int)sizeof data)
    return tfail(msg, "path too long");
  mil_diag d;
  mil_diag_init(&d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *m = NULL;
  mil_status st = mil_convert(path, &o, &m, &d);
  if (st == MIL_ERR_UNSUPPORTED) {
    /* what iOS15 cannot express may be convertible for iOS18 */
    mil_diag_clear(&d);
    o.target = MIL_IOS18;
    st = mil_convert(path, &o, &m, &d);
  }
  if (st != MIL_OK) {
    fprintf(msg, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : mil_status_str(st));
    mil_diag_clear(&d);
    return st == MIL_ERR_UNSUPPORTED ? R_UNSUP : R_FAIL;
  }
  mil_interp *ip = NULL;
  st = mil_interp_new(mil_model_program(m), NULL, &ip, &d);
  int r = R_PASS;
  if (st != MIL_OK) {
    r = tfail(msg, "interpreter: %s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : mil_status_str(st));
    goto out;
  }
  mil_interp_set_max_iterations(ip, 100000);
  int n_in = count_pb(data, "input"), n_out = count_pb(data, "output");
  if (n_in != mil_interp_n_inputs(ip)) {
    r = tfail(msg, "%d input files for %d inputs", n_in, (int)mil_interp_n_inputs(ip));
    goto out;
  }
  for (int i = 0; i < n_in && r == R_PASS; i++) {
    if (snprintf(path, sizeof path, "%s/input_%d.pb", data, i) >= (int)sizeof path) break;
    mil_onnx_tensor *t = NULL;
    if ((r = read_pb(path, &t, msg)) != R_PASS) break;
    const mil_type *ty = mil_interp_input_type(ip, i);
    /* the program's dtype (narrowed): convert by value */
    mil_dtype want = ty->dtype;
    size_t esz = mil_dtype_size(want);
    void *buf = malloc(esz * (size_t)(t->numel ? t->numel : 1));
    /* ONNX's bfloat16 test data holds the bf16 bit patterns in a UINT16
     * tensor (numpy has no bfloat16); the importer makes a bfloat16 input
     * fp32, while a uint16 one becomes int32: such a pair is bf16 bits */
    bool bf16_bits = t->dtype == MIL_DT_UINT16 && want == MIL_DT_FP32;
    for (int64_t k = 0; k < t->numel; k++) {
      double v = bf16_bits ? mil_bf16_to_fp32(((const uint16_t *)t->data)[k]) : elem(t->dtype, t->data, k);
      switch (want) {
      case MIL_DT_FP32: ((float *)buf)[k] = (float)v; break;
      case MIL_DT_FP16: ((uint16_t *)buf)[k] = mil_fp32_to_fp16((float)v); break;
      case MIL_DT_INT32: ((int32_t *)buf)[k] = (int32_t)v; break;
      case MIL_DT_BOOL: ((uint8_t *)buf)[k] = v != 0; break;
      default: break;
      }
    }
    mil_tensor in = {want, t->rank, t->shape, buf, esz * (size_t)t->numel, t->numel};
    st = mil_interp_set_input(ip, mil_interp_input_name(ip, i), &in, &d);
    if (st != MIL_OK) r = tfail(msg, "input %d: %s", i, mil_diag_first_error(&d));
    free(buf);
    mil_onnx_tensor_free(t);
  }
  if (r != R_PASS) goto out;
  st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) {
    r = tfail(msg, "run: %s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : mil_status_str(st));
    goto out;
  }
  if (n_out != mil_interp_n_outputs(ip)) {
    r = tfail(msg, "%d output files for %d outputs", n_out, (int)mil_interp_n_outputs(ip));
    goto out;
  }
  for (int i = 0; i < n_out && r == R_PASS; i++) {
    if (snprintf(path, sizeof path, "%s/output_%d.pb", data, i) >= (int)sizeof path) break;
    mil_onnx_tensor *t = NULL;
    if ((r = read_pb(path, &t, msg)) != R_PASS) break;
    const mil_tensor *y = mil_interp_output_at(ip, i);
    bool same_shape = y && y->numel == t->numel && (y->rank == t->rank || t->numel == 1);
    for (int32_t k = 0; same_shape && k < t->rank && y->rank == t->rank; k++) same_shape = y->shape[k] == t->shape[k];
    if (!same_shape) {
      r = tfail(msg, "output %d: shape differs (rank %d, %lld elements; expected rank %d, %lld)", i, y ? (int)y->rank : -1,
               y ? (long long)y->numel : -1LL, (int)t->rank, (long long)t->numel);
    } else {
      bool bf16_bits = t->dtype == MIL_DT_UINT16 && y->dtype == MIL_DT_FP32; /* as for the inputs */
      for (int64_t k = 0; k < t->numel; k++) {
        double a = elem(y->dtype, y->data, k);
        double b = bf16_bits ? mil_bf16_to_fp32(((const uint16_t *)t->data)[k]) : elem(t->dtype, t->data, k);
        bool ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= ONNX_ATOL + ONNX_RTOL * fabs(b);
        if (!ok) {
          r = tfail(msg, "output %d: element %lld is %.9g, expected %.9g", i, (long long)k, a, b);
          break;
        }
      }
    }
    mil_onnx_tensor_free(t);
  }
out:
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  return r;
}

/* ---------- the table ---------- */

/* The ops the importer must cover (the ONNX importer issue's list). */
static const char *const k_required[] = {
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
    "BatchNormalization", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv",
    "ConvTranspose", "Cos", "Cosh", "CumSum", "DepthToSpace", "DequantizeLinear", "Div", "Dropout", "Einsum", "Elu",
    "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather", "GatherElements", "GatherND",
    "Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GridSample",
    "GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity", "If", "InstanceNormalization", "IsInf",
    "IsNaN", "LRN", "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Loop",
    "MatMul", "Max", "MaxPool", "Mean", "MeanVarianceNormalization", "Min", "Mish", "Mod", "Mul", "Neg", "NonZero",
    "Not", "OneHot", "Or", "PRelu", "Pad", "Pow", "QuantizeLinear", "RNN", "Range", "Reciprocal", "ReduceL1",
    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Relu", "Reshape", "Resize", "Round", "ScatterElements", "ScatterND", "Selu", "Shape", "Shrink",
    "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split",
    "Sqrt", "Squeeze", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu",
    "Unsqueeze", "Upsample", "Where", "Xor", "Attention", "RMSNormalization", "RotaryEmbedding", NULL};

static bool required(const char *op) {
  for (const char *const *r = k_required; *r; r++)
    if (strcmp(*r, op) == 0) return true;
  return false;
}

typedef struct suite_tally {
  int tests, passed, failed, skipped, req_tests, req_passed;
} suite_tally;

typedef struct op_row {
  char op[64];
  int tests, passed, failed, unsup;
} op_row;

static op_row *g_rows;
static size_t g_nrows;

static op_row *row_for(const char *op) {
  for (size_t i = 0; i < g_nrows; i++)
    if (strcmp(g_rows[i].op, op) == 0) return &g_rows[i];
  g_rows = realloc(g_rows, (g_nrows + 1) * sizeof *g_rows);
  op_row *r = &g_rows[g_nrows++];
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "%s", op);
  return r;
}

static void model_op(const char *dir, char *op, size_t n) {
  char path[4096];
  snprintf(op, n, "(graph)");
  if (snprintf(path, sizeof path, "%s/model.onnx", dir) >= (int)sizeof path) return;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)len + 1);
  if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, (size_t)len, buf);
    if (m && m->graph && m->graph->n_node == 1 && m->graph->node[0]->op_type)
      snprintf(op, n, "%s", m->graph->node[0]->op_type);
    if (m) onnx__model_proto__free_unpacked(m, NULL);
  }
  free(buf);
  fclose(f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_row(const void *a, const void *b) { return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op); }

static void test_conformance(void **state) {
  (void)state;
  known k;
  load_known(&k);
  const char *filter = getenv("MIL_ONNX_FILTER");
  int passed = 0, failed = 0, skipped = 0, unexpected = 0, known_fail = 0;
  suite_tally tally[4];
  memset(tally, 0, sizeof tally);
  for (size_t s = 0; s < sizeof k_suites / sizeof k_suites[0]; s++) {
    suite_tally *st = &tally[s];
    char sdir[4096];
    snprintf(sdir, sizeof sdir, "%s/%s", g_root, k_suites[s]);
    DIR *dd = opendir(sdir);
    if (!dd) continue;
    char **names = NULL;
    size_t nn = 0;
    for (struct dirent *e; (e = readdir(dd));) {
      if (e->d_name[0] == '.') continue;
      names = realloc(names, (nn + 1) * sizeof *names);
      names[nn++] = strdup(e->d_name);
    }
    closedir(dd);
    qsort(names, nn, sizeof *names, cmp_str);
    for (size_t t = 0; t < nn; t++) {
      char dir[4096], id[512], op[64];
      if (snprintf(dir, sizeof dir, "%s/%s", sdir, names[t]) >= (int)sizeof dir ||
          snprintf(id, sizeof id, "%s/%s", k_suites[s], names[t]) >= (int)sizeof id)
        continue;
      if (filter && !strstr(id, filter)) continue;
      model_op(dir, op, sizeof op);
      int fds[2];
      if (pipe(fds) != 0) continue;
      fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        FILE *msg = fdopen(fds[1], "w");
        int r = run_one(dir, msg);
        fclose(msg);
        _exit(r);
      }
      close(fds[1]);
      char why[2048] = "";
      size_t got = 0;
      ssize_t rd;
      while ((rd = read(fds[0], why + got, sizeof why - 1 - got)) > 0) got += (size_t)rd;
      why[got] = 0;
      close(fds[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      int r = WIFEXITED(status) ? WEXITSTATUS(status) : R_FAIL;
      if (WIFSIGNALED(status)) snprintf(why, sizeof why, "crashed (signal %d)", WTERMSIG(status));
      if (r > R_UNSUP) r = R_FAIL; /* e.g. a sanitizer's exit code */
      op_row *row = row_for(op);
      row->tests++;
      st->tests++;
      bool req = required(op);
      st->req_tests += req;
      st->req_passed += req && r == R_PASS;
      st->passed += r == R_PASS;
      st->failed += r == R_FAIL;
      st->skipped += r == R_UNSUP;
      int ki = known_index(&k, id);
      if (ki >= 0) k.seen[ki] = true;
      if (r == R_PASS) {
        passed++;
        row->passed++;
        if (ki >= 0) printf("note: %s passes but is listed in onnx_known_failures.txt\n", id);
      } else if (r == R_UNSUP) {
        skipped++;
        row->unsup++;
        if (filter) printf("unsupported: %s: %s\n", id, why);
      } else {
        failed++;
        row->failed++;
        if (ki >= 0) known_fail++;
        else unexpected++;
        if (ki < 0 || filter) printf("%s: %s: %s\n", ki < 0 ? "FAILED" : "known failure", id, why);
      }
    }
    for (size_t t = 0; t < nn; t++) free(names[t]);
    free(names);
  }
  qsort(g_rows, g_nrows, sizeof *g_rows, cmp_row);
  printf("\n%-28s %6s %7s %7s %12s\n", "op", "tests", "passed", "failed", "unsupported");
  for (size_t i = 0; i < g_nrows; i++)
    printf("%-28s %6d %7d %7d %12d\n", g_rows[i].op, g_rows[i].tests, g_rows[i].passed, g_rows[i].failed,
           g_rows[i].unsup);
  printf("\n%-18s %6s %7s %7s %8s   %s\n", "suite", "tests", "passed", "failed", "skipped",
         "single-op tests of the required ops: passed");
  for (size_t i = 0; i < 4; i++)
    if (tally[i].tests)
      printf("%-18s %6d %7d %7d %8d   %d of %d (%.1f%%)\n", k_suites[i], tally[i].tests, tally[i].passed, tally[i].failed,
             tally[i].skipped, tally[i].req_passed, tally[i].req_tests,
             tally[i].req_tests ? 100.0 * tally[i].req_passed / tally[i].req_tests : 0.0);
  printf("\nonnx conformance: %d passed, %d failed, %d skipped (%d known failures, %d unexpected)\n", passed, failed,
         skipped, known_fail, unexpected);
  for (size_t i = 0; i < k.n; i++) {
    if (!k.seen[i] && !filter) printf("note: %s is listed in onnx_known_failures.txt but was not run\n", k.names[i]);
    free(k.names[i]);
  }
  free(k.names);
  free(k.seen);
  free(g_rows);
  assert_int_equal(unexpected, 0);
}

int main(void) {
  g_root = getenv("MIL_ONNX_TESTDATA");
  if (!g_root) g_root = "/usr/share/libonnx-testdata/data";
  struct stat sb;
  char node[4096];
  snprintf(node, sizeof node, "%s/node", g_root);
  if (stat(node, &sb) != 0) {
    printf("SKIPPED: %s not found (install Debian's libonnx-testdata)\n", node);
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_conformance)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* mil verify A B: runs two models on the same inputs with the reference
 * interpreter and compares their outputs (numpy.allclose's rule). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "load.h"
#include "run_common.h"

static void help(void) {
  printf("usage: mil verify A B [--input NAME=FILE.npy|FILE.pb]... [--rtol R] [--atol A] [--seed S]\n"
         "                      [--function NAME]\n\n"
         "Run models A and B (.mlpackage, .mlmodel or .mil) on the CPU reference\n"
         "interpreter with the same inputs and compare their outputs. --input takes a\n"
         ".npy file or an ONNX TensorProto .pb (either dialect). Inputs not given\n"
         "are random within each input's dtype and shape (floats in [-1, 1), integers in\n"
         "[0, 10), symbolic dims as 1), drawn from --seed. Outputs are matched by name,\n"
         "or by position when the names differ. An output passes when every element has\n"
         "|a - b| <= atol + rtol * |b| (b from model B) and both agree on NaNs.\n"
         "For each output: max abs error, max rel error (over |b| > 0), PASS or FAIL.\n\n"
         "  --rtol R   relative tolerance (default 1e-3; 1e-2 when either model computes\n"
         "             in fp16, as DEFAULT-optimized models do)\n"
         "  --atol A   absolute tolerance (default 1e-4; 1e-2 when either model computes\n"
         "             in fp16)\n"
         "  --seed S   seed of the random inputs (default 0)\n"
         "Exit status: 0 all outputs pass, 1 an output fails or a model cannot run.\n");
}

typedef struct side {
  cli_loaded m;
  mil_interp *ip;
  cli_tensor *kept;
  bool loaded;
} side;

static void side_free(side *s) {
  for (int32_t i = 0; s->kept && s->ip && i < mil_interp_n_inputs(s->ip); i++) cli_tensor_free(&s->kept[i]);
  free(s->kept);
  mil_interp_free(s->ip);
  if (s->loaded) cli_unload(&s->m);
}

static mil_status open_side(const char *path, const char *function, side *s, mil_diag *d) {
  memset(s, 0, sizeof *s);
  mil_status st = cli_load(path, &s->m, d);
  if (st != MIL_OK) return st;
  s->loaded = true;
  if ((st = mil_interp_new(s->m.program, function, &s->ip, d)) != MIL_OK) return st;
  s->kept = calloc((size_t)mil_interp_n_inputs(s->ip) + 1, sizeof *s->kept);
  return s->kept ? MIL_OK : MIL_ERR_NOMEM;
}

/* Feeds B the inputs A got, converted to B's dtypes. */
static mil_status copy_inputs(side *a, side *b, mil_diag *d) {
  for (int32_t i = 0; i < mil_interp_n_inputs(b->ip); i++) {
    const char *name = mil_interp_input_name(b->ip, i);
    const mil_type *want = mil_interp_input_type(b->ip, i);
    if (want->kind == MIL_TYPE_STATE) continue;
    int32_t j = 0;
    while (j < mil_interp_n_inputs(a->ip) && strcmp(mil_interp_input_name(a->ip, j), name) != 0) j++;
    if (j == mil_interp_n_inputs(a->ip) && mil_interp_n_inputs(a->ip) == mil_interp_n_inputs(b->ip)) j = i;
    if (j >= mil_interp_n_inputs(a->ip) || !a->kept[j].buf)
      return mil_diag_error(d, MIL_ERR_INVALID, "model B's input '%s' has no counterpart in model A", name);
    const mil_tensor *src = &a->kept[j].t;
    cli_tensor *t = &b->kept[i];
    memset(t, 0, sizeof *t);
    mil_dtype dt = want->kind == MIL_TYPE_TENSOR && mil_dtype_size(want->dtype) ? want->dtype : src->dtype;
    size_t es = mil_dtype_size(dt);
    t->buf = malloc((size_t)(src->numel ? src->numel : 1) * es);
    if (!t->buf) return MIL_ERR_NOMEM;
    for (int32_t k = 0; k < src->rank; k++) t->shape[k] = src->shape[k];
    t->t = (mil_tensor){dt, src->rank, t->shape, t->buf, (size_t)src->numel * es, src->numel};
    if (dt == src->dtype) {
      memcpy(t->buf, src->data, src->nbytes);
    } else {
      for (int64_t e = 0; e < src->numel; e++) {
        double v = cli_tensor_get(src, e);
        switch (dt) {
        case MIL_DT_FP32: ((float *)t->buf)[e] = (float)v; break;
        case MIL_DT_FP16: ((uint16_t *)t->buf)[e] = mil_fp64_to_fp16(v); break;
        case MIL_DT_INT32: ((int32_t *)t->buf)[e] = (int32_t)v; break;
        case MIL_DT_BOOL: case MIL_DT_UINT8: ((uint8_t *)t->buf)[e] = (uint8_t)v; break;
        case MIL_DT_INT8: ((int8_t *)t->buf)[e] = (int8_t)v; break;
        case MIL_DT_FP64: ((double *)t->buf)[e] = v; break;
        default: return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "input '%s': cannot convert to %s", name, mil_dtype_name(dt));
        }
      }
    }
    mil_status st = mil_interp_set_input(b->ip, name, &t->t, d);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

/* Compares one output pair; prints its line; returns true on PASS. */
static int find_fp16(mil_op *op, void *ud) {
  (void)ud;
  if (mil_op_is_const(op)) return 0;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const mil_type *t = op->outputs[i]->type;
    if (t && t->kind == MIL_TYPE_TENSOR && t->dtype == MIL_DT_FP16) return 1;
  }
  return 0;
}

/* True when some non-const op of the program produces fp16: the model
 * computes (partly) in half precision, whose results differ from fp32 ones
 * by ~1e-3 relative per op. */
static bool computes_in_fp16(const side *s) { return mil_program_walk(s->m.program, find_fp16, NULL) != 0; }

static bool compare(const char *name, const mil_tensor *a, const mil_tensor *b, double rtol, double atol) {
  bool same_shape = a->rank == b->rank;
  for (int32_t i = 0; same_shape && i < a->rank; i++) same_shape = a->shape[i] == b->shape[i];
  if (!same_shape || a->numel != b->numel) {
    printf("%-24s FAIL  shapes differ\n", name);
    return false;
  }
  double max_abs = 0, max_rel = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = cli_tensor_get(a, i), y = cli_tensor_get(b, i);
    if (isnan(x) || isnan(y)) {
      if (isnan(x) != isnan(y)) bad++;
      continue;
    }
    double e = fabs(x - y);
    if (isinf(x) || isinf(y)) e = x == y ? 0 : INFINITY;
    if (e > max_abs) max_abs = e;
    if (y != 0 && e / fabs(y) > max_rel) max_rel = e / fabs(y);
    if (!(e <= atol + rtol * fabs(y))) bad++;
  }
  printf("%-24s %s  max abs %.3g  max rel %.3g", name, bad ? "FAIL" : "PASS", max_abs, max_rel);
  if (bad) printf("  (%lld of %lld elements outside tolerance)", (long long)bad, (long long)a->numel);
  printf("\n");
  return bad == 0;
}

int cmd_verify(int argc, char **argv) {
  const char *pa = NULL, *pb = NULL, *function = NULL;
  double rtol = 1e-3, atol = 1e-4;
  bool rtol_set = false, atol_set = false;
  uint64_t seed = 0;
  cli_input_arg *ins = calloc((size_t)argc + 1, sizeof *ins);
  int n_ins = 0, rc = CLI_OK;
  if (!ins) return CLI_FAIL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (cli_is_help(a)) {
      help();
      goto done;
    }
    if (!strcmp(a, "--input") && more) cli_parse_input_arg(argv[++i], &ins[n_ins++]);
    else if (!strcmp(a, "--rtol") && more) rtol = strtod(argv[++i], NULL), rtol_set = true;
    else if (!strcmp(a, "--atol") && more) atol = strtod(argv[++i], NULL), atol_set = true;
    else if (!strcmp(a, "--seed") && more) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(a, "--function") && more) function = argv[++i];
    else if (a[0] == '-' && a[1]) {
      rc = cli_usage_error("verify", "unknown or incomplete option '%s'", a);
      goto done;
    } else if (!pa) pa = a;
    else if (!pb) pb = a;
    else {
      rc = cli_usage_error("verify", "unexpected argument '%s'", a);
      goto done;
    }
  }
  if (!pa || !pb) {
    rc = cli_usage_error("verify", "needs two models A and B");
    goto done;
  }
  if (!(rtol >= 0) || !(atol >= 0)) {
    rc = cli_usage_error("verify", "--rtol and --atol must be non-negative numbers");
    goto done;
  }
  mil_diag d;
  mil_diag_init(&d);
  side A, B;
  uint64_t rs = seed;
  mil_status st = open_side(pa, function, &A, &d);
  if (st == MIL_OK) st = open_side(pb, function, &B, &d);
  else memset(&B, 0, sizeof B);
  if (st == MIL_OK && (computes_in_fp16(&A) || computes_in_fp16(&B))) {
    if (!rtol_set) rtol = 1e-2;
    if (!atol_set) atol = 1e-2;
  }
  if (st == MIL_OK) st = cli_set_inputs(A.ip, ins, n_ins, &rs, A.kept, &d);
  if (st == MIL_OK) st = copy_inputs(&A, &B, &d);
  if (st == MIL_OK && (st = mil_interp_run(A.ip, NULL, &d)) != MIL_OK)
    mil_diag_error(&d, st, "model A (%s) failed to run", pa);
  if (st == MIL_OK && (st = mil_interp_run(B.ip, NULL, &d)) != MIL_OK)
    mil_diag_error(&d, st, "model B (%s) failed to run", pb);
  bool pass = st == MIL_OK;
  if (st == MIL_OK) {
    int32_t na = mil_interp_n_outputs(A.ip), nb = mil_interp_n_outputs(B.ip);
    bool by_name = true;
    for (int32_t i = 0; i < na; i++) by_name &= mil_interp_output(B.ip, mil_interp_output_name(A.ip, i)) != NULL;
    if (!by_name && na != nb) {
      printf("outputs differ: A has %d, B has %d, and their names do not match\n", na, nb);
      pass = false;
    } else {
      if (!by_name) printf("(output names differ; matching outputs by position)\n");
      for (int32_t i = 0; i < na; i++) {
        const char *name = mil_interp_output_name(A.ip, i);
        const mil_tensor *tb = by_name ? mil_interp_output(B.ip, name) : mil_interp_output_at(B.ip, i);
        char label[256];
        if (by_name) snprintf(label, sizeof label, "%s", cli_esc(name));
        else snprintf(label, sizeof label, "%s / %s", cli_esc(name), cli_esc(mil_interp_output_name(B.ip, i)));
        pass &= compare(label, mil_interp_output_at(A.ip, i), tb, rtol, atol);
      }
      printf("%s (rtol %g, atol %g)\n", pass ? "PASS" : "FAIL", rtol, atol);
    }
  }
  side_free(&A);
  side_free(&B);
  cli_print_diag(&d);
  mil_diag_clear(&d);
  rc = pass ? CLI_OK : CLI_FAIL;
done:
  for (int i = 0; i < n_ins; i++) free((void *)ins[i].name);
  free(ins);
  return rc;
}

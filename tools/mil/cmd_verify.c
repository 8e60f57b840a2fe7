/* mil verify A B: runs two models on the same inputs with the reference
 * interpreter and compares their outputs (numpy.allclose's rule). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "load.h"
#include "mil/onnx.h"
#include "mil/ops.h"
#include "run_common.h"

static void help(void) {
  printf("usage: mil verify A B [--input NAME=FILE.npy|FILE.pb]... [--rtol R] [--atol A] [--seed S]\n"
         "                      [--function NAME]\n"
         "       mil verify MODEL --reference NAME=FILE.npy|FILE.pb... [--input NAME=FILE]... [options]\n\n"
         "Run models A and B (.mlpackage, .mlmodel or .mil) on the CPU reference\n"
         "interpreter with the same inputs and compare their outputs; or run MODEL and\n"
         "compare its outputs with reference arrays (--reference, repeatable: output\n"
         "NAME against FILE). --input and --reference take a .npy file or an ONNX\n"
         "TensorProto .pb (either dialect). Inputs not given are random within each\n"
         "input's dtype and shape (floats in [-1, 1), integers in [0, 10), symbolic dims\n"
         "as 1), drawn from --seed. Outputs are matched by name, or by position when the\n"
         "names differ. An output passes when every element has |a - b| <= atol + rtol * |b|\n"
         "(b from model B or the reference) and both agree on NaNs; an output of A that\n"
         "is NaN or inf where b is finite fails with a line of its own.\n"
         "For each output: max abs error, relative error (max abs error over the largest\n"
         "|b|, so it reads right when b is near zero), PASS or FAIL.\n"
         "A or B (or MODEL) may be an ONNX model (.onnx): its reference is then the ONNX\n"
         "graph's own semantics, the graph imported in fp32 without the pass pipeline\n"
         "(not `mil convert`'s default fp16 conversion), so an fp16 conversion shows its\n"
         "real error against it.\n\n"
         "  --reference NAME=FILE      expected value of output NAME (MODEL mode)\n"
         "  --input NAME=FILE          value of input NAME\n"
         "  --rtol R   relative tolerance (default 1e-3; 1e-2 when either model computes\n"
         "             in fp16, as DEFAULT-optimized models do)\n"
         "  --atol A   absolute tolerance (default 1e-4; 1e-2 when either model computes\n"
         "             in fp16)\n"
         "  --seed S   seed of the random inputs (default 0)\n"
         "  --function NAME  function to run (default: main, or the only one)\n"
         "Exit status: 0 all outputs pass, 1 an output fails or a model cannot run,\n"
         "2 usage error.\n");
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

static bool is_onnx(const char *path) {
  size_t n = strlen(path);
  return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

/* An ONNX model is verified by what its graph means, not by libmil's
 * default conversion: imported in fp32 without the pass pipeline (the ops
 * as the importer builds them, at the default deployment target, or iOS18
 * when an op needs a newer one). */
static mil_status load_onnx_reference(const char *path, cli_loaded *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_onnx_options o = {.target = 0}; /* the importer runs no pipeline: fp32 as built */
  mil_model *m = NULL;
  mil_diag first;
  mil_diag_init(&first);
  mil_status st = mil_onnx_import(path, &o, &m, &first);
  if (st == MIL_ERR_UNSUPPORTED) {
    o.target = MIL_IOS18;
    st = mil_onnx_import(path, &o, &m, d);
  } else {
    for (size_t i = 0; i < first.count; i++) mil_diag_add(d, first.msgs[i].severity, "%s", first.msgs[i].text);
  }
  mil_diag_clear(&first);
  if (st != MIL_OK) return st;
  out->model = m;
  out->program = mil_model_program(m);
  return MIL_OK;
}

static mil_status open_side(const char *path, const char *function, side *s, mil_diag *d) {
  memset(s, 0, sizeof *s);
  mil_status st = is_onnx(path) ? load_onnx_reference(path, &s->m, d) : cli_load(path, &s->m, d);
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

/* Compares one output pair; prints its line; returns true on PASS. The
 * relative error is the largest |a - b| over the largest |b|: unlike the
 * largest elementwise ratio it stays meaningful where b crosses zero. */
static bool compare(const char *name, const mil_tensor *a, const mil_tensor *b, double rtol, double atol) {
  bool same_shape = a->rank == b->rank;
  for (int32_t i = 0; same_shape && i < a->rank; i++) same_shape = a->shape[i] == b->shape[i];
  if (!same_shape || a->numel != b->numel) {
    printf("%-24s FAIL  shapes differ\n", name);
    return false;
  }
  if (a->dtype == MIL_DT_STRING || b->dtype == MIL_DT_STRING) { /* class labels compare as text */
    int64_t diff = a->dtype != b->dtype ? a->numel : 0;
    for (int64_t i = 0; !diff && i < a->numel; i++)
      diff += strcmp(((const char *const *)a->data)[i], ((const char *const *)b->data)[i]) != 0;
    printf("%-24s %s  %s\n", name, diff ? "FAIL" : "PASS", diff ? "labels differ" : "labels equal");
    return diff == 0;
  }
  double max_abs = 0, max_b = 0;
  int64_t bad = 0, nonfinite = 0; /* NaN / inf in a where b is finite */
  for (int64_t i = 0; i < a->numel; i++) {
    double x = cli_tensor_get(a, i), y = cli_tensor_get(b, i);
    if (!isfinite(x) && isfinite(y)) nonfinite++;
    if (isnan(x) || isnan(y)) {
      if (isnan(x) != isnan(y)) bad++;
      continue;
    }
    double e = fabs(x - y);
    if (isinf(x) || isinf(y)) e = x == y ? 0 : INFINITY;
    if (e > max_abs) max_abs = e;
    if (isfinite(y) && fabs(y) > max_b) max_b = fabs(y);
    if (!(e <= atol + rtol * fabs(y))) bad++;
  }
  printf("%-24s %s  max abs %.3g  rel %.3g (of max |b| %.3g)", name, bad ? "FAIL" : "PASS", max_abs,
         max_b > 0 ? max_abs / max_b : max_abs > 0 ? INFINITY : 0.0, max_b);
  if (bad) printf("  (%lld of %lld elements outside tolerance)", (long long)bad, (long long)a->numel);
  printf("\n");
  if (nonfinite)
    printf("%-24s FAIL  %lld of %lld elements are NaN/inf where b is finite (an fp16 overflow? see mil convert "
           "--sample)\n", name, (long long)nonfinite, (long long)a->numel);
  return bad == 0 && nonfinite == 0;
}

/* Compares model A's outputs with --reference arrays; returns true when all pass. */
static bool compare_references(side *A, const cli_input_arg *refs, int n_refs, double rtol, double atol, mil_diag *d) {
  bool pass = true;
  for (int k = 0; k < n_refs; k++) {
    const mil_tensor *ta = refs[k].name ? mil_interp_output(A->ip, refs[k].name)
                           : mil_interp_n_outputs(A->ip) == 1 ? mil_interp_output_at(A->ip, 0) : NULL;
    const char *name = cli_esc(refs[k].name ? refs[k].name : mil_interp_output_name(A->ip, 0));
    if (!ta) {
      printf("%-24s FAIL  no such output (the model's outputs:", name ? name : "?");
      for (int32_t i = 0; i < mil_interp_n_outputs(A->ip); i++) printf(" %s", cli_esc(mil_interp_output_name(A->ip, i)));
      printf(")\n");
      pass = false;
      continue;
    }
    cli_tensor r;
    if (cli_tensor_from_npy(refs[k].file, name, NULL, &r, d) != MIL_OK) {
      printf("%-24s FAIL  cannot read the reference %s\n", name, refs[k].file);
      pass = false;
      continue;
    }
    pass &= compare(name, ta, &r.t, rtol, atol);
    cli_tensor_free(&r);
  }
  return pass;
}

/* Compares the outputs of A and B, by name or else by position. */
static bool compare_models(side *A, side *B, double rtol, double atol) {
  int32_t na = mil_interp_n_outputs(A->ip), nb = mil_interp_n_outputs(B->ip);
  bool by_name = true, pass = true;
  for (int32_t i = 0; i < na; i++) by_name &= mil_interp_output(B->ip, mil_interp_output_name(A->ip, i)) != NULL;
  if (!by_name && na != nb) {
    printf("outputs differ: A has %d, B has %d, and their names do not match\n", na, nb);
    return false;
  }
  if (!by_name) printf("(output names differ; matching outputs by position)\n");
  for (int32_t i = 0; i < na; i++) {
    const char *name = mil_interp_output_name(A->ip, i);
    const mil_tensor *tb = by_name ? mil_interp_output(B->ip, name) : mil_interp_output_at(B->ip, i);
    char label[256];
    if (by_name) snprintf(label, sizeof label, "%s", cli_esc(name));
    else snprintf(label, sizeof label, "%s / %s", cli_esc(name), cli_esc(mil_interp_output_name(B->ip, i)));
    pass &= compare(label, mil_interp_output_at(A->ip, i), tb, rtol, atol);
  }
  return pass;
}

int cmd_verify(int argc, char **argv) {
  const char *pa = NULL, *pb = NULL, *function = NULL;
  double rtol = 1e-3, atol = 1e-4;
  bool rtol_set = false, atol_set = false;
  uint64_t seed = 0;
  cli_input_arg *ins = calloc((size_t)argc + 1, sizeof *ins), *refs = calloc((size_t)argc + 1, sizeof *refs);
  int n_ins = 0, n_refs = 0, rc = CLI_OK;
  if (!ins || !refs) {
    free(ins);
    free(refs);
    return CLI_FAIL;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (cli_is_help(a)) {
      help();
      goto done;
    }
    if (!strcmp(a, "--input") && more) rc = cli_add_input_arg("verify", argv[++i], ins, &n_ins);
    else if (!strcmp(a, "--reference") && more) {
      rc = cli_add_input_arg("verify", argv[++i], refs, &n_refs);
    } else if (!strcmp(a, "--rtol") && more) rc = cli_parse_nonneg("verify", a, argv[++i], &rtol), rtol_set = true;
    else if (!strcmp(a, "--atol") && more) rc = cli_parse_nonneg("verify", a, argv[++i], &atol), atol_set = true;
    else if (!strcmp(a, "--seed") && more) rc = cli_parse_u64("verify", a, argv[++i], &seed);
    else if (!strcmp(a, "--function") && more) function = argv[++i];
    else if (a[0] == '-' && a[1]) rc = cli_usage_error("verify", "unknown or incomplete option '%s'", a);
    else if (!pa) pa = a;
    else if (!pb) pb = a;
    else rc = cli_usage_error("verify", "unexpected argument '%s'", a);
    if (rc != CLI_OK) goto done;
  }
  if (n_refs && pb) {
    rc = cli_usage_error("verify", "--reference compares one model with arrays; got two models");
    goto done;
  }
  if (!pa || (!pb && !n_refs)) {
    rc = cli_usage_error("verify", "needs two models A and B, or a MODEL and --reference NAME=FILE.npy");
    goto done;
  }
  mil_diag d;
  mil_diag_init(&d);
  side A, B;
  memset(&B, 0, sizeof B);
  uint64_t rs = seed;
  const char *failed = NULL, *stage = "loaded"; /* the model that could not be loaded or run */
  mil_status st = open_side(pa, function, &A, &d);
  if (st != MIL_OK) failed = pa;
  if (st == MIL_OK && pb && (st = open_side(pb, function, &B, &d)) != MIL_OK) failed = pb;
  if (st == MIL_OK) stage = "given its inputs";
  if (st == MIL_OK && (computes_in_fp16(&A) || (pb && computes_in_fp16(&B)))) {
    if (!rtol_set) rtol = 1e-2;
    if (!atol_set) atol = 1e-2;
  }
  if (st == MIL_OK && (st = cli_set_inputs(A.ip, ins, n_ins, &rs, A.kept, &d)) != MIL_OK) failed = pa;
  if (st == MIL_OK && pb && (st = copy_inputs(&A, &B, &d)) != MIL_OK) failed = pb;
  if (st == MIL_OK) stage = "run";
  if (st == MIL_OK && (st = mil_interp_run(A.ip, NULL, &d)) != MIL_OK) failed = pa;
  if (st == MIL_OK && pb && (st = mil_interp_run(B.ip, NULL, &d)) != MIL_OK) failed = pb;
  bool pass = st == MIL_OK;
  if (st == MIL_OK) {
    pass = pb ? compare_models(&A, &B, rtol, atol) : compare_references(&A, refs, n_refs, rtol, atol, &d);
    if (pb) printf("%s: %s %s %s (rtol %g, atol %g)\n", pass ? "PASS" : "FAIL", pb, pass ? "matches" : "differs from",
                   pa, rtol, atol);
    else printf("%s: %s %s the reference (rtol %g, atol %g)\n", pass ? "PASS" : "FAIL", pa,
                pass ? "matches" : "differs from", rtol, atol);
  }
  side_free(&A);
  side_free(&B);
  cli_print_diag(&d);
  if (failed) fprintf(stderr, "mil: error: model %s%s could not be %s\n", failed == pa && pb ? "A " : failed == pb ? "B " : "",
                      failed, stage);
  mil_diag_clear(&d);
  rc = pass ? CLI_OK : CLI_FAIL;
done:
  for (int i = 0; i < n_ins; i++) free((void *)ins[i].name);
  for (int i = 0; i < n_refs; i++) free((void *)refs[i].name);
  free(ins);
  free(refs);
  return rc;
}

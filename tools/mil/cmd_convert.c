/* mil convert IN OUT: rewrite a model in the format OUT's extension names;
 * an ONNX model (.onnx) is imported (mil/onnx.h) and optimized with the
 * pipeline ct.convert runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/onnx.h"
#include "mil/ops.h"

/* One line on stderr per ONNX input / output the import renamed. */
static void print_rename(void *ud, bool is_output, const char *mil_name, const char *onnx_name) {
  (void)ud;
  fprintf(stderr, "mil convert: ONNX %s '%s' is named '%s' in the model%s\n", is_output ? "output" : "input",
          onnx_name, mil_name, is_output ? "" : " (mil run --input takes either name)");
}

static void help(void) {
  printf("usage: mil convert [--target iOS15..iOS18] [--spec-version N] [--inline-weights] IN OUT\n"
         "       mil convert MODEL.onnx OUT [--target iOS15..iOS18] [--precision fp16|fp32]\n"
         "                   [--pipeline NAME] [--input-shape NAME=D1,D2,...]... [--inline-weights]\n"
         "                   [--sample NAME=FILE.npy]... [--sample-tolerance T]\n"
         "                   [--input-value NAME=V1,V2,...]...\n"
         "       mil convert --list-ops\n\n"
         "Read model IN (.mlpackage, .mlmodel, .mil or .onnx) and write it to OUT, in the\n"
         "format OUT's extension names:\n"
         "  .mlpackage  a Core ML package (Manifest.json, model.mlmodel, weights/weight.bin)\n"
         "  .mlmodel    the bare Model protobuf; large consts go to a weight file of\n"
         "              its own, weights/<name>.<16 hex>.bin next to it (fresh on each\n"
         "              save), where coremltools' MLModel(spec, weights_dir=...) and\n"
         "              `mil` look for them; not inside a .mlpackage\n"
         "  .mil        MIL text in the complete form; consts that would go to\n"
         "              weight.bin go to a weight file beside it (net.mil ->\n"
         "              net.weight.bin), referred to as @blob(\"net.weight.bin\", offset)\n"
         "Consts with at least 10 elements of a weight-file dtype go to weight.bin,\n"
         "as coremltools does. The model description is kept where it still fits the\n"
         "program and synthesized otherwise (a .mil input has none). OUT is replaced\n"
         "atomically (a .mlmodel with its weight file as a pair): a crash or Ctrl-C\n"
         "at any moment leaves the old OUT or the new one, and no temporaries.\n\n"
         "options:\n"
         "  --target T        retarget the program to opset T (iOS15, iOS16, iOS17,\n"
         "                    iOS18 or iOS26) and write that specification version, as\n"
         "                    ct.convert(minimum_deployment_target=T): every op must\n"
         "                    exist in T with inputs T accepts. Needed to write a\n"
         "                    CoreML3/CoreML4 program (iOS13/iOS14) as an ML Program.\n"
         "                    For ONNX input: the deployment target (default iOS15)\n"
         "  --spec-version N  write specification version N (6..10); default: keep\n"
         "                    the input's (for .mil: the one its opset implies)\n"
         "  --inline-weights  .mil output: every const value in the text, no weight file\n\n"
         "ONNX models (IN ending in .onnx) are imported: initializers become consts,\n"
         "graph inputs and outputs the function's I/O (int64 and double as int32 and\n"
         "fp32), each node the MIL ops coremltools' frontends emit; then the pass\n"
         "pipeline runs as ct.convert runs it. Options for ONNX input:\n"
         "  --precision P     fp16 (default: the pipeline with add_fp16_cast) or fp32\n"
         "  --pipeline NAME   the pass pipeline (default: default; empty: none)\n"
         "  --input-shape NAME=D1,D2,...\n"
         "                    fix the shape of input NAME (repeatable); dims the model\n"
         "                    leaves symbolic (dim_param) stay symbolic otherwise\n"
         "  --input-value NAME=V1,V2,...\n"
         "                    fix input NAME to these numbers (repeatable; its\n"
         "                    declared static shape, or a scalar for one value): it\n"
         "                    becomes a const and leaves the model's inputs, and an If\n"
         "                    on it (a sample rate) converts only the branch it takes\n"
         "  --sample NAME=FILE.npy\n"
         "                    a sample value of input NAME (repeatable; every input\n"
         "                    needs one; the ONNX name or the model's). With fp16\n"
         "                    precision the program runs with the interpreter\n"
         "                    through the fp32 and the fp16 pipelines on the samples,\n"
         "                    and the ops whose fp16 result overflows (inf/NaN where\n"
         "                    fp32 is finite) or is off by more than the tolerance\n"
         "                    stay fp32 (coremltools' FP16ComputePrecision\n"
         "                    op_selector); each is reported on stderr with its reason\n"
         "  --sample-tolerance T\n"
         "                    fraction of an op's largest fp32 magnitude its fp16\n"
         "                    result may be off by (default 0.01)\n"
         "  --list-ops        print the ONNX ops libmil converts (op x opset range)\n");
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int list_ops(void) {
  printf("%-28s %-10s %-8s %-16s %s\n", "op_type", "domain", "opsets", "family", "MIL ops");
  for (size_t i = 0; i < mil_onnx_op_count(); i++) {
    const mil_onnx_op_info *o = mil_onnx_op_at(i);
    char range[32];
    snprintf(range, sizeof range, "%d-%d", o->since, o->until);
    printf("%-28s %-10s %-8s %-16s %s\n", o->op_type, o->domain[0] ? o->domain : "ai.onnx", range, o->family, o->mil_ops);
  }
  return CLI_OK;
}

/* "NAME=1,3,224,224" -> shape entry; false on a malformed spec. */
static bool parse_shape(const char *spec, mil_onnx_input_shape *out, int64_t *dims) {
  const char *eq = strrchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) return false;
  char *name = strndup(spec, (size_t)(eq - spec));
  if (!name) return false;
  int32_t r = 0;
  const char *p = eq + 1;
  while (*p && r < 32) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || (*end && *end != ',')) {
      free(name);
      return false;
    }
    dims[r++] = v;
    p = *end ? end + 1 : end;
  }
  out->name = name;
  out->rank = r;
  out->dims = dims;
  return true;
}

typedef struct onnx_args {
  mil_onnx_options o;
  mil_onnx_input_shape shapes[64];
  int64_t dims[64][32];
  mil_onnx_sample samples[64];
  mil_npy *npys[64];
  void *bufs[64];
  mil_onnx_sample values[64];
  double vals[64][256];
} onnx_args;

/* "NAME=V1,V2,..." -> a fixed input value (fp64; rank 0 for one value,
 * else -1: the input's declared shape); false on a malformed spec. */
static bool parse_value(onnx_args *oa, const char *spec) {
  int32_t k = oa->o.n_input_values;
  const char *eq = strrchr(spec, '=');
  if (k >= 64 || !eq || eq == spec || !eq[1]) return false;
  int64_t n = 0;
  for (const char *p = eq + 1; *p && n < 256;) {
    char *end;
    double v = strtod(p, &end);
    if (end == p || (*end && *end != ',')) return false;
    oa->vals[k][n++] = v;
    p = *end ? end + 1 : end;
  }
  char *name = strndup(spec, (size_t)(eq - spec));
  if (!name) return false;
  oa->values[k].name = name;
  oa->values[k].value = (mil_tensor){MIL_DT_FP64, n == 1 ? 0 : -1, NULL, oa->vals[k], (size_t)n * 8, n};
  oa->o.n_input_values = k + 1;
  oa->o.input_values = oa->values;
  return true;
}

/* "NAME=FILE.npy" -> a sample (fp32 from any float, int32 from any
 * integer or bool array); false with an error printed. */
static bool load_sample(onnx_args *oa, const char *spec) {
  int32_t k = oa->o.n_samples;
  const char *eq = strchr(spec, '=');
  if (k >= 64 || !eq || eq == spec || !eq[1]) {
    fprintf(stderr, "mil convert: --sample expects NAME=FILE.npy, got '%s'\n", spec);
    return false;
  }
  mil_diag d;
  mil_diag_init(&d);
  mil_npy *a = NULL;
  if (mil_npy_read(eq + 1, &a, &d) != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return false;
  }
  mil_diag_clear(&d);
  oa->npys[k] = a;
  bool fl = a->dtype == MIL_DT_FP32 || a->dtype == MIL_DT_FP64;
  bool in = a->dtype == MIL_DT_INT32 || a->dtype == MIL_DT_INT64 || a->dtype == MIL_DT_INT16 || a->dtype == MIL_DT_INT8 ||
            a->dtype == MIL_DT_UINT8 || a->dtype == MIL_DT_UINT16 || a->dtype == MIL_DT_BOOL;
  if (!fl && !in) {
    fprintf(stderr, "mil convert: --sample %s: dtype %s; expected a float or integer array\n", spec,
            mil_dtype_name(a->dtype));
    return false;
  }
  void *buf = malloc((size_t)(a->numel ? a->numel : 1) * 4);
  if (!buf) return false;
  oa->bufs[k] = buf;
  for (int64_t i = 0; i < a->numel; i++) {
    const char *src = a->data;
    switch (a->dtype) {
    case MIL_DT_FP32: ((float *)buf)[i] = ((const float *)src)[i]; break;
    case MIL_DT_FP64: ((float *)buf)[i] = (float)((const double *)src)[i]; break;
    case MIL_DT_INT32: ((int32_t *)buf)[i] = ((const int32_t *)src)[i]; break;
    case MIL_DT_INT64: ((int32_t *)buf)[i] = (int32_t)((const int64_t *)src)[i]; break;
    case MIL_DT_INT16: ((int32_t *)buf)[i] = ((const int16_t *)src)[i]; break;
    case MIL_DT_INT8: ((int32_t *)buf)[i] = ((const int8_t *)src)[i]; break;
    case MIL_DT_UINT16: ((int32_t *)buf)[i] = ((const uint16_t *)src)[i]; break;
    default: ((int32_t *)buf)[i] = ((const uint8_t *)src)[i]; break; /* uint8, bool */
    }
  }
  oa->samples[k].name = strndup(spec, (size_t)(eq - spec));
  oa->samples[k].value = (mil_tensor){fl ? MIL_DT_FP32 : MIL_DT_INT32, a->rank, a->shape, buf, (size_t)a->numel * 4,
                                      a->numel};
  oa->o.n_samples = k + 1;
  oa->o.samples = oa->samples;
  return oa->samples[k].name != NULL;
}

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  int spec = 0, target = 0;
  bool inline_weights = false;
  onnx_args *oa = calloc(1, sizeof *oa);
  if (!oa) return CLI_FAIL;
  bool onnx_opts = false;
  int rc = CLI_OK;
#define USAGE(...)                                 \
  do {                                             \
    rc = cli_usage_error("convert", __VA_ARGS__); \
    goto done;                                     \
  } while (0)
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(argv[i])) {
      help();
      goto done;
    } else if (strcmp(s, "--list-ops") == 0) {
      rc = list_ops();
      goto done;
    } else if (strcmp(s, "--inline-weights") == 0) {
      inline_weights = true;
    } else if (strcmp(s, "--target") == 0) {
      if (i + 1 >= argc) USAGE("--target needs a value");
      if ((rc = cli_parse_target("convert", argv[++i], &target)) != CLI_OK) goto done;
    } else if (strcmp(s, "--precision") == 0 || strcmp(s, "--pipeline") == 0 || strcmp(s, "--input-shape") == 0) {
      if (i + 1 >= argc) USAGE("%s needs a value", s);
      const char *v = argv[++i];
      onnx_opts = true;
      if (s[3] == 'r') {
        if (strcmp(v, "fp16") && strcmp(v, "fp32")) USAGE("--precision must be fp16 or fp32, got '%s'", v);
        oa->o.fp32 = strcmp(v, "fp32") == 0;
      } else if (s[3] == 'i') {
        oa->o.pipeline = v;
      } else {
        int32_t k = oa->o.n_input_shapes;
        if (k >= 64 || !parse_shape(v, &oa->shapes[k], oa->dims[k]))
          USAGE("--input-shape expects NAME=D1,D2,... with dims >= 0, got '%s'", v);
        oa->o.n_input_shapes = k + 1;
      }
    } else if (strcmp(s, "--sample") == 0) {
      if (i + 1 >= argc) USAGE("--sample needs NAME=FILE.npy");
      onnx_opts = true;
      if (!load_sample(oa, argv[++i])) {
        rc = CLI_FAIL;
        goto done;
      }
    } else if (strcmp(s, "--input-value") == 0) {
      if (i + 1 >= argc) USAGE("--input-value needs NAME=V1,V2,...");
      onnx_opts = true;
      if (!parse_value(oa, argv[++i])) USAGE("--input-value expects NAME=V1,V2,... (numbers), got '%s'", argv[i]);
    } else if (strcmp(s, "--sample-tolerance") == 0) {
      if (i + 1 >= argc) USAGE("--sample-tolerance needs a value");
      char *end;
      double v = strtod(argv[++i], &end);
      if (*end || !(v > 0) || v >= 1) USAGE("--sample-tolerance must be in (0, 1), got '%s'", argv[i]);
      oa->o.sample_tolerance = v;
      onnx_opts = true;
    } else if (strcmp(argv[i], "--spec-version") == 0) {
      if (i + 1 >= argc) USAGE("--spec-version needs a value");
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < MIL_SPEC_VERSION_MIN || v > MIL_SPEC_VERSION_MAX)
        USAGE("--spec-version must be %d..%d, got '%s'", MIL_SPEC_VERSION_MIN, MIL_SPEC_VERSION_MAX, argv[i]);
      spec = (int)v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      USAGE("unknown option '%s'", argv[i]);
    } else if (!in) {
      in = argv[i];
    } else if (!out) {
      out = argv[i];
    } else {
      USAGE("unexpected argument '%s'", argv[i]);
    }
  }
  if (!in || !out) USAGE("expected IN and OUT");
  if (!cli_output_format_ok(out, false))
    USAGE("%s: unknown output format; choose one of .mlpackage, .mlmodel, .mil", out);
  bool to_text = ends_with(out, ".mil");
  if (inline_weights && !to_text) USAGE("--inline-weights applies to .mil output only");
  bool onnx = ends_with(in, ".onnx");
  if (onnx_opts && !onnx)
    USAGE("--precision, --pipeline, --input-shape, --input-value and --sample apply to .onnx input only");
  oa->o.input_shapes = oa->shapes;
  if (onnx) oa->o.target = target;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_status st = onnx ? mil_onnx_import(in, &oa->o, &m, &d) : mil_model_load(in, &m, &d);
  if (st == MIL_OK && onnx) (void)mil_onnx_renames(m, print_rename, NULL);
  if (st == MIL_OK && target && !onnx) st = mil_program_retarget(mil_model_program(m), target, &d);
  if (st == MIL_OK && target && !onnx && !spec) st = mil_model_set_spec_version(m, target);
  if (st == MIL_OK && spec) st = mil_model_set_spec_version(m, spec);
  if (st == MIL_OK)
    st = to_text ? mil_save_text(mil_model_program(m), out, inline_weights, &d) : mil_model_save(m, out, &d);
  if (st != MIL_OK) {
    cli_print_diag(&d);
    if (d.n_errors == 0) fprintf(stderr, "mil: error: convert failed: %s\n", mil_status_str(st));
    rc = CLI_FAIL;
  }
  else if (d.n_warnings || oa->o.n_samples)
    cli_print_diag(&d);
  mil_model_free(m);
  mil_diag_clear(&d);
done:
  for (int32_t k = 0; k < oa->o.n_input_shapes; k++) free((char *)oa->shapes[k].name);
  for (int32_t k = 0; k < 64; k++) {
    free((char *)oa->samples[k].name);
    free((char *)oa->values[k].name);
    free(oa->bufs[k]);
    mil_npy_free(oa->npys[k]);
  }
  free(oa);
  return rc;
#undef USAGE
}

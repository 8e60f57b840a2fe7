/* mil convert IN OUT: rewrite a model in the format OUT's extension names;
 * an ONNX model (.onnx) is imported and optimized with the pipeline
 * ct.convert runs. Both go through mil_convert (mil/convert.h). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "convert_iface.h"
#include "load.h"
#include "mil/convert.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/onnx.h"
#include "mil/ops.h"
#include "opt_summary.h"

/* One line on stderr per ONNX input / output the import renamed. */
static void print_rename(void *ud, bool is_output, const char *mil_name, const char *onnx_name) {
  (void)ud;
  fprintf(stderr, "mil convert: ONNX %s '%s' is named '%s' in the model%s\n", is_output ? "output" : "input",
          onnx_name, mil_name, is_output ? "" : " (mil run --input takes either name)");
}

static void help(void) {
  printf("usage: mil convert [--target iOS15..iOS18] [--spec-version N] [--inline-weights] [--quiet] IN OUT\n"
         "       mil convert MODEL.onnx OUT [--target iOS15..iOS18] [--precision fp16|fp32]\n"
         "                   [--pipeline NAME] [--inline-weights] [--quiet] [model-interface options]\n"
         "                   [--input-value NAME=V1,V2,...]...\n"
         "                   [--sample NAME=FILE.npy]... [--sample-tolerance T]\n"
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
         "  --inline-weights  .mil output: every const value in the text, no weight file\n"
         "  --quiet           print nothing but errors\n"
         "On success a line on standard error says what was written: the file, its\n"
         "specification version and target, ops, weights and the time taken; on a\n"
         "terminal, standard error also shows what is being done meanwhile.\n\n"
         "ONNX models (IN ending in .onnx) are imported: initializers become consts,\n"
         "graph inputs and outputs the function's I/O (int64 and double as int32 and\n"
         "fp32), each node the MIL ops coremltools' frontends emit; then the pass\n"
         "pipeline runs as ct.convert runs it. Options for ONNX input:\n"
         "  --precision P     fp16 (default: the pipeline with add_fp16_cast) or fp32\n"
         "  --pipeline NAME   the pass pipeline (default: default; empty: none)\n"
         "  --nms-max-boxes N the boxes per class a NonMaxSuppression whose number of\n"
         "                    boxes is known only at run time returns at most (default:\n"
         "                    its constant max_output_boxes_per_class)\n"
         "  --list-ops        print the ONNX ops libmil converts (op x opset range)\n\n"
         "The model's interface, as ct.convert's inputs / outputs / classifier_config\n"
         "make it (ONNX input; names are the ONNX graph's):\n"
         "  --input-shape NAME=D1,D2,...\n"
         "                    the shape of input NAME: each dim N (fixed), L..U\n"
         "                    (ct.RangeDim(L, U), default L) or L..U:D (default D);\n"
         "                    given again for NAME: ct.EnumeratedShapes (the first is\n"
         "                    the default). Dims the model leaves symbolic (dim_param)\n"
         "                    stay symbolic otherwise\n"
         "  --sample NAME=FILE.npy\n"
         "                    a sample value of input NAME (repeatable; every input\n"
         "                    needs one; the ONNX name or the model's). With fp16\n"
         "                    precision the program runs with the interpreter\n"
         "                    through the fp32 and the fp16 pipelines on the samples,\n"
         "                    and the ops whose fp16 result overflows (inf/NaN where\n"
         "                    fp32 is finite) or is off by more than the tolerance\n"
         "                    stay fp32 (coremltools' FP16ComputePrecision\n"
         "                    op_selector); each is reported on stderr with its reason.\n"
         "                    Without a sample, ops whose ranges (from consts and\n"
         "                    integer inputs' types) reach beyond fp16 are warned about\n"
         "  --sample-tolerance T\n"
         "                    fraction of an op's largest fp32 magnitude its fp16\n"
         "                    result may be off by (default 0.01)\n"
         "  --input-value NAME=V1,V2,...\n"
         "                    fix input NAME to these numbers (repeatable; its\n"
         "                    declared static shape, or a scalar for one value): it\n"
         "                    becomes a const and leaves the model's inputs, and an If\n"
         "                    on it (a sample rate) converts only the branch it takes\n"
         "  --input-dtype NAME=fp16|fp32|int32\n"
         "                    the input's dtype (fp16 needs --target iOS16+). With\n"
         "                    --target iOS16+ and fp16 precision, fp32 inputs and\n"
         "                    outputs not typed otherwise become fp16, as ct.convert\n"
         "                    does (use_default_fp16_io)\n"
         "  --image NAME[:scale=S][:bias=B|B1,B2,B3][:color_layout=RGB|BGR|G|G_FLOAT16]\n"
         "                    input NAME is an image (ct.ImageType): shape (1, 3, H, W)\n"
         "                    (G: (1, 1, H, W)); the model computes x * S + B first\n"
         "                    (S may be a fraction such as 1/255)\n"
         "  --output NAME[:DTYPE]\n"
         "                    name (and dtype) of the next output, in order (repeatable)\n"
         "  --class-labels FILE\n"
         "                    a classifier (ct.ClassifierConfig): one label per line\n"
         "                    (all integers: int64 labels); outputs classLabel and\n"
         "                    classLabel_probs\n"
         "  --predicted-feature-name NAME         the label output's name (classLabel)\n"
         "  --predicted-probabilities-output VAR  the probabilities var (default: the\n"
         "                    last op's output)\n"
         "  --author S, --license S, --short-description S, --version S\n"
         "                    the model's metadata (MLModel.author, ...)\n"
         "  --metadata KEY=VALUE  a user-defined metadata entry (repeatable)\n"
         "Example: an app-ready image classifier\n"
         "  mil convert net.onnx Net.mlpackage --target iOS16 \\\n"
         "      --image input:scale=1/255:bias=-0.485,-0.456,-0.406 --class-labels labels.txt\n"
         "  mil run Net.mlpackage --input input=photo.jpg\n");
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

typedef struct onnx_args {
  mil_convert_options o;
  mil_onnx_input_value values[64];
  double vals[64][256];
  mil_convert_sample samples[64];
  mil_npy *npys[64];
  void *bufs[64];
} onnx_args;

/* "NAME=FILE.npy" -> a sample (fp32 from any float, int32 from any
 * integer or bool array); false with an error printed. */
static bool load_sample(onnx_args *oa, const char *spec) {
  int32_t k = oa->o.n_samples;
  const char *eq = strchr(spec, '=');
  if (k >= 64 || !eq || eq == spec || !eq[1]) {
    fprintf(stderr, "mil: error: convert: --sample expects NAME=FILE.npy, got '%s'\n", spec);
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
  bool fl = a->dtype == MIL_DT_FP32 || a->dtype == MIL_DT_FP64 || a->dtype == MIL_DT_FP16;
  bool in = a->dtype == MIL_DT_INT32 || a->dtype == MIL_DT_INT64 || a->dtype == MIL_DT_INT16 || a->dtype == MIL_DT_INT8 ||
            a->dtype == MIL_DT_UINT8 || a->dtype == MIL_DT_UINT16 || a->dtype == MIL_DT_BOOL;
  if (!fl && !in) {
    fprintf(stderr, "mil: error: convert: --sample %s: dtype %s; expected a float or integer array\n", spec,
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
    case MIL_DT_FP16: ((float *)buf)[i] = mil_fp16_to_fp32(((const uint16_t *)src)[i]); break;
    case MIL_DT_INT32: ((int32_t *)buf)[i] = ((const int32_t *)src)[i]; break;
    case MIL_DT_INT64: {
      int64_t x = ((const int64_t *)src)[i];
      if (x < INT32_MIN || x > INT32_MAX) {
        fprintf(stderr, "mil: error: convert: --sample %s: element %lld is %lld, beyond int32\n", spec, (long long)i,
                (long long)x);
        return false;
      }
      ((int32_t *)buf)[i] = (int32_t)x;
      break;
    }
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

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  int spec = 0, target = 0;
  bool inline_weights = false, quiet = false;
  double t0 = opt_now();
  onnx_args *oa = calloc(1, sizeof *oa);
  convert_iface *ci = convert_iface_new();
  if (!oa || !ci) {
    free(oa);
    convert_iface_free(ci);
    return CLI_FAIL;
  }
  bool onnx_opts = false;
  int rc = CLI_OK;
#define USAGE(...)                                 \
  do {                                             \
    rc = cli_usage_error("convert", __VA_ARGS__); \
    goto done;                                     \
  } while (0)
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    int k;
    if (cli_is_help(argv[i])) {
      help();
      goto done;
    } else if (strcmp(s, "--list-ops") == 0) {
      rc = list_ops();
      goto done;
    } else if (strcmp(s, "--inline-weights") == 0) {
      inline_weights = true;
    } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
      quiet = true;
    } else if (strcmp(s, "--target") == 0) {
      if (i + 1 >= argc) USAGE("--target needs a value");
      if ((rc = cli_parse_target("convert", argv[++i], &target)) != CLI_OK) goto done;
    } else if ((k = convert_iface_parse(ci, argc, argv, &i)) != 0) {
      if (k < 0) {
        rc = -k;
        goto done;
      }
    } else if (strcmp(s, "--nms-max-boxes") == 0) {
      if (i + 1 >= argc) USAGE("--nms-max-boxes needs a value");
      char *end;
      long long v = strtoll(argv[++i], &end, 10);
      if (*end || v <= 0 || v > INT32_MAX) USAGE("--nms-max-boxes must be a positive integer, got '%s'", argv[i]);
      oa->o.nms_max_boxes = v;
      onnx_opts = true;
    } else if (strcmp(s, "--precision") == 0 || strcmp(s, "--pipeline") == 0) {
      if (i + 1 >= argc) USAGE("%s needs a value", s);
      const char *v = argv[++i];
      onnx_opts = true;
      if (s[3] == 'r') {
        if (strcmp(v, "fp16") && strcmp(v, "fp32")) USAGE("--precision must be fp16 or fp32, got '%s'", v);
        oa->o.fp32 = strcmp(v, "fp32") == 0;
      } else {
        oa->o.pipeline = v;
      }
    } else if (strcmp(s, "--input-value") == 0) {
      if (i + 1 >= argc) USAGE("--input-value needs NAME=V1,V2,...");
      onnx_opts = true;
      if (!parse_value(oa, argv[++i])) USAGE("--input-value expects NAME=V1,V2,... (numbers), got '%s'", argv[i]);
    } else if (strcmp(s, "--sample") == 0) {
      if (i + 1 >= argc) USAGE("--sample needs NAME=FILE.npy");
      onnx_opts = true;
      if (!load_sample(oa, argv[++i])) {
        rc = CLI_FAIL;
        goto done;
      }
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
  if ((onnx_opts || convert_iface_used(ci)) && !onnx)
    USAGE("--precision, --pipeline, --input-value, --sample and the model-interface options apply to .onnx input only");
  oa->o.interface = convert_iface_used(ci) ? convert_iface_build(ci) : NULL;
  oa->o.target = target;
  oa->o.spec_version = spec;
  oa->o.no_pipeline = !onnx; /* a Core ML / MIL model is re-saved as it is */
  oa->o.output_path = out;
  oa->o.inline_weights = inline_weights;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  opt_progress pg;
  opt_progress_init(&pg, stderr, !quiet);
  opt_progress_show(&pg, onnx ? "converting %s (import and the %s pipeline) ..." : "converting %s ...", in,
                    oa->o.no_pipeline ? "no" : oa->o.pipeline ? oa->o.pipeline : "default");
  mil_status st = mil_convert(in, &oa->o, &m, &d);
  opt_progress_clear(&pg);
  if (st == MIL_OK && !quiet) (void)mil_onnx_renames(m, print_rename, NULL);
  if (st == MIL_OK && (d.n_warnings || oa->o.n_samples) && !quiet) cli_print_diag(&d);
  if (st == MIL_OK && !quiet)
    opt_print_written(stderr, out, mil_model_program(m), to_text ? 0 : mil_model_spec_version(m), opt_now() - t0);
  if (st != MIL_OK) {
    cli_print_diag(&d);
    if (d.n_errors == 0) fprintf(stderr, "mil: error: convert failed: %s\n", mil_status_str(st));
    rc = CLI_FAIL;
  }
  mil_model_free(m);
  mil_diag_clear(&d);
done:
  convert_iface_free(ci);
  for (int32_t k = 0; k < 64; k++) {
    free((char *)oa->values[k].name);
    free((char *)oa->samples[k].name);
    free(oa->bufs[k]);
    mil_npy_free(oa->npys[k]);
  }
  free(oa);
  return rc;
#undef USAGE
}

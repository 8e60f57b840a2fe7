/* mil tensor FILE: describes one tensor file (ONNX TensorProto .pb of either
 * dialect, or .npy); mil tensor convert A B: converts between them and
 * between the dialects (mil/onnx_tensor.h, mil/npy.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/npy.h"
#include "mil/onnx_tensor.h"
#include "run_common.h"

static void help(void) {
  printf("usage: mil tensor FILE [--dialect auto|onnx|nd4j] [--narrow | --clamp]\n"
         "       mil tensor convert A B [--in-dialect auto|onnx|nd4j] [--dialect onnx|nd4j]\n"
         "                              [--encoding raw|typed|nd4j|external] [--external-data NAME]\n"
         "                              [--name NAME]\n\n"
         "FILE, A and B are ONNX TensorProto files (.pb) or NumPy arrays (.npy).\n\n"
         "mil tensor FILE prints the tensor's name, data type, shape, encoding (raw_data,\n"
         "typed fields, nd4j's half_val/bool_val, external data), dialect, and the\n"
         "minimum, maximum and mean of its elements (NaNs counted apart).\n"
         "  --dialect D     read .pb with this schema: auto (default; says when it cannot\n"
         "                  decide), onnx (field 16 = metadata_props), nd4j (seed 002:\n"
         "                  15 = half_val, 16 = bool_val)\n"
         "  --narrow        show the values as MIL holds them after coremltools' narrowing\n"
         "                  (INT64/UINT32/UINT64 -> int32, DOUBLE -> fp32; out-of-range\n"
         "                  values refused); --clamp clips them as coremltools does\n\n"
         "mil tensor convert A B writes A's elements to B (.pb: raw_data by default;\n"
         ".npy: BFLOAT16 is written as float32, with a note, as numpy has no bfloat16).\n"
         "  --in-dialect D  schema A is read with (default auto)\n"
         "  --dialect D     schema B is written with: onnx (default) or nd4j\n"
         "  --encoding E    raw (default), typed (float_data, int32_data, ...), nd4j\n"
         "                  (half_val / bool_val; FLOAT16 and BOOL with --dialect nd4j),\n"
         "                  external (elements in --external-data NAME beside B)\n"
         "  --name NAME     TensorProto name of B (default: A's name, or A's file name)\n"
         "Exit status: 0 success, 1 unreadable or inconvertible tensor, 2 usage error.\n");
}

static bool parse_dialect(const char *s, mil_onnx_dialect *out) {
  if (!strcmp(s, "auto")) *out = MIL_ONNX_DIALECT_AUTO;
  else if (!strcmp(s, "onnx")) *out = MIL_ONNX_DIALECT_ONNX;
  else if (!strcmp(s, "nd4j")) *out = MIL_ONNX_DIALECT_ND4J;
  else return false;
  return true;
}

static bool parse_encoding(const char *s, mil_onnx_encoding *out) {
  if (!strcmp(s, "raw")) *out = MIL_ONNX_ENC_RAW;
  else if (!strcmp(s, "typed")) *out = MIL_ONNX_ENC_TYPED;
  else if (!strcmp(s, "nd4j")) *out = MIL_ONNX_ENC_ND4J;
  else if (!strcmp(s, "external")) *out = MIL_ONNX_ENC_EXTERNAL;
  else return false;
  return true;
}

/* A tensor read from either kind of file; free with loaded_free. */
typedef struct loaded {
  mil_onnx_tensor *pb;
  mil_npy *npy;
  mil_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  const void *data;
  size_t nbytes;
  int64_t numel;
} loaded;

static void loaded_free(loaded *l) {
  mil_onnx_tensor_free(l->pb);
  mil_npy_free(l->npy);
}

static mil_status load(const char *path, mil_onnx_dialect dia, unsigned flags, loaded *l, mil_diag *d) {
  memset(l, 0, sizeof *l);
  if (cli_is_pb(path)) {
    mil_onnx_read_opts o = {dia, flags, NULL};
    mil_status st = mil_onnx_tensor_read(path, &o, &l->pb, d);
    if (st != MIL_OK) return st;
    *l = (loaded){l->pb, NULL, l->pb->dtype, l->pb->rank, l->pb->shape, l->pb->data, l->pb->nbytes, l->pb->numel};
    return MIL_OK;
  }
  mil_status st = mil_npy_read(path, &l->npy, d);
  if (st != MIL_OK) return st;
  mil_npy *a = l->npy;
  *l = (loaded){NULL, a, a->dtype, a->rank, a->shape, a->data, a->nbytes, a->numel};
  return MIL_OK;
}

static void print_stats(const loaded *l) {
  if (l->dtype == MIL_DT_STRING) {
    printf("values:    ");
    for (int64_t i = 0; i < l->numel && i < 8; i++) printf("%s\"%s\"", i ? ", " : "", cli_esc(((const char *const *)l->data)[i]));
    printf("%s\n", l->numel > 8 ? ", ..." : "");
    return;
  }
  if (l->numel == 0) return;
  mil_program *p = mil_program_new(NULL);
  mil_value *v = p ? mil_value_new_view(p, l->dtype, l->rank, l->shape, l->data, l->nbytes) : NULL;
  if (!v) {
    mil_program_free(p);
    return;
  }
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nan = 0;
  for (int64_t i = 0; i < l->numel; i++) {
    double x = l->dtype == MIL_DT_UINT64 ? (double)((const uint64_t *)l->data)[i] : mil_value_get_f64(v, i);
    if (isnan(x)) {
      nan++;
      continue;
    }
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
    sum += x;
  }
  mil_program_free(p);
  if (l->numel > nan)
    printf("min %.9g  max %.9g  mean %.9g%s", mn, mx, sum / (double)(l->numel - nan),
           mil_dtype_is_complex(l->dtype) ? "  (real parts)" : "");
  if (nan) printf("%s%" PRId64 " NaN", l->numel > nan ? "  " : "", nan);
  printf("\n");
}

static int describe(const char *path, mil_onnx_dialect dia, unsigned flags) {
  mil_diag d;
  mil_diag_init(&d);
  loaded l;
  mil_status st = load(path, dia, flags, &l, &d);
  if (st == MIL_OK) {
    printf("file:      %s\n", path);
    if (l.pb) {
      printf("name:      %s\n", l.pb->name[0] ? cli_esc(l.pb->name) : "(none)");
      printf("dtype:     %s (MIL %s)\n", mil_onnx_dtype_name(l.pb->onnx_type), mil_dtype_name(l.dtype));
    } else {
      printf("format:    npy %d.%d\n", l.npy->version_major, l.npy->version_minor);
      printf("dtype:     %s (%s)\n", mil_dtype_name(l.dtype), mil_npy_descr(l.dtype));
    }
    printf("shape:     (");
    for (int32_t i = 0; i < l.rank; i++) printf("%s%" PRId64, i ? ", " : "", l.shape[i]);
    printf("%s)  %" PRId64 " elements\n", l.rank == 1 ? "," : "", l.numel);
    if (l.pb) {
      printf("encoding:  %s\n", mil_onnx_encoding_name(l.pb->encoding));
      printf("dialect:   %s%s\n", mil_onnx_dialect_name(l.pb->dialect),
             dia == MIL_ONNX_DIALECT_AUTO ? " (automatic)" : " (as asked)");
      if (l.pb->n_metadata) printf("metadata:  %d metadata_props entries\n", (int)l.pb->n_metadata);
    }
    print_stats(&l);
    loaded_free(&l);
  } else if ((st == MIL_ERR_FORMAT || st == MIL_ERR_UNSUPPORTED) && cli_is_pb(path)) {
    mil_diag_add(&d, MIL_SEV_NOTE, "if %s is an ONNX SequenceProto, OptionalProto or MapProto (the test data of a "
                 "sequence or optional input), it is not a tensor: libmil reads TensorProto only", path);
  }
  cli_print_diag(&d);
  mil_diag_clear(&d);
  return st == MIL_OK ? CLI_OK : CLI_FAIL;
}

/* B's default TensorProto name: A's, or A's file name without directory and extension. */
static char *default_name(const char *a_path, const loaded *l) {
  if (l->pb && l->pb->name[0]) return strdup(l->pb->name);
  const char *b = strrchr(a_path, '/');
  b = b ? b + 1 : a_path;
  const char *dot = strrchr(b, '.');
  return strndup(b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

static int convert(const char *a, const char *b, mil_onnx_dialect in_dia, const mil_onnx_write_opts *wo_in) {
  mil_diag d;
  mil_diag_init(&d);
  loaded l;
  mil_status st = load(a, in_dia, MIL_ONNX_EXACT, &l, &d);
  if (st == MIL_OK) {
    if (cli_is_pb(b)) {
      mil_onnx_write_opts wo = *wo_in;
      char *name = wo.name ? NULL : default_name(a, &l);
      if (!wo.name) wo.name = name;
      if (l.pb) wo.onnx_type = l.pb->onnx_type; /* keep UINT32, FNUZ, ... as they were */
      st = mil_onnx_tensor_write(b, l.dtype, l.rank, l.shape, l.data, &wo, &d);
      free(name);
    } else if (l.dtype == MIL_DT_BF16) {
      /* numpy has no bfloat16: float32 holds every value exactly (onnx's
       * numpy_helper.to_array reads BFLOAT16 as float32 too) */
      float *f = malloc((size_t)(l.numel ? l.numel : 1) * sizeof *f);
      if (!f) {
        st = mil_diag_error(&d, MIL_ERR_NOMEM, "%s: out of memory", b);
      } else {
        const uint16_t *h = l.data;
        for (int64_t i = 0; i < l.numel; i++) f[i] = mil_bf16_to_fp32(h[i]);
        st = mil_npy_write(b, MIL_DT_FP32, l.rank, l.shape, f, &d);
        free(f);
        if (st == MIL_OK)
          mil_diag_add(&d, MIL_SEV_NOTE, "%s holds BFLOAT16, which numpy has no dtype for: %s is float32 (every value "
                       "exact), as onnx's numpy_helper.to_array reads it", a, b);
      }
    } else {
      st = mil_npy_write(b, l.dtype, l.rank, l.shape, l.data, &d);
      if (st == MIL_ERR_UNSUPPORTED && l.pb)
        mil_diag_add(&d, MIL_SEV_NOTE, "%s holds %s, which .npy cannot; convert it to another .pb instead", a,
                     mil_onnx_dtype_name(l.pb->onnx_type));
    }
    loaded_free(&l);
  }
  cli_print_diag(&d);
  mil_diag_clear(&d);
  return st == MIL_OK ? CLI_OK : CLI_FAIL;
}

int cmd_tensor(int argc, char **argv) {
  const char *files[2] = {NULL, NULL};
  int n_files = 0;
  bool conv = argc > 1 && !strcmp(argv[1], "convert");
  mil_onnx_dialect dia = MIL_ONNX_DIALECT_AUTO, in_dia = MIL_ONNX_DIALECT_AUTO, out_dia = MIL_ONNX_DIALECT_ONNX;
  mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, MIL_ONNX_ENC_RAW, 0, NULL, NULL};
  unsigned flags = MIL_ONNX_EXACT;
  for (int i = conv ? 2 : 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (cli_is_help(a)) {
      help();
      return CLI_OK;
    }
    if (!conv && !strcmp(a, "--dialect") && more) {
      if (!parse_dialect(argv[++i], &dia)) return cli_usage_error("tensor", "--dialect '%s': expected auto, onnx or nd4j", argv[i]);
    } else if (!conv && !strcmp(a, "--narrow")) {
      flags = 0;
    } else if (!conv && !strcmp(a, "--clamp")) {
      flags = MIL_ONNX_CLAMP;
    } else if (conv && !strcmp(a, "--in-dialect") && more) {
      if (!parse_dialect(argv[++i], &in_dia)) return cli_usage_error("tensor", "--in-dialect '%s': expected auto, onnx or nd4j", argv[i]);
    } else if (conv && !strcmp(a, "--dialect") && more) {
      if (!parse_dialect(argv[++i], &out_dia) || out_dia == MIL_ONNX_DIALECT_AUTO)
        return cli_usage_error("tensor", "--dialect '%s': expected onnx or nd4j", argv[i]);
      wo.dialect = out_dia;
    } else if (conv && !strcmp(a, "--encoding") && more) {
      if (!parse_encoding(argv[++i], &wo.encoding))
        return cli_usage_error("tensor", "--encoding '%s': expected raw, typed, nd4j or external", argv[i]);
    } else if (conv && !strcmp(a, "--external-data") && more) {
      wo.external_location = argv[++i];
    } else if (conv && !strcmp(a, "--name") && more) {
      wo.name = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error("tensor", "unknown or incomplete option '%s'", a);
    } else if (n_files < (conv ? 2 : 1)) {
      files[n_files++] = a;
    } else {
      return cli_usage_error("tensor", "unexpected argument '%s'", a);
    }
  }
  if (n_files < (conv ? 2 : 1)) return cli_usage_error("tensor", conv ? "convert needs A and B" : "missing FILE");
  if (conv && wo.encoding == MIL_ONNX_ENC_EXTERNAL && !wo.external_location)
    return cli_usage_error("tensor", "--encoding external needs --external-data NAME");
  return conv ? convert(files[0], files[1], in_dia, &wo) : describe(files[0], dia, flags);
}

/* mil convert's model-interface options (mil/input_types.h): image inputs,
 * flexible shapes, I/O dtypes and names, a classifier from a labels file,
 * metadata, gathered into a mil_model_interface for mil_convert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convert_iface.h"

#define MAX_IN 64
#define MAX_RANK 32

typedef struct in_spec {
  char *name;
  mil_input_type t;
  int32_t n_shapes; /* --input-shape given n times: EnumeratedShapes when > 1 */
  int32_t rank;
  int64_t *shapes;  /* n_shapes * rank */
  mil_range_dim ranges[MAX_RANK];
  bool has_ranges;
} in_spec;

struct convert_iface {
  in_spec in[MAX_IN];
  int32_t n_in;
  mil_output_type out[MAX_IN];
  char *out_names[MAX_IN];
  int32_t n_out;
  mil_classifier_config cc;
  char *labels_text;
  char **labels;
  int64_t *int_labels;
  const char *keys[MAX_IN], *values[MAX_IN];
  int32_t n_meta;
  mil_model_interface mi;
  bool used;
};

convert_iface *convert_iface_new(void) { return calloc(1, sizeof(convert_iface)); }

void convert_iface_free(convert_iface *ci) {
  if (!ci) return;
  for (int32_t i = 0; i < ci->n_in; i++) {
    free(ci->in[i].name);
    free(ci->in[i].shapes);
  }
  for (int32_t i = 0; i < ci->n_out; i++) free(ci->out_names[i]);
  free(ci->labels_text);
  free(ci->labels);
  free(ci->int_labels);
  free(ci);
}

bool convert_iface_used(const convert_iface *ci) { return ci->used; }

static in_spec *input(convert_iface *ci, const char *name, size_t len) {
  for (int32_t i = 0; i < ci->n_in; i++)
    if (strlen(ci->in[i].name) == len && !strncmp(ci->in[i].name, name, len)) return &ci->in[i];
  if (ci->n_in >= MAX_IN) return NULL;
  in_spec *s = &ci->in[ci->n_in];
  if (!(s->name = strndup(name, len))) return NULL;
  s->t = mil_input_type_default(s->name, false);
  ci->n_in++;
  return s;
}

static bool parse_dtype(const char *v, mil_dtype *dt) {
  if (!strcmp(v, "fp16") || !strcmp(v, "float16")) *dt = MIL_DT_FP16;
  else if (!strcmp(v, "fp32") || !strcmp(v, "float32")) *dt = MIL_DT_FP32;
  else if (!strcmp(v, "int32")) *dt = MIL_DT_INT32;
  else return false;
  return true;
}

/* "1/255", "0.5", "-0.485" */
static bool parse_float(const char *s, const char *end, float *out) {
  char buf[64];
  size_t n = (size_t)(end - s);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *e;
  double v = strtod(buf, &e);
  if (e == buf) return false;
  if (*e == '/') {
    char *e2;
    double den = strtod(e + 1, &e2);
    if (e2 == e + 1 || *e2 || den == 0) return false;
    v /= den;
  } else if (*e) {
    return false;
  }
  *out = (float)v;
  return true;
}

/* --image NAME[:scale=S][:bias=B|B1,B2,B3][:color_layout=RGB|BGR|G|G_FLOAT16] */
static int parse_image(convert_iface *ci, const char *spec) {
  const char *colon = strchr(spec, ':');
  size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
  in_spec *s = nl ? input(ci, spec, nl) : NULL;
  if (!s) return cli_usage_error("convert", "--image expects NAME[:scale=S][:bias=B1,B2,B3][:color_layout=L]");
  s->t.is_image = true;
  for (const char *p = colon; p && *p == ':';) {
    const char *next = strchr(p + 1, ':');
    const char *end = next ? next : p + strlen(p);
    const char *eq = memchr(p + 1, '=', (size_t)(end - p - 1));
    if (!eq) return cli_usage_error("convert", "--image %s: expected KEY=VALUE after ':'", s->name);
    size_t kl = (size_t)(eq - p - 1);
    const char *v = eq + 1;
    if (kl == 5 && !strncmp(p + 1, "scale", 5)) {
      if (!parse_float(v, end, &s->t.scale)) return cli_usage_error("convert", "--image %s: bad scale", s->name);
    } else if (kl == 4 && !strncmp(p + 1, "bias", 4)) {
      int k = 0;
      for (const char *q = v; q < end && k < 3; k++) {
        const char *comma = memchr(q, ',', (size_t)(end - q));
        const char *qe = comma ? comma : end;
        if (!parse_float(q, qe, &s->t.bias[k])) return cli_usage_error("convert", "--image %s: bad bias", s->name);
        q = comma ? comma + 1 : end;
      }
      if (k == 1) s->t.bias[1] = s->t.bias[2] = s->t.bias[0];
    } else if (kl == 12 && !strncmp(p + 1, "color_layout", 12)) {
      size_t vl = (size_t)(end - v);
      if (vl == 3 && !strncmp(v, "RGB", 3)) s->t.color_layout = MIL_COLOR_LAYOUT_RGB;
      else if (vl == 3 && !strncmp(v, "BGR", 3)) s->t.color_layout = MIL_COLOR_LAYOUT_BGR;
      else if (vl == 1 && v[0] == 'G') s->t.color_layout = MIL_COLOR_LAYOUT_GRAYSCALE;
      else if (vl == 9 && !strncmp(v, "G_FLOAT16", 9)) s->t.color_layout = MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16;
      else return cli_usage_error("convert", "--image %s: color_layout must be RGB, BGR, G or G_FLOAT16", s->name);
    } else {
      return cli_usage_error("convert", "--image %s: unknown key '%.*s' (scale, bias, color_layout)", s->name,
                             (int)kl, p + 1);
    }
    p = next;
  }
  return CLI_OK;
}

/* --input-shape NAME=D1,D2,... where Di is N, or L..U (RangeDim), or
 * L..U:D (with a default); given again for the same NAME: one more of its
 * EnumeratedShapes (the first is the default). */
static int parse_shape(convert_iface *ci, const char *spec) {
  const char *eq = strrchr(spec, '=');
  in_spec *s = eq && eq != spec && eq[1] ? input(ci, spec, (size_t)(eq - spec)) : NULL;
  if (!s) return cli_usage_error("convert", "--input-shape expects NAME=D1,D2,... got '%s'", spec);
  int64_t dims[MAX_RANK];
  mil_range_dim rg[MAX_RANK];
  memset(rg, 0, sizeof rg);
  int32_t r = 0;
  bool any_range = false;
  for (const char *p = eq + 1; *p;) {
    if (r >= MAX_RANK) return cli_usage_error("convert", "--input-shape %s: more than %d dims", s->name, MAX_RANK);
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0) return cli_usage_error("convert", "--input-shape %s: bad dim at '%s'", s->name, p);
    dims[r] = v;
    if (end[0] == '.' && end[1] == '.') {
      const char *q = end + 2;
      long long u = strtoll(q, &end, 10);
      if (end == q || u < v || u == 0)
        return cli_usage_error("convert", "--input-shape %s: a range L..U needs 0 < L <= U, got '%s'", s->name, p);
      rg[r] = (mil_range_dim){v, u, v};
      if (*end == ':') {
        q = end + 1;
        long long dv = strtoll(q, &end, 10);
        if (end == q || dv < v || dv > u)
          return cli_usage_error("convert", "--input-shape %s: the default must lie in [%lld, %lld]", s->name, v, u);
        rg[r].default_value = dv;
      }
      any_range = true;
    }
    if (*end && *end != ',') return cli_usage_error("convert", "--input-shape %s: bad dim at '%s'", s->name, p);
    p = *end ? end + 1 : end;
    r++;
  }
  if (s->n_shapes && (r != s->rank || any_range || s->has_ranges))
    return cli_usage_error("convert", "--input-shape %s given twice: enumerated shapes must be fixed and of one rank",
                           s->name);
  int64_t *ns = realloc(s->shapes, (size_t)(s->n_shapes + 1) * (size_t)(r ? r : 1) * sizeof *ns);
  if (!ns) return CLI_FAIL;
  s->shapes = ns;
  memcpy(ns + (size_t)s->n_shapes * (size_t)r, dims, (size_t)r * sizeof *dims);
  s->n_shapes++;
  s->rank = r;
  if (any_range) {
    memcpy(s->ranges, rg, sizeof rg);
    s->has_ranges = true;
  }
  return CLI_OK;
}

static int read_labels(convert_iface *ci, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "mil: error: %s: cannot read the class labels\n", cli_esc(path));
    return CLI_FAIL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 >= cap) {
      char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "mil: error: %s: the class labels file is too large (64 MiB at most)\n", cli_esc(path));
    return CLI_FAIL;
  }
  buf[n] = 0;
  /* lines (coremltools' classes.splitlines()); a trailing newline adds none */
  int32_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
  if (n && buf[n - 1] != '\n') lines++;
  ci->labels = calloc((size_t)(lines ? lines : 1), sizeof *ci->labels);
  ci->int_labels = calloc((size_t)(lines ? lines : 1), sizeof *ci->int_labels);
  ci->labels_text = buf;
  if (!ci->labels || !ci->int_labels) return CLI_FAIL;
  bool all_int = lines > 0;
  char *p = buf;
  for (int32_t i = 0; i < lines; i++) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    size_t len = strlen(p);
    if (len && p[len - 1] == '\r') p[len - 1] = 0;
    ci->labels[i] = p;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (!*p || *e) all_int = false;
    else ci->int_labels[i] = v;
    p = nl ? nl + 1 : p + len;
  }
  if (lines == 0) {
    fprintf(stderr, "mil: error: %s: the class labels file has no labels\n", cli_esc(path));
    return CLI_FAIL;
  }
  ci->cc.n_labels = lines;
  ci->cc.labels = (const char *const *)ci->labels;
  if (all_int) ci->cc.int_labels = ci->int_labels;
  ci->mi.classifier = &ci->cc;
  return CLI_OK;
}

int convert_iface_parse(convert_iface *ci, int argc, char **argv, int *i) {
  const char *s = argv[*i];
  static const char *const opts[] = {"--image", "--input-shape", "--input-dtype", "--output", "--class-labels",
                                     "--predicted-feature-name", "--predicted-probabilities-output", "--author",
                                     "--license", "--short-description", "--version", "--metadata"};
  int which = -1;
  for (int k = 0; k < (int)(sizeof opts / sizeof *opts); k++)
    if (!strcmp(s, opts[k])) which = k;
  if (which < 0) return 0;
  if (*i + 1 >= argc) return -cli_usage_error("convert", "%s needs a value", s);
  const char *v = argv[++*i];
  ci->used = true;
  int rc = CLI_OK;
  switch (which) {
  case 0: rc = parse_image(ci, v); break;
  case 1: rc = parse_shape(ci, v); break;
  case 2: {
    const char *eq = strrchr(v, '=');
    in_spec *is = eq && eq != v ? input(ci, v, (size_t)(eq - v)) : NULL;
    if (!is || !parse_dtype(eq + 1, &is->t.dtype))
      rc = cli_usage_error("convert", "--input-dtype expects NAME=fp16|fp32|int32, got '%s'", v);
    break;
  }
  case 3: {
    if (ci->n_out >= MAX_IN) return -cli_usage_error("convert", "too many --output");
    const char *colon = strrchr(v, ':');
    mil_output_type *o = &ci->out[ci->n_out];
    if (colon && !parse_dtype(colon + 1, &o->dtype))
      return -cli_usage_error("convert", "--output expects NAME[:fp16|fp32|int32], got '%s'", v);
    size_t nl = colon ? (size_t)(colon - v) : strlen(v);
    if (nl && !(ci->out_names[ci->n_out] = strndup(v, nl))) return -CLI_FAIL;
    o->name = ci->out_names[ci->n_out];
    ci->n_out++;
    break;
  }
  case 4: rc = read_labels(ci, v); break;
  case 5: ci->cc.predicted_feature_name = v; break;
  case 6: ci->cc.predicted_probabilities_output = v; break;
  case 7: ci->mi.author = v; break;
  case 8: ci->mi.license = v; break;
  case 9: ci->mi.short_description = v; break;
  case 10: ci->mi.version = v; break;
  default: {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || ci->n_meta >= MAX_IN)
      return -cli_usage_error("convert", "--metadata expects KEY=VALUE, got '%s'", v);
    char *k = strndup(v, (size_t)(eq - v));
    if (!k) return -CLI_FAIL;
    ci->keys[ci->n_meta] = k; /* freed with the process: argv-lifetime strings */
    ci->values[ci->n_meta++] = eq + 1;
    break;
  }
  }
  return rc == CLI_OK ? 1 : -rc;
}

const mil_model_interface *convert_iface_build(convert_iface *ci) {
  static mil_input_type types[MAX_IN];
  for (int32_t i = 0; i < ci->n_in; i++) {
    in_spec *s = &ci->in[i];
    s->t.name = s->name;
    if (s->n_shapes) {
      s->t.has_shape = true;
      s->t.shape.rank = s->rank;
      s->t.shape.dims = s->shapes;
      s->t.shape.ranges = s->has_ranges ? s->ranges : NULL;
      if (s->n_shapes > 1) {
        s->t.shape.n_enumerated = s->n_shapes;
        s->t.shape.enumerated = s->shapes;
      }
    }
    types[i] = s->t;
  }
  ci->mi.n_inputs = ci->n_in;
  ci->mi.inputs = types;
  ci->mi.n_outputs = ci->n_out;
  ci->mi.outputs = ci->out;
  ci->mi.n_user_defined = ci->n_meta;
  ci->mi.user_keys = ci->keys;
  ci->mi.user_values = ci->values;
  return &ci->mi;
}

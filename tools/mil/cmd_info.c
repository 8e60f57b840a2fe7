/* mil info MODEL: a summary of a model (versions, interface, metadata, ops,
 * weights). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/ops.h"

static void help(void) {
  printf("usage: mil info [--json] MODEL [--weights [--weight-threshold N]]\n\n"
         "Summarize MODEL (.mlpackage, .mlmodel or .mil): specification version and\n"
         "opset, each function's inputs, outputs and states (name, dtype, shape, and\n"
         "the Core ML feature type from the model description), metadata, a histogram\n"
         "of op types, constant bytes by dtype (how many live in weight.bin), and\n"
         "numeric constant bytes by compression: the constexpr_* or dequantize op\n"
         "they feed (quantized data, scales, offsets), or uncompressed.\n"
         "--json prints the same as one JSON object: path, specification_version,\n"
         "target, functions (name, opset, inputs, outputs: name, dtype, shape, state,\n"
         "feature), metadata, ops (total, by_type), weights (by_dtype, by_compression,\n"
         "total_bytes, weight_file_bytes, weight_files).\n\n"
         "--weights lists instead every const weight of at least N elements (default\n"
         "2048) as coremltools' get_weights_metadata reports it: name, shape, dtype,\n"
         "size, sparsity, unique values and the ops it feeds.\n");
}

/* "(1, 3, is0, 224)" for a tensor type; dims as MIL prints them. */
static void put_shape(const mil_type *t) {
  if (t->kind == MIL_TYPE_STATE && t->elem) t = t->elem;
  if (t->kind != MIL_TYPE_TENSOR) {
    printf("%s", t->kind == MIL_TYPE_LIST ? "list" : t->kind == MIL_TYPE_DICT ? "dict" : "tuple");
    return;
  }
  if (t->rank < 0) {
    printf("(*)");
    return;
  }
  putchar('(');
  for (int32_t i = 0; i < t->rank; i++) {
    if (i) printf(", ");
    if (t->dims[i].size >= 0) printf("%lld", (long long)t->dims[i].size);
    else printf("%s", t->dims[i].sym ? cli_esc(t->dims[i].sym) : "?");
  }
  putchar(')');
}

static const char *dtype_of(const mil_type *t) {
  if (t->kind == MIL_TYPE_STATE && t->elem) t = t->elem;
  return t->kind == MIL_TYPE_TENSOR ? mil_dtype_name(t->dtype) : "-";
}

static const mil_feature *find_feature(const mil_feature *f, int32_t n, const char *name) {
  for (int32_t i = 0; f && i < n; i++)
    if (!strcmp(f[i].name, name)) return &f[i];
  return NULL;
}

static const char *color_name(mil_color_space c) {
  switch (c) {
  case MIL_COLOR_GRAYSCALE: return "GRAYSCALE";
  case MIL_COLOR_RGB: return "RGB";
  case MIL_COLOR_BGR: return "BGR";
  case MIL_COLOR_GRAYSCALE_FLOAT16: return "GRAYSCALE_FLOAT16";
  default: return "INVALID";
  }
}

static cJSON *json_dims(const int64_t *d, int32_t n) {
  cJSON *a = cJSON_CreateArray();
  for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)d[i]));
  return a;
}

static cJSON *json_range(mil_size_range r) {
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r.lower));
  cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r.upper));
  return a;
}

static void put_feature(const mil_feature *f) {
  if (!f) return;
  printf("  [%s", mil_feature_kind_name(f->kind));
  if (f->kind == MIL_FEATURE_MULTIARRAY || f->kind == MIL_FEATURE_STATE) {
    printf(" %s", mil_array_dtype_name(f->array_dtype));
    if (f->shape.rank) {
      printf(" (");
      for (int32_t i = 0; i < f->shape.rank; i++) printf("%s%lld", i ? ", " : "", (long long)f->shape.dims[i]);
      printf(")");
    }
    if (f->n_ranges) {
      printf(" ranges");
      for (int32_t i = 0; i < f->n_ranges; i++)
        printf(" [%llu, %lld]", (unsigned long long)f->ranges[i].lower, (long long)f->ranges[i].upper);
    }
    for (int32_t k = 0; k < f->n_enumerated; k++) {
      printf("%s(", k ? ", " : " enumerated shapes ");
      for (int32_t i = 0; i < f->enumerated[k].rank; i++)
        printf("%s%lld", i ? ", " : "", (long long)f->enumerated[k].dims[i]);
      printf(")");
    }
  } else if (f->kind == MIL_FEATURE_IMAGE) {
    printf(" %lldx%lld %s", (long long)f->width, (long long)f->height, color_name(f->color_space));
    for (int32_t k = 0; k < f->n_image_sizes; k++)
      printf("%s%llux%llu", k ? ", " : " sizes ", (unsigned long long)f->image_sizes[2 * k],
             (unsigned long long)f->image_sizes[2 * k + 1]);
    if (f->has_image_range)
      printf(" width [%llu, %lld] height [%llu, %lld]", (unsigned long long)f->width_range.lower,
             (long long)f->width_range.upper, (unsigned long long)f->height_range.lower,
             (long long)f->height_range.upper);
  }
  if (f->short_description[0]) printf(" \"%s\"", cli_esc(f->short_description));
  if (f->is_optional) printf(" optional");
  printf("]");
}

typedef struct hist {
  const char **types;
  int64_t *counts;
  size_t n, cap;
  /* const bytes by dtype (index = mil_dtype, < 128) */
  uint64_t bytes[128], blob_bytes[128];
  int64_t consts[128], blob_consts[128];
  /* const bytes by the compression op they feed (kind 0: none) */
  const char *kinds[16];
  uint64_t kind_bytes[16];
  int64_t kind_consts[16];
  int nk;
} hist;

/* The compression op (constexpr_* or dequantize) const output v feeds,
 * "uncompressed" when it feeds none. */
static const char *compression_kind(const mil_var *v) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op && (!strncmp(u->op->type, "constexpr_", 10) || !strcmp(u->op->type, "dequantize"))) return u->op->type;
  return "uncompressed";
}

static void add_kind(hist *h, const char *kind, uint64_t nb) {
  int i = 0;
  while (i < h->nk && strcmp(h->kinds[i], kind)) i++;
  if (i == h->nk) {
    if (h->nk == 16) return;
    h->kinds[h->nk++] = kind;
  }
  h->kind_bytes[i] += nb;
  h->kind_consts[i]++;
}

static int visit(mil_op *op, void *ud) {
  hist *h = ud;
  size_t i;
  for (i = 0; i < h->n; i++)
    if (h->types[i] == op->type || !strcmp(h->types[i], op->type)) break;
  if (i == h->n) {
    if (h->n == h->cap) {
      size_t nc = h->cap ? h->cap * 2 : 64;
      const char **nt = realloc(h->types, nc * sizeof *nt);
      if (!nt) return 1;
      h->types = nt;
      int64_t *ncn = realloc(h->counts, nc * sizeof *ncn);
      if (!ncn) return 1;
      h->counts = ncn;
      h->cap = nc;
    }
    h->types[h->n] = op->type;
    h->counts[h->n++] = 0;
  }
  h->counts[i]++;
  if (mil_op_is_const(op) && op->n_outputs == 1 && op->outputs[0]->val) {
    const mil_value *v = op->outputs[0]->val;
    if (v->kind == MIL_VAL_TENSOR && v->type && (int)v->type->dtype >= 0 && (int)v->type->dtype < 128) {
      int dt = (int)v->type->dtype;
      uint64_t nb = v->nbytes;
      if (v->type->dtype == MIL_DT_STRING) { /* the text, not the pointer array */
        nb = 0;
        for (int64_t k = 0; k < v->numel; k++) nb += strlen(mil_value_get_str(v, k));
      }
      h->bytes[dt] += nb;
      h->consts[dt]++;
      if (v->type->dtype != MIL_DT_STRING && v->type->dtype != MIL_DT_BOOL)
        add_kind(h, compression_kind(op->outputs[0]), nb);
      if (v->blob_file) {
        h->blob_bytes[dt] += nb;
        h->blob_consts[dt]++;
      }
    }
  }
  return 0;
}

static int cmp_hist(const void *a, const void *b, void *ud) {
  const hist *h = ud;
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  if (h->counts[i] != h->counts[j]) return h->counts[i] > h->counts[j] ? -1 : 1;
  return strcmp(h->types[i], h->types[j]);
}

static const char *target_name(int spec) {
  const char *name = mil_opset_target_name(spec); /* iOS13 (4) .. iOS26 (10) */
  return name ? name : "?";
}

static void put_function(mil_model *m, const mil_function *f) {
  const mil_function_desc *fd = mil_model_function_desc(m, f->name);
  printf("function %s [%s]\n", cli_esc(f->name), cli_esc(f->opset));
  printf("  inputs:\n");
  for (int32_t i = 0; i < f->n_inputs; i++) {
    const mil_var *v = f->inputs[i];
    bool state = v->type->kind == MIL_TYPE_STATE;
    printf("    %s%s: %s ", cli_esc(v->name), state ? " (state)" : "", dtype_of(v->type));
    put_shape(v->type);
    if (fd) put_feature(state ? find_feature(fd->states, fd->n_states, v->name) : find_feature(fd->inputs, fd->n_inputs, v->name));
    printf("\n");
  }
  printf("  outputs:\n");
  const mil_block *b = mil_function_body(f);
  for (int32_t i = 0; b && i < b->n_outputs; i++) {
    const mil_var *v = b->outputs[i].var;
    printf("    %s: %s ", cli_esc(v->name), dtype_of(v->type));
    put_shape(v->type);
    if (fd) put_feature(find_feature(fd->outputs, fd->n_outputs, v->name));
    printf("\n");
  }
  if (fd && (fd->predicted_feature_name[0] || fd->predicted_probabilities_name[0]))
    printf("  classifier: predicted feature %s, probabilities %s\n", cli_esc(fd->predicted_feature_name),
           cli_esc(fd->predicted_probabilities_name));
}

/* ---- --json ---------------------------------------------------------------- */

static cJSON *json_shape(const mil_type *t) {
  if (t->kind == MIL_TYPE_STATE && t->elem) t = t->elem;
  if (t->kind != MIL_TYPE_TENSOR || t->rank < 0) return cJSON_CreateNull();
  cJSON *a = cJSON_CreateArray();
  for (int32_t i = 0; a && i < t->rank; i++) {
    const mil_dim *dm = &t->dims[i];
    cJSON_AddItemToArray(a, dm->size >= 0 ? cJSON_CreateNumber((double)dm->size)
                                          : cJSON_CreateString(dm->sym ? dm->sym : "?"));
  }
  return a;
}

static cJSON *json_var(const mil_var *v, const mil_feature *f) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", v->name);
  cJSON_AddStringToObject(o, "dtype", dtype_of(v->type));
  cJSON_AddItemToObject(o, "shape", json_shape(v->type));
  if (v->type->kind == MIL_TYPE_STATE) cJSON_AddTrueToObject(o, "state");
  if (f) {
    cJSON *fo = cJSON_AddObjectToObject(o, "feature");
    cJSON_AddStringToObject(fo, "kind", mil_feature_kind_name(f->kind));
    if (f->kind == MIL_FEATURE_MULTIARRAY || f->kind == MIL_FEATURE_STATE) {
      cJSON_AddStringToObject(fo, "dtype", mil_array_dtype_name(f->array_dtype));
      cJSON_AddItemToObject(fo, "shape", json_dims(f->shape.dims, f->shape.rank));
      if (f->n_ranges) {
        cJSON *rs = cJSON_AddArrayToObject(fo, "shape_range");
        for (int32_t i = 0; i < f->n_ranges; i++) cJSON_AddItemToArray(rs, json_range(f->ranges[i]));
      }
      if (f->n_enumerated) {
        cJSON *es = cJSON_AddArrayToObject(fo, "enumerated_shapes");
        for (int32_t k = 0; k < f->n_enumerated; k++)
          cJSON_AddItemToArray(es, json_dims(f->enumerated[k].dims, f->enumerated[k].rank));
      }
    } else if (f->kind == MIL_FEATURE_IMAGE) {
      cJSON_AddNumberToObject(fo, "width", (double)f->width);
      cJSON_AddNumberToObject(fo, "height", (double)f->height);
      cJSON_AddStringToObject(fo, "color_space", color_name(f->color_space));
      if (f->n_image_sizes) {
        cJSON *es = cJSON_AddArrayToObject(fo, "enumerated_sizes");
        for (int32_t k = 0; k < f->n_image_sizes; k++) {
          int64_t wh[2] = {(int64_t)f->image_sizes[2 * k], (int64_t)f->image_sizes[2 * k + 1]};
          cJSON_AddItemToArray(es, json_dims(wh, 2));
        }
      }
      if (f->has_image_range) {
        cJSON_AddItemToObject(fo, "width_range", json_range(f->width_range));
        cJSON_AddItemToObject(fo, "height_range", json_range(f->height_range));
      }
    } else if (f->kind == MIL_FEATURE_DICTIONARY) {
      cJSON_AddStringToObject(fo, "key", mil_feature_kind_name(f->dict_key));
    }
    if (f->short_description[0]) cJSON_AddStringToObject(fo, "description", f->short_description);
    if (f->is_optional) cJSON_AddTrueToObject(fo, "optional");
  }
  return o;
}

static int print_json(mil_model *m, const char *path) {
  mil_program *p = mil_model_program(m);
  int spec = mil_model_spec_version(m);
  const mil_model_desc *md = mil_model_description(m);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "path", path);
  cJSON_AddNumberToObject(root, "specification_version", spec);
  cJSON_AddStringToObject(root, "target", target_name(spec));
  cJSON_AddStringToObject(root, "default_function", md->default_function_name);
  cJSON *fns = cJSON_AddArrayToObject(root, "functions");
  for (int32_t i = 0; i < p->n_functions; i++) {
    const mil_function *f = p->functions[i];
    const mil_function_desc *fd = mil_model_function_desc(m, f->name);
    cJSON *fo = cJSON_CreateObject();
    cJSON_AddItemToArray(fns, fo);
    cJSON_AddStringToObject(fo, "name", f->name);
    cJSON_AddStringToObject(fo, "opset", f->opset);
    cJSON *ins = cJSON_AddArrayToObject(fo, "inputs"), *outs = cJSON_AddArrayToObject(fo, "outputs");
    for (int32_t k = 0; k < f->n_inputs; k++) {
      const mil_var *v = f->inputs[k];
      bool state = v->type->kind == MIL_TYPE_STATE;
      const mil_feature *ft = !fd ? NULL
                              : state ? find_feature(fd->states, fd->n_states, v->name)
                                      : find_feature(fd->inputs, fd->n_inputs, v->name);
      cJSON_AddItemToArray(ins, json_var(v, ft));
    }
    const mil_block *b = mil_function_body(f);
    for (int32_t k = 0; b && k < b->n_outputs; k++) {
      const mil_var *v = b->outputs[k].var;
      cJSON_AddItemToArray(outs, json_var(v, fd ? find_feature(fd->outputs, fd->n_outputs, v->name) : NULL));
    }
    if (fd && fd->predicted_feature_name[0])
      cJSON_AddStringToObject(fo, "predicted_feature_name", fd->predicted_feature_name);
    if (fd && fd->predicted_probabilities_name[0])
      cJSON_AddStringToObject(fo, "predicted_probabilities_name", fd->predicted_probabilities_name);
  }
  cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
  if (md->short_description[0]) cJSON_AddStringToObject(meta, "shortDescription", md->short_description);
  if (md->author[0]) cJSON_AddStringToObject(meta, "author", md->author);
  if (md->license[0]) cJSON_AddStringToObject(meta, "license", md->license);
  if (md->version_string[0]) cJSON_AddStringToObject(meta, "versionString", md->version_string);
  if (md->n_user_defined) {
    cJSON *ud = cJSON_AddObjectToObject(meta, "userDefined");
    for (int32_t i = 0; i < md->n_user_defined; i++) cJSON_AddStringToObject(ud, md->user_keys[i], md->user_values[i]);
  }
  hist h;
  memset(&h, 0, sizeof h);
  int rc = CLI_OK;
  if (mil_program_walk(p, visit, &h) != 0) rc = CLI_FAIL;
  size_t *order = malloc((h.n ? h.n : 1) * sizeof *order);
  if (!order) rc = CLI_FAIL;
  if (rc == CLI_OK) {
    int64_t total = 0;
    for (size_t i = 0; i < h.n; i++) total += h.counts[i], order[i] = i;
    qsort_r(order, h.n, sizeof *order, cmp_hist, &h);
    cJSON *ops = cJSON_AddObjectToObject(root, "ops");
    cJSON_AddNumberToObject(ops, "total", (double)total);
    cJSON *bt = cJSON_AddObjectToObject(ops, "by_type");
    for (size_t i = 0; i < h.n; i++) cJSON_AddNumberToObject(bt, h.types[order[i]], (double)h.counts[order[i]]);
    cJSON *w = cJSON_AddObjectToObject(root, "weights");
    cJSON *bd = cJSON_AddObjectToObject(w, "by_dtype");
    uint64_t all = 0, all_blob = 0;
    for (int dt = 0; dt < 128; dt++) {
      if (!h.consts[dt]) continue;
      cJSON *e = cJSON_AddObjectToObject(bd, mil_dtype_name((mil_dtype)dt));
      cJSON_AddNumberToObject(e, "bytes", (double)h.bytes[dt]);
      cJSON_AddNumberToObject(e, "consts", (double)h.consts[dt]);
      cJSON_AddNumberToObject(e, "weight_file_bytes", (double)h.blob_bytes[dt]);
      cJSON_AddNumberToObject(e, "weight_file_consts", (double)h.blob_consts[dt]);
      all += h.bytes[dt];
      all_blob += h.blob_bytes[dt];
    }
    cJSON *bk = cJSON_AddObjectToObject(w, "by_compression");
    for (int i = 0; i < h.nk; i++) {
      cJSON *e = cJSON_AddObjectToObject(bk, h.kinds[i]);
      cJSON_AddNumberToObject(e, "bytes", (double)h.kind_bytes[i]);
      cJSON_AddNumberToObject(e, "consts", (double)h.kind_consts[i]);
    }
    cJSON_AddNumberToObject(w, "total_bytes", (double)all);
    cJSON_AddNumberToObject(w, "weight_file_bytes", (double)all_blob);
    cJSON_AddNumberToObject(w, "weight_files", mil_model_n_weight_files(m));
  }
  char *text = rc == CLI_OK ? cJSON_Print(root) : NULL;
  if (!text) {
    fprintf(stderr, "mil: error: out of memory\n");
    rc = CLI_FAIL;
  } else {
    printf("%s\n", text);
    if (fflush(stdout) != 0) rc = CLI_FAIL;
  }
  cJSON_free(text);
  cJSON_Delete(root);
  free(order);
  free(h.types);
  free(h.counts);
  return rc;
}

int cmd_info(int argc, char **argv) {
  const char *path = NULL;
  bool json = false;
  bool weights = false;
  long long thr = 2048;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--weights") == 0) {
      weights = true;
    } else if (strcmp(argv[i], "--weight-threshold") == 0) {
      char *end = NULL;
      if (i + 1 >= argc || (thr = strtoll(argv[++i], &end, 10)) < 0 || *end)
        return cli_usage_error("info", "--weight-threshold needs a non-negative integer");
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("info", "unknown option '%s'", argv[i]);
    } else if (!path) {
      path = argv[i];
    } else {
      return cli_usage_error("info", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!path) return cli_usage_error("info", "missing MODEL");
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (cli_load_model(path, &m, &d) != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  mil_program *p = mil_model_program(m);
  /* an imported ONNX model has no file of its own: show the one given */
  size_t pl = strlen(path);
  bool onnx = pl > 5 && strcmp(path + pl - 5, ".onnx") == 0;
  const char *shown = mil_model_path(m)[0] ? mil_model_path(m) : path;
  if (json) {
    int jrc = print_json(m, shown);
    mil_model_free(m);
    mil_diag_clear(&d);
    return jrc;
  }
  if (weights) {
    int wrc = cli_print_weights(p, thr);
    mil_model_free(m);
    mil_diag_clear(&d);
    return wrc;
  }
  int spec = mil_model_spec_version(m);
  const mil_model_desc *md = mil_model_description(m);
  printf("model: %s%s\n", cli_esc(shown),
         onnx ? " (ONNX, imported as `mil convert` imports it: DEFAULT pipeline, fp16, iOS15)" : "");
  printf("specification version: %d (%s)\n", spec, target_name(spec));
  printf("opset: %s\n", p->n_functions ? cli_esc(p->functions[0]->opset) : "-");
  printf("functions: %d (default: %s)%s\n", p->n_functions, cli_esc(md->default_function_name),
         md->multi_function ? " [multi-function description]" : "");
  for (int32_t i = 0; i < p->n_functions; i++) put_function(m, p->functions[i]);
  printf("metadata:\n");
  if (md->short_description[0]) printf("  shortDescription: %s\n", cli_esc(md->short_description));
  if (md->author[0]) printf("  author: %s\n", cli_esc(md->author));
  if (md->license[0]) printf("  license: %s\n", cli_esc(md->license));
  if (md->version_string[0]) printf("  versionString: %s\n", cli_esc(md->version_string));
  for (int32_t i = 0; i < md->n_user_defined; i++)
    printf("  %s: %s\n", cli_esc(md->user_keys[i]), cli_esc(md->user_values[i]));
  hist h;
  memset(&h, 0, sizeof h);
  int rc = CLI_OK;
  if (mil_program_walk(p, visit, &h) != 0) {
    fprintf(stderr, "mil: error: out of memory\n");
    rc = CLI_FAIL;
  } else {
    size_t *order = malloc((h.n ? h.n : 1) * sizeof *order);
    int64_t total = 0;
    for (size_t i = 0; i < h.n; i++) total += h.counts[i];
    printf("ops: %lld\n", (long long)total);
    if (order) {
      for (size_t i = 0; i < h.n; i++) order[i] = i;
      qsort_r(order, h.n, sizeof *order, cmp_hist, &h);
      for (size_t i = 0; i < h.n; i++) printf("  %-32s %lld\n", cli_esc(h.types[order[i]]), (long long)h.counts[order[i]]);
      free(order);
    }
    printf("constants by dtype (bytes, count; in weight file):\n");
    uint64_t all = 0, all_blob = 0;
    for (int dt = 0; dt < 128; dt++) {
      if (!h.consts[dt]) continue;
      printf("  %-10s %12llu bytes %6lld consts; weight file: %12llu bytes %6lld consts\n", mil_dtype_name((mil_dtype)dt),
             (unsigned long long)h.bytes[dt], (long long)h.consts[dt], (unsigned long long)h.blob_bytes[dt],
             (long long)h.blob_consts[dt]);
      all += h.bytes[dt];
      all_blob += h.blob_bytes[dt];
    }
    printf("  %-10s %12llu bytes; weight file: %llu bytes in %d file(s)\n", "total", (unsigned long long)all,
           (unsigned long long)all_blob, mil_model_n_weight_files(m));
    printf("numeric constants by compression (the op they feed):\n");
    for (int i = 0; i < h.nk; i++)
      printf("  %-40s %12llu bytes %6lld consts\n", h.kinds[i], (unsigned long long)h.kind_bytes[i],
             (long long)h.kind_consts[i]);
  }
  if (fflush(stdout) != 0) rc = CLI_FAIL;
  free(h.types);
  free(h.counts);
  mil_model_free(m);
  mil_diag_clear(&d);
  return rc;
}

/* make_pipeline (coremltools/models/utils.py): ML Programs chained into one
 * Pipeline model, and reading such a model back as its stages.
 *
 *   mil pipeline chunk1.mlpackage chunk2.mlpackage -o both.mlpackage
 *   mil run both.mlpackage --input x=x.npy
 *
 * The pipeline's inputs are the stages' inputs no earlier stage produces,
 * its outputs the stages' outputs no later stage takes (coremltools' rules);
 * an output without a shape takes the shape of the next stage's input of
 * that name. Stage i's weights go to weights/<i>-weight.bin, its blob
 * references name "@model_path/weights/<i>-weight.bin"; they are streamed
 * from the stage's mapped weight file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utils/utils_internal.h"

static bool has_name(Coreml__FeatureDescription **f, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (f[i]->name && !strcmp(f[i]->name, name)) return true;
  return false;
}

static bool push_clone(Coreml__FeatureDescription ***arr, size_t *n, const Coreml__FeatureDescription *f) {
  Coreml__FeatureDescription *c = io_pb_clone(f);
  if (!c) return false;
  if (!io_pb_push(arr, n, c)) {
    io_pb_free(c);
    return false;
  }
  return true;
}

/* coremltools' pipeline description and output shapes (mutates the
 * stages' output types). */
static mil_status pipeline_desc(mil_model **ms, int32_t n, Coreml__ModelDescription *pd, mil_diag *d) {
  size_t n_avail = 0, cap = 16;
  const char **avail = malloc(cap * sizeof *avail);
  if (!avail) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    Coreml__ModelDescription *md = ms[i]->desc;
    for (size_t k = 0; k < md->n_input && st == MIL_OK; k++) {
      bool seen = false;
      for (size_t a = 0; a < n_avail; a++) seen |= !strcmp(avail[a], md->input[k]->name);
      if (seen) continue;
      if (!push_clone(&pd->input, &pd->n_input, md->input[k])) st = MIL_ERR_NOMEM;
      if (n_avail == cap && !(avail = realloc(avail, (cap *= 2) * sizeof *avail))) st = MIL_ERR_NOMEM;
      if (st == MIL_OK) avail[n_avail++] = md->input[k]->name;
    }
    for (size_t k = 0; k < md->n_output && st == MIL_OK; k++) {
      if (n_avail == cap && !(avail = realloc(avail, (cap *= 2) * sizeof *avail))) st = MIL_ERR_NOMEM;
      if (st == MIL_OK) avail[n_avail++] = md->output[k]->name;
    }
  }
  free(avail);
  /* outputs: in reverse stage order, those no later stage takes */
  for (int32_t i = n - 1; i >= 0 && st == MIL_OK; i--) {
    Coreml__ModelDescription *md = ms[i]->desc;
    for (size_t k = 0; k < md->n_output && st == MIL_OK; k++) {
      bool used = false;
      for (int32_t j = i + 1; j < n; j++) used |= has_name(ms[j]->desc->input, ms[j]->desc->n_input, md->output[k]->name);
      if (!used && !push_clone(&pd->output, &pd->n_output, md->output[k])) st = MIL_ERR_NOMEM;
    }
  }
  /* an output without a shape takes the next stage's input type */
  for (int32_t i = 0; i + 1 < n && st == MIL_OK; i++) {
    Coreml__ModelDescription *md = ms[i]->desc, *nx = ms[i + 1]->desc;
    for (size_t k = 0; k < md->n_output; k++) {
      Coreml__FeatureDescription *o = md->output[k];
      if (o->type && o->type->type_case == COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE &&
          o->type->multiarraytype && o->type->multiarraytype->n_shape)
        continue;
      for (size_t j = 0; j < nx->n_input; j++)
        if (!strcmp(nx->input[j]->name, o->name) && nx->input[j]->type) {
          Coreml__FeatureType *t = io_pb_clone(nx->input[j]->type);
          if (!t) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
          io_pb_free(o->type);
          o->type = t;
        }
    }
  }
  return st == MIL_OK ? MIL_OK : mil_diag_error(d, st, "out of memory");
}

/* Stage i serialized with its weights in weights_dir/<i>-weight.bin. */
static mil_status encode_stage(mil_model *m, int32_t i, const char *weights_dir, const char *dest,
                               Coreml__Model **out, mil_diag *d) {
  char file[64], ref[96];
  snprintf(file, sizeof file, "%d-weight.bin", (int)i);
  snprintf(ref, sizeof ref, "@model_path/weights/%s", file);
  char *wpath = io_model_path_join(weights_dir, file);
  if (!wpath) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  mil_blob_writer *bw = NULL;
  void *data = NULL;
  size_t len = 0;
  mil_status st = mil_blob_writer_open(wpath, MIL_BLOB_WRITE_NO_DEDUP, &bw, d);
  if (st == MIL_OK) st = io_model_encode(m, bw, ref, dest, &data, &len, d);
  if (bw) {
    mil_status cs = st == MIL_OK ? mil_blob_writer_close(bw, d) : (mil_blob_writer_abort(bw), MIL_OK);
    if (st == MIL_OK) st = cs;
  }
  if (st == MIL_OK && !(*out = (Coreml__Model *)io_proto_unpack(data, len, &coreml__model__descriptor, dest, d)))
    st = MIL_ERR_FORMAT;
  free(data);
  free(wpath);
  return st;
}

static mil_status write_package(mil_model **ms, int32_t n, Coreml__ModelDescription *pd, const char *dest,
                                mil_diag *d) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld-pipeline", dest, (long)getpid());
  io_model_remove_tree(tmp);
  io_package pk;
  mil_status st = io_package_create(tmp, &pk, d);
  Coreml__Model top = COREML__MODEL__INIT;
  Coreml__Pipeline pl = COREML__PIPELINE__INIT;
  Coreml__Model **stages = calloc((size_t)n, sizeof *stages);
  if (!stages) st = MIL_ERR_NOMEM;
  int spec = 0;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    st = encode_stage(ms[i], i, pk.weights_dir, dest, &stages[i], d);
    if (st == MIL_OK && stages[i]->specificationversion > spec) spec = stages[i]->specificationversion;
  }
  if (st == MIL_OK) {
    pl.n_models = (size_t)n;
    pl.models = stages;
    top.specificationversion = spec;
    top.description = pd;
    top.type_case = COREML__MODEL__TYPE_PIPELINE;
    top.pipeline = &pl;
    size_t len = protobuf_c_message_get_packed_size(&top.base);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) st = MIL_ERR_NOMEM;
    else {
      protobuf_c_message_pack(&top.base, buf);
      st = io_model_write_file(pk.model_path, buf, len, d);
      free(buf);
    }
  }
  for (int32_t i = 0; stages && i < n; i++) io_pb_free(stages[i]);
  free(stages);
  if (st == MIL_OK) {
    if (io_model_path_exists(dest) && !io_model_path_is_dir(dest))
      st = mil_diag_error(d, MIL_ERR_IO, "%s: exists and is not a directory; not replacing it", dest);
    else st = io_model_replace_path(tmp, dest, true, d);
  }
  if (st != MIL_OK) io_model_remove_tree(tmp);
  if (pk.model_path || pk.weights_dir) io_package_close(&pk);
  if (st == MIL_ERR_NOMEM) return mil_diag_error(d, st, "out of memory");
  return st;
}

mil_status mil_utils_make_pipeline(const char *const *paths, int32_t n, const char *dest, mil_diag *d) {
  if (!paths || n < 2) return mil_diag_error(d, MIL_ERR_INVALID, "make_pipeline needs at least two models");
  if (!dest || strcmp(io_model_extension(dest), "mlpackage"))
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "make_pipeline: the pipeline is written as a .mlpackage, got '%s'",
                          dest ? dest : "(null)");
  mil_model **ms = calloc((size_t)n, sizeof *ms);
  if (!ms) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    st = mil_model_load(paths[i], &ms[i], d);
    if (st == MIL_OK && !ms[i]->desc) st = mil_model_sync_description(ms[i], d);
    if (st == MIL_OK && (ms[i]->desc->n_functions || ms[i]->prog->n_functions != 1))
      st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: make_pipeline takes single-function models; this one has %d "
                          "functions", paths[i], (int)ms[i]->prog->n_functions);
  }
  Coreml__ModelDescription *pd = NULL;
  if (st == MIL_OK && !(pd = io_pb_new(&coreml__model_description__descriptor)))
    st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (st == MIL_OK) st = pipeline_desc(ms, n, pd, d);
  if (st == MIL_OK) st = write_package(ms, n, pd, dest, d);
  io_pb_free(pd);
  for (int32_t i = 0; i < n; i++) mil_model_free(ms[i]);
  free(ms);
  return st;
}

/* ---- reading ---- */

static mil_status read_top(const char *path, io_package *pk, Coreml__Model **top, mil_diag *d) {
  *top = NULL;
  memset(pk, 0, sizeof *pk);
  if (strcmp(io_model_extension(path), "mlpackage"))
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: pipelines are read from .mlpackage directories", path);
  mil_status st = io_package_open(path, pk, d);
  void *data = NULL;
  size_t len = 0;
  if (st == MIL_OK) st = io_model_read_file(pk->model_path, pk->root, "model", &data, &len, d);
  if (st == MIL_OK && !(*top = (Coreml__Model *)io_proto_unpack(data, len, &coreml__model__descriptor,
                                                                 pk->model_path, d)))
    st = MIL_ERR_FORMAT;
  free(data);
  return st;
}

static Coreml__Pipeline *pipeline_of(Coreml__Model *m) {
  if (!m) return NULL;
  if (m->type_case == COREML__MODEL__TYPE_PIPELINE) return m->pipeline;
  if (m->type_case == COREML__MODEL__TYPE_PIPELINE_CLASSIFIER && m->pipelineclassifier)
    return m->pipelineclassifier->pipeline;
  if (m->type_case == COREML__MODEL__TYPE_PIPELINE_REGRESSOR && m->pipelineregressor)
    return m->pipelineregressor->pipeline;
  return NULL;
}

bool mil_utils_is_pipeline(const char *path) {
  if (!path || strcmp(io_model_extension(path), "mlpackage")) return false;
  io_package pk;
  Coreml__Model *top = NULL;
  mil_diag d;
  mil_diag_init(&d);
  bool r = read_top(path, &pk, &top, &d) == MIL_OK && pipeline_of(top) != NULL;
  io_pb_free(top);
  if (pk.model_path || pk.weights_dir || pk.root) io_package_close(&pk);
  mil_diag_clear(&d);
  return r;
}

mil_status mil_utils_pipeline_load(const char *path, mil_model ***stages, int32_t *n, mil_diag *d) {
  *stages = NULL;
  *n = 0;
  io_package pk;
  Coreml__Model *top = NULL;
  mil_status st = read_top(path, &pk, &top, d);
  Coreml__Pipeline *pl = st == MIL_OK ? pipeline_of(top) : NULL;
  if (st == MIL_OK && !pl) st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: not a pipeline model", path);
  mil_model **ms = NULL;
  if (st == MIL_OK && !(ms = calloc(pl->n_models ? pl->n_models : 1, sizeof *ms)))
    st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == MIL_OK && i < pl->n_models; i++) {
    size_t len = protobuf_c_message_get_packed_size(&pl->models[i]->base);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
      break;
    }
    protobuf_c_message_pack(&pl->models[i]->base, buf);
    char name[4200];
    snprintf(name, sizeof name, "%s (pipeline stage %d)", path, (int)i);
    st = mil_model_load_proto(buf, len, name, pk.weights_dir, &ms[i], d);
    free(buf);
  }
  if (st == MIL_OK) {
    *stages = ms;
    *n = (int32_t)pl->n_models;
  } else {
    mil_utils_pipeline_free(ms, pl ? (int32_t)pl->n_models : 0);
  }
  io_pb_free(top);
  if (pk.model_path || pk.weights_dir || pk.root) io_package_close(&pk);
  return st;
}

void mil_utils_pipeline_free(mil_model **stages, int32_t n) {
  for (int32_t i = 0; stages && i < n; i++) mil_model_free(stages[i]);
  free(stages);
}

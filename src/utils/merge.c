/* save_multifunction (coremltools/models/utils.py): several functions of
 * several models into one multifunction model whose equal weights are
 * stored once.
 *
 *   mil merge base.mlpackage:main:base lora.mlpackage:main:adapted \
 *       -o both.mlpackage --default base
 *
 * The sources are loaded once each and stay memory-mapped; their functions
 * are copied into one program under the target names (const values keep
 * viewing the sources' weight files), const_deduplication runs on every
 * function, then equal consts across functions get one value
 * (share_consts.c) so that the writer streams each distinct weight once
 * into the new weight.bin. The description is coremltools': one
 * FunctionDescription per function taken from its source, renamed, and
 * defaultFunctionName; the specification version is the sources' highest
 * and at least 9 (iOS18), and every function's opset is that version's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/passes.h"
#include "utils/utils_internal.h"

typedef struct src_model {
  const char *path;
  mil_model *m;
} src_model;

static Coreml__FeatureDescription **clone_features(Coreml__FeatureDescription *const *f, size_t n, bool *ok) {
  if (!n) return NULL;
  Coreml__FeatureDescription **r = calloc(n, sizeof *r);
  if (!r) {
    *ok = false;
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (!(r[i] = io_pb_clone(f[i]))) *ok = false;
  return r;
}

/* The FunctionDescription of function `fn` of source m (coremltools'
 * get_function_spec), named `target`. NULL on out of memory; *found false
 * when a multifunction description lacks the function. */
static Coreml__FunctionDescription *function_spec(const mil_model *m, const char *fn, const char *target,
                                                  bool *found) {
  const Coreml__ModelDescription *md = m->desc;
  *found = true;
  Coreml__FunctionDescription *r = io_pb_new(&coreml__function_description__descriptor);
  if (!r) return NULL;
  bool ok = utils_set_string(&r->name, target);
  if (!md) return ok ? r : (io_pb_free(r), NULL);
  if (md->n_functions == 0) {
    r->input = clone_features(md->input, md->n_input, &ok);
    r->n_input = md->n_input;
    r->output = clone_features(md->output, md->n_output, &ok);
    r->n_output = md->n_output;
    r->state = clone_features(md->state, md->n_state, &ok);
    r->n_state = md->n_state;
    ok = ok && utils_set_string(&r->predictedfeaturename, md->predictedfeaturename) &&
         utils_set_string(&r->predictedprobabilitiesname, md->predictedprobabilitiesname);
  } else {
    const Coreml__FunctionDescription *s = NULL;
    for (size_t i = 0; i < md->n_functions; i++)
      if (md->functions[i]->name && !strcmp(md->functions[i]->name, fn)) s = md->functions[i];
    if (!s) {
      *found = false;
    } else {
      r->input = clone_features(s->input, s->n_input, &ok);
      r->n_input = s->n_input;
      r->output = clone_features(s->output, s->n_output, &ok);
      r->n_output = s->n_output;
      r->state = clone_features(s->state, s->n_state, &ok);
      r->n_state = s->n_state;
      ok = ok && utils_set_string(&r->predictedfeaturename, s->predictedfeaturename) &&
           utils_set_string(&r->predictedprobabilitiesname, s->predictedprobabilitiesname);
    }
  }
  if (!ok) {
    io_pb_free(r);
    return NULL;
  }
  return r;
}

/* "main, other" into buf: the functions a model has. */
static void list_functions(const mil_program *p, char *buf, size_t n) {
  buf[0] = 0;
  size_t len = 0;
  for (int32_t i = 0; i < p->n_functions && len + 1 < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", p->functions[i]->name);
}

static mil_status check_args(const mil_merge_function *fns, int32_t n, const char *default_function, mil_diag *d) {
  if (!fns || n < 1) return mil_diag_error(d, MIL_ERR_INVALID, "save_multifunction: no function to save");
  bool default_found = false;
  for (int32_t i = 0; i < n; i++) {
    const mil_merge_function *f = &fns[i];
    if (!f->model_path || !f->src_function || !f->target_function)
      return mil_diag_error(d, MIL_ERR_INVALID, "save_multifunction: function %d: model path, source function and "
                            "target function must all be given", (int)i + 1);
    if (!utils_is_identifier(f->target_function))
      return mil_diag_error(d, MIL_ERR_INVALID, "save_multifunction: target function name '%s' (from %s) is not a "
                            "MIL identifier [a-zA-Z_][a-zA-Z0-9_]*", f->target_function, f->model_path);
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(fns[j].target_function, f->target_function))
        return mil_diag_error(d, MIL_ERR_INVALID, "save_multifunction: function %s already exist (given for %s:%s "
                              "and %s:%s)", f->target_function, fns[j].model_path, fns[j].src_function,
                              f->model_path, f->src_function);
    if (default_function && !strcmp(default_function, f->target_function)) default_found = true;
  }
  if (!default_function)
    return mil_diag_error(d, MIL_ERR_INVALID, "default_function_name must be set before calling save_multifunction");
  if (!default_found) {
    char names[512] = "";
    size_t len = 0;
    for (int32_t i = 0; i < n && len + 1 < sizeof names; i++)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", fns[i].target_function);
    return mil_diag_error(d, MIL_ERR_INVALID, "default_function_name %s not found in the program. Available "
                          "functions names are [%s]", default_function, names);
  }
  return MIL_OK;
}

static mil_status build(src_model *srcs, int32_t n_srcs, const mil_merge_function *fns, int32_t n,
                        const int32_t *src_of, const char *default_function, const char *dest, mil_diag *d) {
  int spec = IO_SPEC_MULTI_FUNCTION;
  for (int32_t s = 0; s < n_srcs; s++)
    if (srcs[s].m->spec_version > spec) spec = srcs[s].m->spec_version;
  mil_program *p = mil_program_new(NULL);
  if (!p) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    const mil_program *sp = srcs[src_of[i]].m->prog;
    const mil_function *sf = mil_program_find_function(sp, fns[i].src_function);
    if (!mil_program_copy_function(p, sf, fns[i].target_function)) {
      mil_program_free(p);
      return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory copying function %s of %s", fns[i].src_function,
                            fns[i].model_path);
    }
  }
  /* coremltools: const_deduplication.apply on the program, then the
   * weight sharing across functions */
  const mil_pass_def *dedup = mil_pass_find("common::const_deduplication");
  mil_status st = dedup ? mil_pass_run(dedup, p, NULL, NULL, d) : MIL_OK;
  if (st != MIL_OK) {
    mil_program_free(p);
    return st;
  }
  mil_utils_share_consts_across_functions(p);
  utils_set_opsets(p, spec);

  mil_model *out = NULL;
  if ((st = mil_model_from_program(p, spec, &out, d)) != MIL_OK) return st;
  Coreml__ModelDescription *desc = io_pb_new(&coreml__model_description__descriptor);
  if (!desc) goto oom;
  io_pb_free(out->desc);
  out->desc = desc;
  utils_desc_changed(out);
  if (!utils_set_string(&desc->defaultfunctionname, default_function)) goto oom;
  desc->functions = calloc((size_t)n, sizeof *desc->functions);
  if (!desc->functions) goto oom;
  for (int32_t i = 0; i < n; i++) {
    bool found = true;
    Coreml__FunctionDescription *fd =
        function_spec(srcs[src_of[i]].m, fns[i].src_function, fns[i].target_function, &found);
    if (!fd) goto oom;
    desc->functions[desc->n_functions++] = fd;
  }
  for (int32_t s = 0; s < n_srcs && st == MIL_OK; s++) st = utils_adopt_weights(out, srcs[s].m, d);
  if (st == MIL_OK) st = mil_model_save(out, dest, d);
  mil_model_free(out);
  return st;
oom:
  mil_model_free(out);
  return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
}

mil_status mil_utils_save_multifunction(const mil_merge_function *fns, int32_t n, const char *default_function,
                                        const char *dest_path, mil_diag *d) {
  mil_status st = check_args(fns, n, default_function, d);
  if (st != MIL_OK) return st;
  if (!dest_path) return mil_diag_error(d, MIL_ERR_INVALID, "save_multifunction: no destination path");
  src_model *srcs = calloc((size_t)n, sizeof *srcs);
  int32_t *src_of = calloc((size_t)n, sizeof *src_of);
  int32_t n_srcs = 0;
  if (!srcs || !src_of) {
    st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    int32_t s = 0;
    while (s < n_srcs && strcmp(srcs[s].path, fns[i].model_path)) s++;
    if (s == n_srcs) {
      srcs[s].path = fns[i].model_path;
      st = mil_model_load(fns[i].model_path, &srcs[s].m, d);
      if (st != MIL_OK) {
        mil_diag_error(d, st, "invalid model_path %s: it could not be loaded", fns[i].model_path);
        break;
      }
      n_srcs++;
      if (!srcs[s].m->prog) {
        st = mil_diag_error(d, MIL_ERR_INVALID, "invalid model_path %s: the model has no program", fns[i].model_path);
        break;
      }
    }
    src_of[i] = s;
    if (!mil_program_find_function(srcs[s].m->prog, fns[i].src_function)) {
      char have[512];
      list_functions(srcs[s].m->prog, have, sizeof have);
      st = mil_diag_error(d, MIL_ERR_INVALID, "src_function_name %s not found in %s (it has: %s)",
                          fns[i].src_function, fns[i].model_path, have);
    }
  }
  if (st == MIL_OK) st = build(srcs, n_srcs, fns, n, src_of, default_function, dest_path, d);
done:
  for (int32_t s = 0; srcs && s < n_srcs; s++) mil_model_free(srcs[s].m);
  free(srcs);
  free(src_of);
  return st;
}

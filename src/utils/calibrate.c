/* Activation calibration: the min/max of every intermediate tensor of a
 * program's main function over a set of samples, run by the interpreter.
 *
 * Mirrors coremltools/optimize/coreml/experimental/_post_training_quantization.py
 * (_get_activation_calibration_stats, _update_tensor_range,
 * _combine_lists_with_common_elements, _adjust_concat_surrounding_activation_stats)
 * and _model_debugger.py (ModelDebugger: the outputs of every non-const op of
 * the main block except the model's outputs; concat groups). Where
 * coremltools predicts a copy of the model with every intermediate added as
 * an output, the interpreter's observer (mil_interp_set_observer) hands each
 * value over once, so only two numbers per tensor are kept across samples.
 * NaN elements are left out of a range (numpy's min would give NaN). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mil/calibrate.h"
#include "mil/npy.h"
#include "mil/interp.h"
#include "mil/npy.h"

typedef struct cal_entry {
  char *name;
  double lo, hi;
  mil_dtype dtype;
  bool seen; /* at least one non-NaN element */
} cal_entry;

struct mil_calibrator {
  const mil_program *p;
  mil_interp *ip;
  cal_entry *e;
  int32_t n, cap;
  int32_t *slot; /* open addressing: index + 1, 0 = empty */
  int32_t n_slot;
  char **outputs; /* the function's outputs: not recorded */
  int32_t n_outputs;
  int64_t n_samples;
  bool oom;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool rehash(mil_calibrator *c, int32_t n_slot) {
  int32_t *s = calloc((size_t)n_slot, sizeof *s);
  if (!s) return false;
  for (int32_t i = 0; i < c->n; i++) {
    uint64_t h = hash_str(c->e[i].name) & (uint64_t)(n_slot - 1);
    while (s[h]) h = (h + 1) & (uint64_t)(n_slot - 1);
    s[h] = i + 1;
  }
  free(c->slot);
  c->slot = s;
  c->n_slot = n_slot;
  return true;
}

static cal_entry *find(const mil_calibrator *c, const char *name) {
  if (!c->n_slot) return NULL;
  uint64_t h = hash_str(name) & (uint64_t)(c->n_slot - 1);
  while (c->slot[h]) {
    cal_entry *e = &c->e[c->slot[h] - 1];
    if (strcmp(e->name, name) == 0) return e;
    h = (h + 1) & (uint64_t)(c->n_slot - 1);
  }
  return NULL;
}

static cal_entry *get(mil_calibrator *c, const char *name, mil_dtype dt) {
  cal_entry *e = find(c, name);
  if (e) return e;
  if (c->n == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 64;
    cal_entry *ne = realloc(c->e, (size_t)cap * sizeof *ne);
    if (!ne) return NULL;
    c->e = ne;
    c->cap = cap;
  }
  if ((c->n + 1) * 2 > c->n_slot && !rehash(c, c->n_slot ? c->n_slot * 2 : 128)) return NULL;
  size_t l = strlen(name) + 1;
  char *nm = malloc(l);
  if (!nm) return NULL;
  memcpy(nm, name, l);
  e = &c->e[c->n];
  memset(e, 0, sizeof *e);
  e->name = nm;
  e->dtype = dt;
  uint64_t h = hash_str(name) & (uint64_t)(c->n_slot - 1);
  while (c->slot[h]) h = (h + 1) & (uint64_t)(c->n_slot - 1);
  c->slot[h] = ++c->n;
  return e;
}

/* Min and max of t's non-NaN elements; false when there is none. */
static bool tensor_range(const mil_tensor *t, double *lo, double *hi) {
  double a = INFINITY, b = -INFINITY;
  int64_t n = t->numel;
  switch (t->dtype) {
  case MIL_DT_FP16: {
    const uint16_t *x = t->data;
    /* order the bit patterns: no conversion per element */
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (int64_t i = 0; i < n; i++) {
      uint16_t h = x[i];
      if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN */
      int32_t k = (h & 0x8000) ? -(int32_t)(h & 0x7fff) : (int32_t)h;
      if (k < mn) mn = k;
      if (k > mx) mx = k;
    }
    if (mn == INT32_MAX) return false;
    a = mil_fp16_to_fp32((uint16_t)(mn < 0 ? (0x8000 | -mn) : mn));
    b = mil_fp16_to_fp32((uint16_t)(mx < 0 ? (0x8000 | -mx) : mx));
    break;
  }
  case MIL_DT_FP32: {
    const float *x = t->data;
    float fa = INFINITY, fb = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      float v = x[i];
      fa = v < fa ? v : fa;
      fb = v > fb ? v : fb;
    }
    a = fa, b = fb;
    break;
  }
  case MIL_DT_FP64: {
    const double *x = t->data;
    for (int64_t i = 0; i < n; i++) {
      a = x[i] < a ? x[i] : a;
      b = x[i] > b ? x[i] : b;
    }
    break;
  }
  case MIL_DT_INT32: {
    const int32_t *x = t->data;
    for (int64_t i = 0; i < n; i++) {
      a = x[i] < a ? x[i] : a;
      b = x[i] > b ? x[i] : b;
    }
    break;
  }
  default:
    return false; /* ModelDebugger.get_output_feature_type: fp16/fp32/fp64/int32 only */
  }
  *lo = a;
  *hi = b;
  return a <= b;
}

static void record(mil_calibrator *c, const char *name, const mil_tensor *t) {
  double lo = 0, hi = 0;
  if (!tensor_range(t, &lo, &hi)) {
    if (t->dtype != MIL_DT_FP16 && t->dtype != MIL_DT_FP32 && t->dtype != MIL_DT_FP64 && t->dtype != MIL_DT_INT32)
      return;
    if (!get(c, name, t->dtype)) c->oom = true;
    return;
  }
  cal_entry *e = get(c, name, t->dtype);
  if (!e) {
    c->oom = true;
    return;
  }
  if (!e->seen || lo < e->lo) e->lo = lo;
  if (!e->seen || hi > e->hi) e->hi = hi;
  e->seen = true;
}

static void observe(void *ud, const char *op_name, const char *op_type, const char *var_name, const mil_tensor *t) {
  (void)op_name;
  (void)op_type;
  mil_calibrator *c = ud;
  for (int32_t i = 0; i < c->n_outputs; i++)
    if (strcmp(c->outputs[i], var_name) == 0) return;
  record(c, var_name, t);
}

mil_status mil_calibrator_new(const mil_program *p, mil_calibrator **out, mil_diag *d) {
  if (!p || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_calibrator_new: NULL argument");
  *out = NULL;
  mil_calibrator *c = calloc(1, sizeof *c);
  if (!c) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  c->p = p;
  mil_status st = mil_interp_new(p, NULL, &c->ip, d);
  if (st != MIL_OK) {
    free(c);
    return st;
  }
  int32_t n = mil_interp_n_outputs(c->ip);
  c->outputs = calloc((size_t)(n ? n : 1), sizeof *c->outputs);
  if (!c->outputs) {
    mil_calibrator_free(c);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < n; i++) {
    const char *s = mil_interp_output_name(c->ip, i);
    size_t l = strlen(s) + 1;
    if (!(c->outputs[i] = malloc(l))) {
      mil_calibrator_free(c);
      return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    }
    memcpy(c->outputs[i], s, l);
    c->n_outputs = i + 1;
  }
  mil_interp_set_observer(c->ip, observe, c);
  *out = c;
  return MIL_OK;
}

void mil_calibrator_free(mil_calibrator *c) {
  if (!c) return;
  mil_interp_free(c->ip);
  for (int32_t i = 0; i < c->n; i++) free(c->e[i].name);
  for (int32_t i = 0; i < c->n_outputs; i++) free(c->outputs[i]);
  free(c->outputs);
  free(c->e);
  free(c->slot);
  free(c);
}

int64_t mil_calibrator_n_samples(const mil_calibrator *c) { return c ? c->n_samples : 0; }

mil_status mil_calibrator_add_sample(mil_calibrator *c, int32_t n, const char *const *names, const mil_tensor *tensors,
                                     mil_diag *d) {
  if (!c || (n && !tensors)) return mil_diag_error(d, MIL_ERR_INVALID, "mil_calibrator_add_sample: NULL argument");
  int32_t n_in = mil_interp_n_inputs(c->ip);
  for (int32_t i = 0; i < n; i++) {
    const char *name = names ? names[i] : NULL;
    if (!name) {
      /* coremltools: a sample without input names needs a single-input model */
      if (n > 1 || n_in != 1)
        return mil_diag_error(d, MIL_ERR_INVALID,
                              "calibration sample %lld: when the model has multiple inputs, each array needs the "
                              "name of its input",
                              (long long)c->n_samples);
      name = mil_interp_input_name(c->ip, 0);
    }
    mil_status st = mil_interp_set_input(c->ip, name, &tensors[i], d);
    if (st != MIL_OK) return st;
    record(c, name, &tensors[i]);
  }
  if (c->oom) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory recording activation ranges");
  mil_status st = mil_interp_run(c->ip, NULL, d);
  if (st != MIL_OK) return st;
  if (c->oom) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory recording activation ranges");
  c->n_samples++;
  return MIL_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a > b && strcmp(s + a - b, suf) == 0;
}

/* A float array of another float dtype (fp16, fp32, fp64) is converted in
 * place to the input's dtype, as `mil run` and predict convert their inputs;
 * a finite value that would not be finite there is refused. Other
 * mismatches are left to the interpreter's check. */
static mil_status convert_npy(mil_npy *a, mil_dtype to, const char *path, const char *input, mil_diag *d) {
  bool from_f = a->dtype == MIL_DT_FP16 || a->dtype == MIL_DT_FP32 || a->dtype == MIL_DT_FP64;
  bool to_f = to == MIL_DT_FP16 || to == MIL_DT_FP32;
  if (!from_f || !to_f) return MIL_OK;
  size_t es = mil_dtype_size(to);
  void *buf = malloc((size_t)(a->numel ? a->numel : 1) * es);
  if (!buf) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < a->numel; i++) {
    double v = a->dtype == MIL_DT_FP64   ? ((const double *)a->data)[i]
               : a->dtype == MIL_DT_FP32 ? ((const float *)a->data)[i]
                                         : mil_fp16_to_fp32(((const uint16_t *)a->data)[i]);
    float f = (float)v;
    if (to == MIL_DT_FP16) {
      uint16_t h = mil_fp32_to_fp16(f);
      ((uint16_t *)buf)[i] = h;
      f = mil_fp16_to_fp32(h);
    } else {
      ((float *)buf)[i] = f;
    }
    if (isfinite(v) && !isfinite(f)) {
      free(buf);
      return mil_diag_error(d, MIL_ERR_INVALID, "calibration data: %s: input '%s' element %lld (%g) does not fit %s",
                            path, input, (long long)i, v, mil_dtype_name(to));
    }
  }
  /* the array owns its data (mil_npy_free frees it) */
  free(a->data);
  a->data = buf;
  a->dtype = to;
  a->nbytes = (size_t)a->numel * es;
  return MIL_OK;
}

/* Reads the .npy files of one sample folder and runs it. */
static mil_status add_folder(mil_calibrator *c, const char *dir, mil_diag *d) {
  DIR *dh = opendir(dir);
  if (!dh) return mil_diag_error(d, MIL_ERR_IO, "calibration data: cannot open folder %s", dir);
  int32_t n_in = mil_interp_n_inputs(c->ip), n = 0;
  mil_npy **arr = calloc((size_t)(n_in ? n_in : 1), sizeof *arr);
  const char **names = calloc((size_t)(n_in ? n_in : 1), sizeof *names);
  mil_tensor *ts = calloc((size_t)(n_in ? n_in : 1), sizeof *ts);
  mil_status st = arr && names && ts ? MIL_OK : mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  struct dirent *de;
  while (st == MIL_OK && (de = readdir(dh)) != NULL) {
    if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".npy")) continue;
    char input[512];
    size_t l = strlen(de->d_name) - 4;
    if (l >= sizeof input) continue;
    memcpy(input, de->d_name, l);
    input[l] = 0;
    int32_t k = -1;
    for (int32_t i = 0; i < n_in; i++)
      if (strcmp(mil_interp_input_name(c->ip, i), input) == 0) k = i;
    if (k < 0) {
      st = mil_diag_error(d, MIL_ERR_NOT_FOUND, "calibration data: %s/%s: the model has no input named '%s'", dir,
                          de->d_name, input);
      break;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    mil_npy *a = NULL;
    if ((st = mil_npy_read(path, &a, d)) != MIL_OK) break;
    names[n] = mil_interp_input_name(c->ip, k);
    arr[n] = a;
    const mil_type *want = mil_interp_input_type(c->ip, k);
    if (want && want->kind == MIL_TYPE_TENSOR && want->dtype != a->dtype &&
        (st = convert_npy(a, want->dtype, path, input, d)) != MIL_OK) {
      n++;
      break;
    }
    ts[n] = (mil_tensor){a->dtype, a->rank, a->shape, a->data, a->nbytes, a->numel};
    n++;
  }
  closedir(dh);
  if (st == MIL_OK && n < n_in)
    st = mil_diag_error(d, MIL_ERR_INVALID,
                        "calibration data: %s holds %d of the model's %d inputs (expected one <input>.npy per input)",
                        dir, (int)n, (int)n_in);
  if (st == MIL_OK) st = mil_calibrator_add_sample(c, n, names, ts, d);
  if (st != MIL_OK) mil_diag_add(d, MIL_SEV_NOTE, "calibration sample %s", dir);
  for (int32_t i = 0; i < n; i++) mil_npy_free(arr[i]);
  free(arr);
  free(names);
  free(ts);
  return st;
}

mil_status mil_calibrator_add_dir(mil_calibrator *c, const char *dir, mil_diag *d) {
  if (!c || !dir) return mil_diag_error(d, MIL_ERR_INVALID, "mil_calibrator_add_dir: NULL argument");
  DIR *dh = opendir(dir);
  if (!dh) return mil_diag_error(d, MIL_ERR_IO, "calibration data: cannot open folder %s", dir);
  char **subs = NULL;
  size_t n = 0, cap = 0;
  mil_status st = MIL_OK;
  struct dirent *de;
  while ((de = readdir(dh)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    DIR *sd = opendir(path);
    if (!sd) continue; /* only sample folders count */
    closedir(sd);
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **ns = realloc(subs, cap * sizeof *ns);
      if (!ns) {
        st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
        break;
      }
      subs = ns;
    }
    size_t l = strlen(path) + 1;
    if (!(subs[n] = malloc(l))) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
      break;
    }
    memcpy(subs[n++], path, l);
  }
  closedir(dh);
  if (st == MIL_OK && n == 0)
    st = mil_diag_error(d, MIL_ERR_INVALID,
                        "calibration data: %s holds no sample folder (expected DIR/<sample>/<input>.npy)", dir);
  if (subs) qsort(subs, n, sizeof *subs, cmp_str);
  for (size_t i = 0; i < n && st == MIL_OK; i++) st = add_folder(c, subs[i], d);
  for (size_t i = 0; i < n; i++) free(subs[i]);
  free(subs);
  return st;
}

/* _adjust_concat_surrounding_activation_stats: the inputs and output of
 * each concat of the main block (whose output is not a model output) share
 * one range; groups with a common tensor are joined as
 * _combine_lists_with_common_elements joins them (each list into the first
 * group it meets). Groups are held as entry-index marks. */
static void merge_concats(mil_calibrator *c) {
  mil_function *f = mil_program_find_function(c->p, "main");
  if (!f && c->p->n_functions > 0) f = c->p->functions[0];
  mil_block *b = f ? mil_function_body(f) : NULL;
  if (!b || !c->n) return;
  int32_t *group = malloc((size_t)c->n * sizeof *group);
  if (!group) return;
  for (int32_t i = 0; i < c->n; i++) group[i] = -1;
  int32_t n_groups = 0;
  for (mil_op *op = b->first; op; op = op->next) {
    if (strcmp(op->type, "concat") != 0 || op->n_outputs < 1) continue;
    cal_entry *out = find(c, op->outputs[0]->name);
    if (!out) continue; /* a model output, or never run */
    mil_input *in = mil_op_find_input(op, "values");
    if (!in) continue;
    /* the first group any member already belongs to, else a new one */
    int32_t g = -1;
    for (int32_t j = 0; j <= in->n_args && g < 0; j++) {
      const mil_var *v = j < in->n_args ? in->args[j].use.var : op->outputs[0];
      cal_entry *e = v ? find(c, v->name) : NULL;
      if (e && group[e - c->e] >= 0) g = group[e - c->e];
    }
    if (g < 0) g = n_groups++;
    for (int32_t j = 0; j <= in->n_args; j++) {
      const mil_var *v = j < in->n_args ? in->args[j].use.var : op->outputs[0];
      cal_entry *e = v ? find(c, v->name) : NULL;
      if (!e) continue;
      int32_t old = group[e - c->e];
      if (old >= 0 && old != g)
        for (int32_t k = 0; k < c->n; k++)
          if (group[k] == old) group[k] = g;
      group[e - c->e] = g;
    }
  }
  for (int32_t g = 0; g < n_groups; g++) {
    double lo = INFINITY, hi = -INFINITY;
    for (int32_t k = 0; k < c->n; k++)
      if (group[k] == g && c->e[k].seen) {
        lo = fmin(lo, c->e[k].lo);
        hi = fmax(hi, c->e[k].hi);
      }
    if (lo > hi) continue;
    for (int32_t k = 0; k < c->n; k++)
      if (group[k] == g) {
        c->e[k].lo = lo;
        c->e[k].hi = hi;
        c->e[k].seen = true;
      }
  }
  free(group);
}

char *mil_calibrator_stats_json(mil_calibrator *c) {
  if (!c) return NULL;
  merge_concats(c);
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  for (int32_t i = 0; i < c->n; i++) {
    const cal_entry *e = &c->e[i];
    if (!e->seen) continue;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToObject(root, e->name, o) || !cJSON_AddNumberToObject(o, "rmin", e->lo) ||
        !cJSON_AddNumberToObject(o, "rmax", e->hi) ||
        !cJSON_AddStringToObject(o, "dtype", mil_dtype_name(e->dtype))) {
      cJSON_Delete(root);
      return NULL;
    }
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

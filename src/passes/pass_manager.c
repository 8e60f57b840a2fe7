/* Pass registry, option values, and the pipeline runner with its
 * observability (timing, change counts, op counts, verify-each,
 * print-after).
 *
 * Mirrors coremltools' pass_registry.py (PASS_REGISTRY), graph_pass.py
 * (PassOption, AbstractGraphPass.set_options) and pass_pipeline.py
 * (PassPipelineManager.apply_pipeline). */
#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "mil/ops.h"
#include "mil/passes.h"
#include "passes/pass_internal.h"

/* ---------- registry ---------- */

#define PASS_X(n) extern const mil_pass_def pass_def_##n;
#include "passes.def"
#undef PASS_X

static const mil_pass_def *const k_registered[] = {
#define PASS_X(n) &pass_def_##n,
#include "passes.def"
#undef PASS_X
    NULL};
/* Passes added at run time by mil_pass_register. */
#define MAX_EXTRA 64
static const mil_pass_def *g_extra[MAX_EXTRA];
static size_t g_n_extra;

/* Counted at run time (with an empty passes.def a constant 0 would make
 * every `i < count` test a compile-time tautology), once: the lookups of a
 * pipeline run ask it for every pass they compare. */
static size_t n_builtin(void) {
  static _Atomic size_t known; /* the count plus one, 0 until counted */
  size_t n = known;
  if (n) return n - 1;
  while (k_registered[n]) n++;
  known = n + 1;
  return n;
}
#define N_REGISTERED (n_builtin() + g_n_extra)

size_t mil_pass_count(void) { return N_REGISTERED; }

static const mil_pass_def *registered_at(size_t i) {
  size_t nb = n_builtin();
  if (i < nb) return k_registered[i];
  return i - nb < g_n_extra ? g_extra[i - nb] : NULL;
}

const mil_pass_def *mil_pass_at(size_t i) { return registered_at(i); }

/* Compares a user-given pass name (with or without "common::") to a full
 * name. */
bool pass_name_matches(const char *given, const char *full) {
  if (!given || !full) return false;
  if (strcmp(given, full) == 0) return true;
  if (!strstr(given, "::") && strncmp(full, "common::", 8) == 0) return strcmp(given, full + 8) == 0;
  return false;
}

const mil_pass_def *mil_pass_find(const char *name) {
  /* a pipeline's names are the definitions' own strings: compared by address first */
  for (size_t i = 0, n = N_REGISTERED; i < n; i++)
    if (registered_at(i)->name == name) return registered_at(i);
  for (size_t i = 0, n = N_REGISTERED; i < n; i++)
    if (pass_name_matches(name, registered_at(i)->name)) return registered_at(i);
  return NULL;
}

const mil_pass_def *mil_pass_lookup(const char *name) {
  const mil_pass_def *p = mil_pass_find(name);
  if (p) return p;
  for (size_t i = 0; i < pass_catalog_count(); i++)
    if (pass_name_matches(name, pass_catalog_at(i)->name)) return pass_catalog_at(i);
  return NULL;
}

bool mil_pass_is_implemented(const char *name) {
  const mil_pass_def *p = mil_pass_find(name);
  return p && p->run;
}

/* Catalog entries that are not registered, in catalog order. */
static bool catalog_entry_is_registered(const mil_pass_def *c) {
  for (size_t i = 0, n = N_REGISTERED; i < n; i++)
    if (strcmp(registered_at(i)->name, c->name) == 0) return true;
  return false;
}

size_t mil_pass_known_count(void) {
  size_t n = N_REGISTERED;
  for (size_t i = 0; i < pass_catalog_count(); i++)
    if (!catalog_entry_is_registered(pass_catalog_at(i))) n++;
  return n;
}

const mil_pass_def *mil_pass_known_at(size_t i) {
  size_t k = N_REGISTERED;
  if (i < k) return registered_at(i);
  for (size_t j = 0; j < pass_catalog_count(); j++) {
    const mil_pass_def *c = pass_catalog_at(j);
    if (catalog_entry_is_registered(c)) continue;
    if (k++ == i) return c;
  }
  return NULL;
}

mil_status mil_pass_register(const mil_pass_def *pass, mil_diag *d) {
  if (!pass || !pass->name || !pass->run || !strstr(pass->name, "::"))
    return mil_diag_error(d, MIL_ERR_INVALID, "a pass needs a name of the form ns::name and a run function");
  if (mil_pass_find(pass->name))
    return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s' is already registered", pass->name);
  if (g_n_extra == MAX_EXTRA)
    return mil_diag_error(d, MIL_ERR_INVALID, "cannot register pass '%s': %d passes are registered already",
                          pass->name, MAX_EXTRA);
  g_extra[g_n_extra++] = pass;
  return MIL_OK;
}

bool mil_pass_unregister(const char *name) {
  for (size_t i = 0; i < g_n_extra; i++)
    if (strcmp(g_extra[i]->name, name) == 0) {
      memmove(&g_extra[i], &g_extra[i + 1], (g_n_extra - i - 1) * sizeof g_extra[0]);
      g_n_extra--;
      return true;
    }
  return false;
}

/* ---------- option values ---------- */

typedef struct popt_val {
  bool set;
  bool b;
  int64_t i;
  double f;
  char *s; /* STRING, JSON */
  int32_t n;
  char **list; /* STRING_LIST */
  mil_op_selector sel;
  void *sel_ud;
} popt_val;

struct mil_pass_options {
  const mil_pass_def *pass;
  popt_val *v; /* pass->n_options entries */
};

const char *mil_pass_opt_type_name(mil_pass_opt_type t) {
  switch (t) {
  case MIL_POPT_BOOL: return "bool";
  case MIL_POPT_INT: return "int";
  case MIL_POPT_DOUBLE: return "double";
  case MIL_POPT_STRING: return "string";
  case MIL_POPT_STRING_LIST: return "string list";
  case MIL_POPT_JSON: return "json";
  case MIL_POPT_SELECTOR: return "op selector";
  }
  return "?";
}

static void val_clear(popt_val *v) {
  free(v->s);
  for (int32_t k = 0; k < v->n; k++) free(v->list[k]);
  free(v->list);
  memset(v, 0, sizeof *v);
}

static char *dup_n(const char *s, size_t n) {
  char *r = malloc(n + 1);
  if (!r) return NULL;
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

static int option_index(const mil_pass_def *pass, const char *key) {
  for (int32_t i = 0; i < pass->n_options; i++)
    if (strcmp(pass->options[i].name, key) == 0) return i;
  return -1;
}

static mil_status no_such_option(const mil_pass_def *pass, const char *key, mil_diag *d) {
  char list[512];
  size_t len = 0;
  list[0] = 0;
  for (int32_t i = 0; i < pass->n_options && len + 2 < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", pass->options[i].name);
  if (len >= sizeof list) len = sizeof list - 1;
  return mil_diag_error(d, MIL_ERR_NOT_FOUND, "pass '%s' has no option '%s' (%s%s)", pass->name, key,
                        pass->n_options ? "its options: " : "it has no options", list);
}

/* Appends list items split at commas (coremltools' "mul,const"). */
static mil_status list_add_csv(popt_val *v, const char *s) {
  const char *p = s;
  for (;;) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    char **nl = realloc(v->list, (size_t)(v->n + 1) * sizeof *nl);
    if (!nl) return MIL_ERR_NOMEM;
    v->list = nl;
    if (!(v->list[v->n] = dup_n(p, n))) return MIL_ERR_NOMEM;
    v->n++;
    if (!c) break;
    p = c + 1;
  }
  return MIL_OK;
}

static bool is_integral(double x) { return isfinite(x) && x == floor(x) && fabs(x) < 9.2e18; }

/* Converts one JSON item (or, when j is NULL, the bare string raw) to the
 * option's type. */
static mil_status set_value(popt_val *v, const mil_pass_def *pass, const mil_pass_option_def *od, const cJSON *j,
                            const char *raw, mil_diag *d) {
  const char *what = j ? (cJSON_IsString(j) ? "a string" : cJSON_IsNumber(j) ? "a number" : cJSON_IsBool(j) ? "a bool"
                                                          : cJSON_IsArray(j)  ? "a list"
                                                          : cJSON_IsObject(j) ? "an object"
                                                                              : "null")
                       : "a string";
  popt_val nv;
  memset(&nv, 0, sizeof nv);
  if (j && cJSON_IsNull(j)) {
    val_clear(v);
    return MIL_OK;
  }
  const char *str = j ? (cJSON_IsString(j) ? j->valuestring : NULL) : raw;
  switch (od->type) {
  case MIL_POPT_BOOL:
    if (j && cJSON_IsBool(j)) nv.b = cJSON_IsTrue(j);
    else if (j && cJSON_IsNumber(j) && (j->valuedouble == 0 || j->valuedouble == 1)) nv.b = j->valuedouble != 0;
    else if (str && (strcmp(str, "True") == 0 || strcmp(str, "true") == 0)) nv.b = true;
    else if (str && (strcmp(str, "False") == 0 || strcmp(str, "false") == 0)) nv.b = false;
    else goto bad;
    break;
  case MIL_POPT_INT:
    if (!j || !cJSON_IsNumber(j) || !is_integral(j->valuedouble)) goto bad;
    nv.i = (int64_t)j->valuedouble;
    if ((od->has_min && (double)nv.i < od->min) || (od->has_max && (double)nv.i > od->max)) goto range;
    break;
  case MIL_POPT_DOUBLE:
    if (j && cJSON_IsNumber(j)) nv.f = j->valuedouble;
    else if (str) {
      char *end;
      nv.f = strtod(str, &end);
      if (end == str || *end) goto bad;
    } else goto bad;
    if ((od->has_min && nv.f < od->min) || (od->has_max && nv.f > od->max)) goto range;
    /* the text it was given, for mil_pass_opt_to_string (the passes format no numbers) */
    if (!(nv.s = str ? dup_n(str, strlen(str)) : cJSON_PrintUnformatted(j))) return MIL_ERR_NOMEM;
    break;
  case MIL_POPT_STRING:
    if (str) nv.s = dup_n(str, strlen(str));
    else if (j && cJSON_IsNumber(j)) nv.s = cJSON_PrintUnformatted(j);
    else goto bad;
    if (!nv.s) return MIL_ERR_NOMEM;
    break;
  case MIL_POPT_STRING_LIST:
    if (str) {
      if (*str && list_add_csv(&nv, str) != MIL_OK) goto nomem;
    } else if (j && cJSON_IsArray(j)) {
      const cJSON *it;
      cJSON_ArrayForEach(it, j) {
        if (!cJSON_IsString(it)) {
          what = "a list with a non-string item";
          goto bad;
        }
        char **nl = realloc(nv.list, (size_t)(nv.n + 1) * sizeof *nl);
        if (!nl) goto nomem;
        nv.list = nl;
        if (!(nv.list[nv.n] = dup_n(it->valuestring, strlen(it->valuestring)))) goto nomem;
        nv.n++;
      }
    } else goto bad;
    break;
  case MIL_POPT_JSON:
    if (!j) {
      what = "text that is not JSON";
      goto bad;
    }
    if (!(nv.s = cJSON_PrintUnformatted(j))) return MIL_ERR_NOMEM;
    break;
  case MIL_POPT_SELECTOR:
    return mil_diag_error(d, MIL_ERR_INVALID,
                          "pass '%s': option '%s' is an op selector and can only be set through the C API", pass->name,
                          od->name);
  }
  nv.set = true;
  val_clear(v);
  *v = nv;
  return MIL_OK;
bad:
  val_clear(&nv);
  return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s': option '%s' expects %s, got %s", pass->name, od->name,
                        od->type == MIL_POPT_STRING_LIST ? "a list of strings or a comma-separated string"
                        : od->type == MIL_POPT_INT       ? "an integer"
                        : od->type == MIL_POPT_DOUBLE    ? "a number"
                        : od->type == MIL_POPT_BOOL      ? "true or false"
                        : od->type == MIL_POPT_JSON      ? "JSON"
                                                         : "a string",
                        what);
range:
  val_clear(&nv);
  if (od->has_min && od->has_max)
    return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s': option '%s' must be in [%g, %g]", pass->name, od->name,
                          od->min, od->max);
  if (od->has_min)
    return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s': option '%s' must be >= %g", pass->name, od->name, od->min);
  return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s': option '%s' must be <= %g", pass->name, od->name, od->max);
nomem:
  val_clear(&nv);
  return MIL_ERR_NOMEM;
}

/* Text -> value: JSON when the whole text parses as JSON, else a bare string. */
static mil_status set_text(popt_val *v, const mil_pass_def *pass, const mil_pass_option_def *od, const char *text,
                           mil_diag *d) {
  cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
  mil_status st = set_value(v, pass, od, j, text, d);
  cJSON_Delete(j);
  return st;
}

mil_status pass_option_check(const mil_pass_def *pass, const char *key, const char *value, mil_diag *d) {
  int k = option_index(pass, key);
  if (k < 0) return no_such_option(pass, key, d);
  popt_val tmp;
  memset(&tmp, 0, sizeof tmp);
  mil_status st = set_text(&tmp, pass, &pass->options[k], value, d);
  val_clear(&tmp);
  return st;
}

mil_pass_options *mil_pass_options_new(const mil_pass_def *pass) {
  if (!pass) return NULL;
  mil_pass_options *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->pass = pass;
  o->v = calloc(pass->n_options ? (size_t)pass->n_options : 1, sizeof *o->v);
  if (!o->v) {
    free(o);
    return NULL;
  }
  for (int32_t i = 0; i < pass->n_options; i++) {
    const mil_pass_option_def *od = &pass->options[i];
    if (!od->default_value) continue;
    mil_diag tmp = {0};
    mil_status st = set_text(&o->v[i], pass, od, od->default_value, &tmp);
    /* a default that does not parse is a bug in the pass declaration */
    assert(st == MIL_OK || st == MIL_ERR_NOMEM);
    mil_diag_clear(&tmp);
    if (st == MIL_ERR_NOMEM) {
      mil_pass_options_free(o);
      return NULL;
    }
  }
  return o;
}

void mil_pass_options_free(mil_pass_options *o) {
  if (!o) return;
  for (int32_t i = 0; i < o->pass->n_options; i++) val_clear(&o->v[i]);
  free(o->v);
  free(o);
}

mil_status mil_pass_options_set(mil_pass_options *o, const char *key, const char *value, mil_diag *d) {
  int k = option_index(o->pass, key);
  if (k < 0) return no_such_option(o->pass, key, d);
  return set_text(&o->v[k], o->pass, &o->pass->options[k], value ? value : "null", d);
}

mil_status mil_pass_options_set_selector(mil_pass_options *o, const char *key, mil_op_selector fn, void *ud,
                                         mil_diag *d) {
  int k = option_index(o->pass, key);
  if (k < 0) return no_such_option(o->pass, key, d);
  if (o->pass->options[k].type != MIL_POPT_SELECTOR)
    return mil_diag_error(d, MIL_ERR_INVALID, "pass '%s': option '%s' is a %s, not an op selector", o->pass->name,
                          key, mil_pass_opt_type_name(o->pass->options[k].type));
  val_clear(&o->v[k]);
  o->v[k].set = fn != NULL;
  o->v[k].sel = fn;
  o->v[k].sel_ud = ud;
  return MIL_OK;
}

static const popt_val *get(const mil_pass_options *o, const char *key, mil_pass_opt_type t) {
  if (!o) return NULL;
  int k = option_index(o->pass, key);
  assert(k >= 0 && "pass reads an option it does not declare");
  if (k < 0) return NULL;
  assert(o->pass->options[k].type == t && "pass reads an option with the wrong type");
  if (o->pass->options[k].type != t) return NULL;
  return &o->v[k];
}

bool mil_pass_opt_is_set(const mil_pass_options *o, const char *key) {
  if (!o) return false;
  int k = option_index(o->pass, key);
  assert(k >= 0);
  return k >= 0 && o->v[k].set;
}

bool mil_pass_opt_bool(const mil_pass_options *o, const char *key) {
  const popt_val *v = get(o, key, MIL_POPT_BOOL);
  return v && v->set && v->b;
}

int64_t mil_pass_opt_int(const mil_pass_options *o, const char *key) {
  const popt_val *v = get(o, key, MIL_POPT_INT);
  return v && v->set ? v->i : 0;
}

double mil_pass_opt_double(const mil_pass_options *o, const char *key) {
  const popt_val *v = get(o, key, MIL_POPT_DOUBLE);
  return v && v->set ? v->f : 0.0;
}

const char *mil_pass_opt_string(const mil_pass_options *o, const char *key) {
  const popt_val *v = get(o, key, MIL_POPT_STRING);
  return v && v->set ? v->s : NULL;
}

int32_t mil_pass_opt_list(const mil_pass_options *o, const char *key, const char *const **items) {
  const popt_val *v = get(o, key, MIL_POPT_STRING_LIST);
  if (items) *items = v && v->set ? (const char *const *)v->list : NULL;
  return v && v->set ? v->n : 0;
}

bool mil_pass_opt_list_has(const mil_pass_options *o, const char *key, const char *s) {
  const char *const *items;
  int32_t n = mil_pass_opt_list(o, key, &items);
  for (int32_t i = 0; i < n; i++)
    if (strcmp(items[i], s) == 0) return true;
  return false;
}

const char *mil_pass_opt_json(const mil_pass_options *o, const char *key) {
  const popt_val *v = get(o, key, MIL_POPT_JSON);
  return v && v->set ? v->s : NULL;
}

bool mil_pass_opt_selects(const mil_pass_options *o, const char *key, const mil_op *op) {
  const popt_val *v = get(o, key, MIL_POPT_SELECTOR);
  if (!v || !v->set || !v->sel) return true;
  return v->sel(op, v->sel_ud);
}

const char *mil_pass_opt_to_string(const mil_pass_options *o, const char *key, char *buf, size_t n) {
  if (!n) return buf;
  buf[0] = 0;
  int k = option_index(o->pass, key);
  if (k < 0) return buf;
  const popt_val *v = &o->v[k];
  if (!v->set) {
    snprintf(buf, n, "None");
    return buf;
  }
  switch (o->pass->options[k].type) {
  case MIL_POPT_BOOL: snprintf(buf, n, "%s", v->b ? "true" : "false"); break;
  case MIL_POPT_INT: snprintf(buf, n, "%lld", (long long)v->i); break;
  case MIL_POPT_DOUBLE:
  case MIL_POPT_STRING:
  case MIL_POPT_JSON: snprintf(buf, n, "%s", v->s); break;
  case MIL_POPT_STRING_LIST: {
    size_t len = 0;
    for (int32_t i = 0; i < v->n && len < n; i++)
      len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "", v->list[i]);
    break;
  }
  case MIL_POPT_SELECTOR: snprintf(buf, n, "<selector>"); break;
  }
  return buf;
}

/* ---------- running ---------- */

double pass_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* True when the pass declares anchor op types and the program has none. */
static bool nothing_to_anchor(const mil_pass_def *pass, const mil_program *p) {
  if (!pass->anchors) return false;
  for (const char *const *a = pass->anchors; *a; a++)
    if (mil_program_count_op_type(p, *a) != 0) return false;
  return true;
}

/* Runs the pass unless its anchors are absent. A skipped pass would still
 * have filled in the values of '*'-marked vars read from text (most passes
 * start with pass_infer_marked_values), so a skip does that instead: the
 * program after a skipped pass is what the pass would have left. */
static mil_status run_one(const mil_pass_def *pass, mil_program *p, const mil_pass_options *opts, mil_pass_stats *st,
                          mil_diag *d, bool *inferred, bool *skipped) {
  if (!nothing_to_anchor(pass, p)) return pass->run(p, opts, st, d);
  if (skipped) *skipped = true;
  if (inferred && *inferred) return MIL_OK;
  if (inferred) *inferred = true;
  return pass_infer_marked_values(p, d);
}

mil_status mil_pass_run(const mil_pass_def *pass, mil_program *p, const mil_pass_options *opts, int64_t *changes,
                        mil_diag *d) {
  if (changes) *changes = 0;
  if (!pass || !pass->run)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "pass '%s' is not implemented", pass ? pass->name : "(null)");
  mil_pass_options *own = NULL;
  if (!opts) {
    if (!(own = mil_pass_options_new(pass))) return MIL_ERR_NOMEM;
    opts = own;
  } else if (opts->pass != pass && strcmp(opts->pass->name, pass->name) != 0) {
    return mil_diag_error(d, MIL_ERR_INVALID, "options of pass '%s' given to pass '%s'", opts->pass->name,
                          pass->name);
  }
  mil_pass_stats st = {0};
  mil_status s = run_one(pass, p, opts, &st, d, NULL, NULL);
  mil_pass_options_free(own);
  if (changes) *changes = st.changes;
  return s;
}

void mil_pipeline_report_free(mil_pipeline_report *r) {
  if (!r) return;
  free(r->records);
  memset(r, 0, sizeof *r);
}

static mil_status add_record(mil_pipeline_report *rep, const mil_pass_record *r) {
  if (!rep) return MIL_OK;
  mil_pass_record *nr = realloc(rep->records, (size_t)(rep->n_records + 1) * sizeof *nr);
  if (!nr) return MIL_ERR_NOMEM;
  rep->records = nr;
  rep->records[rep->n_records++] = *r;
  return MIL_OK;
}

mil_status mil_pipeline_run(mil_pipeline *pl, mil_program *p, const mil_pipeline_run_options *ro,
                            mil_pipeline_report *rep, mil_diag *d) {
  static const mil_pipeline_run_options k_none = {0};
  if (!ro) ro = &k_none;
  mil_status st = mil_pipeline_validate(pl, d);
  if (st != MIL_OK) return st;
  if (rep) {
    mil_pipeline_report_free(rep);
    rep->ops_before = rep->ops_after = mil_program_count_ops(p);
  }
  int32_t n = mil_pipeline_n_passes(pl);
  int64_t ops = mil_program_count_ops(p);
  /* marked values are filled in by the first skipped pass; later passes
   * make no marked var without its value */
  bool inferred = false;
  p->ops_made = 0; /* a loaded or built program is in order already */
  for (int32_t i = 0; i < n; i++) {
    const char *name = mil_pipeline_pass_at(pl, i);
    const mil_pass_def *pass = mil_pass_find(name);
    const mil_pass_options *opts = mil_pipeline_options(pl, name);
    if (!pass || !opts) return MIL_ERR_NOMEM; /* validate guaranteed the pass exists */
    mil_pass_record r = {pass->name, i, 0, 0, ops, ops, false};
    mil_pass_stats ps = {0};
    for (int32_t k = 0; k < ro->n_observers; k++)
      if (ro->observers[k].before) ro->observers[k].before(ro->observers[k].ud, pl, i, n, pass->name, p, ops);
    double t0 = pass_now_seconds();
    st = run_one(pass, p, opts, &ps, d, &inferred, &r.skipped);
    /* weights a pass replaced (fp16 casts, transposed copies) are given back
     * before the next pass makes more */
    if (st == MIL_OK && mil_program_collect_garbage(p, true) > 0) mil_release_free_memory();
    mil_program_release_mappings(p); /* weight pages the pass read need not stay resident */
    /* after a pass that added many ops, the op list is put back in memory order */
    if (st == MIL_OK) st = mil_program_compact_ops_if_worthwhile(p);
    r.seconds = pass_now_seconds() - t0;
    r.changes = ps.changes;
    r.ops_after = ops = mil_program_count_ops(p);
    if (rep) {
      rep->seconds += r.seconds;
      rep->ops_after = ops;
      if (r.changes > 0) rep->n_changed++;
    }
    if (add_record(rep, &r) != MIL_OK) return MIL_ERR_NOMEM;
    if (st != MIL_OK) {
      mil_diag_error(d, st, "pass '%s' (#%d of pipeline '%s') failed: %s", pass->name, i, mil_pipeline_name(pl),
                     mil_status_str(st));
      return st;
    }
    for (int32_t k = 0; k < ro->n_observers && st == MIL_OK; k++)
      if (ro->observers[k].after) st = ro->observers[k].after(ro->observers[k].ud, pl, &r, p, d);
    if (st != MIL_OK) return st;
  }
  mil_release_free_memory(); /* what the passes freed, before the caller writes the model */
  return MIL_OK;
}

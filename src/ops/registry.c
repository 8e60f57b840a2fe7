/* The op registry: lookup of op variants by type and opset, the inference
 * driver (input checks against the spec, then the variant's infer/fold), and
 * the program validator. Mirrors coremltools ops/registry.py and the input
 * checks of operation.py / input_type.py. */
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "ops/tensor_ops_internal.h"

#define OP_FAMILY_X(fam) OP_FAMILY_DECL(fam)
#include "ops/families.def"
#undef OP_FAMILY_X

typedef struct fam_table {
  const mil_op_def *defs;
  const size_t *count;
} fam_table;

static const fam_table k_families[] = {
#define OP_FAMILY_X(fam) {op_defs_##fam, &op_defs_##fam##_count},
#include "ops/families.def"
#undef OP_FAMILY_X
};

static const mil_op_def **g_defs; /* sorted by (type, opset) */
static size_t g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* For each variant, the spec version where the next variant of its op type
 * takes over, so that the variant an op resolved once (op->def) is checked
 * against its function's version without a lookup. Found by the variant's
 * address: the family tables lie together in memory, so
 * g_index[(address - g_base) / 16] holds it (variants are more than 16
 * bytes apart). */
typedef struct def_info {
  const mil_op_def *def;
  int end;
} def_info;
static def_info *g_info; /* g_n entries, in g_defs order */
static const def_info **g_index;
static uintptr_t g_base, g_span;

static int cmp_def(const void *a, const void *b) {
  const mil_op_def *x = *(const mil_op_def *const *)a, *y = *(const mil_op_def *const *)b;
  int c = strcmp(x->type, y->type);
  return c ? c : x->opset - y->opset;
}

/* Fills the info table and its index (left out when out of memory or when
 * the tables are too far apart: the driver then looks every variant up). */
static void build_info(void) {
  if (!g_n) return;
  g_info = calloc(g_n, sizeof *g_info);
  if (!g_info) return;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < g_n; i++) {
    /* variants of one type are adjacent and ordered by opset; one shadowed
     * by a later variant of the same opset gets an empty range */
    int end = i + 1 < g_n && strcmp(g_defs[i + 1]->type, g_defs[i]->type) == 0 ? g_defs[i + 1]->opset : INT_MAX;
    g_info[i] = (def_info){g_defs[i], end};
    uintptr_t a = (uintptr_t)g_defs[i];
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  size_t slots = (size_t)((hi - lo) >> 4) + 1;
  if (slots > ((size_t)1 << 20) || !(g_index = calloc(slots, sizeof *g_index))) return;
  for (size_t i = 0; i < g_n; i++) g_index[((uintptr_t)g_defs[i] - lo) >> 4] = &g_info[i];
  g_base = lo;
  g_span = hi - lo + 1;
}

static void build(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++) n += *k_families[f].count;
  g_defs = malloc((n ? n : 1) * sizeof *g_defs);
  if (!g_defs) return;
  for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++)
    for (size_t i = 0; i < *k_families[f].count; i++) g_defs[g_n++] = &k_families[f].defs[i];
  qsort(g_defs, g_n, sizeof *g_defs, cmp_def);
  build_info();
}

static void ensure(void) { pthread_once(&g_once, build); }

size_t mil_op_def_count(void) {
  ensure();
  return g_n;
}

const mil_op_def *mil_op_def_at(size_t i) {
  ensure();
  return i < g_n ? g_defs[i] : NULL;
}

/* The lookups of the last (type, version) pairs, per thread: builders and
 * the inference driver ask for the same few op types over and over. Keyed
 * by the address of the type string and checked against the found entry's
 * name, so a string reused at the same address cannot return a stale
 * answer; misses are not cached. */
#define DEF_CACHE 64
typedef struct def_slot {
  const char *type;
  int version;
  const mil_op_def *def;
} def_slot;
static _Thread_local def_slot g_def_cache[DEF_CACHE];

static size_t def_slot_of(const char *type, int version) {
  uintptr_t x = (uintptr_t)type;
  return (size_t)((x >> 3) ^ (x >> 9) ^ (uintptr_t)version) & (DEF_CACHE - 1);
}

static const mil_op_def *def_search(const char *type, int version) {
  size_t lo = 0, hi = g_n;
  while (lo < hi) { /* first entry with type >= `type` */
    size_t mid = (lo + hi) / 2;
    if (strcmp(g_defs[mid]->type, type) < 0) lo = mid + 1;
    else hi = mid;
  }
  const mil_op_def *best = NULL;
  for (size_t i = lo; i < g_n && strcmp(g_defs[i]->type, type) == 0; i++)
    if (g_defs[i]->opset <= version) best = g_defs[i];
  return best;
}

const mil_op_def *mil_op_def_find(const char *type, int version) {
  ensure();
  def_slot *s = &g_def_cache[def_slot_of(type, version)];
  if (s->type == type && s->version == version && s->def && op_str_eq(s->def->type, type)) return s->def;
  const mil_op_def *best = def_search(type, version);
  if (best) *s = (def_slot){type, version, best};
  return best;
}

/* The info of a variant (NULL when there is no index, or def is not a
 * registered variant). The registry must be built. */
static inline const def_info *info_of(const mil_op_def *def) {
  uintptr_t at = (uintptr_t)def - g_base;
  if (at >= g_span) return NULL;
  const def_info *in = g_index[at >> 4];
  return in && in->def == def ? in : NULL;
}

/* True when the variant is the one mil_op_def_find(type, version) returns. */
static bool info_applies(const def_info *in, const char *type, int version) {
  return in->def->opset <= version && version < in->end && op_str_eq(in->def->type, type);
}

const mil_input_spec *mil_op_def_input(const mil_op_def *def, const char *name) {
  for (int32_t i = 0; i < def->n_inputs; i++)
    if (strcmp(def->inputs[i].name, name) == 0) return &def->inputs[i];
  return NULL;
}

int mil_opset_version(const char *opset) {
  if (!opset) return -1;
  /* the usual form, "CoreML<digit>" */
  if (opset[0] == 'C' && opset[1] == 'o' && opset[2] == 'r' && opset[3] == 'e' && opset[4] == 'M' &&
      opset[5] == 'L' && opset[6] >= '3' && opset[6] <= '9' && !opset[7])
    return opset[6] - '0' + 1;
  if (strncmp(opset, "CoreML", 6) != 0) return -1;
  char *end;
  long v = strtol(opset + 6, &end, 10);
  if (*end || end == opset + 6 || v < 3 || v > 9) return -1;
  return (int)v + 1;
}

const char *mil_opset_name(int version) {
  static const char *names[] = {"CoreML3", "CoreML4", "CoreML5", "CoreML6", "CoreML7", "CoreML8", "CoreML9"};
  return version >= 4 && version <= 10 ? names[version - 4] : NULL;
}

const char *mil_opset_target_name(int version) {
  static const char *names[] = {"iOS13", "iOS14", "iOS15", "iOS16", "iOS17", "iOS18", "iOS26"};
  return version >= 4 && version <= 10 ? names[version - 4] : NULL;
}

static const mil_function *op_function(const mil_op *op) {
  const mil_block *b = op->block;
  while (b && !b->func && b->parent) b = b->parent->block;
  return b ? b->func : NULL;
}

/* ---- input checks ---- */

/* Equal names; most names differ in their first character. */
static inline bool name_eq(const char *a, const char *b) { return a == b || (a[0] == b[0] && op_str_eq(a, b)); }

static bool dtype_ok(uint64_t mask, mil_dtype dt) { return mask == 0 || (mask & MIL_DTB(dt)) != 0; }

static mil_dtype elem_dtype(const mil_type *t) {
  if (!t) return MIL_DT_UNUSED;
  if (t->kind == MIL_TYPE_STATE && t->elem) return t->elem->dtype;
  return t->kind == MIL_TYPE_TENSOR ? t->dtype : MIL_DT_UNUSED;
}

static bool kind_ok(uint32_t kinds, const mil_type *t) {
  switch (t->kind) {
  case MIL_TYPE_TENSOR:
    if (kinds & MIL_IK_TENSOR) return true;
    return (kinds & MIL_IK_SCALAR) && t->rank == 0;
  case MIL_TYPE_LIST: return (kinds & MIL_IK_LIST) != 0;
  case MIL_TYPE_STATE: return (kinds & MIL_IK_STATE) != 0;
  case MIL_TYPE_DICT: return (kinds & MIL_IK_DICT) != 0;
  default: return kinds == MIL_IK_ANY;
  }
}

static const char *kind_names(uint32_t k, char *buf, size_t n) {
  buf[0] = 0;
  if (k & MIL_IK_SCALAR && !(k & MIL_IK_TENSOR)) snprintf(buf, n, "a scalar");
  else if (k & MIL_IK_TENSOR) snprintf(buf, n, "a tensor");
  if (k & MIL_IK_LIST) snprintf(buf + strlen(buf), n - strlen(buf), "%sa list", buf[0] ? " or " : "");
  if (k & MIL_IK_STATE) snprintf(buf + strlen(buf), n - strlen(buf), "%sa state", buf[0] ? " or " : "");
  if (k & MIL_IK_DICT) snprintf(buf + strlen(buf), n - strlen(buf), "%sa dict", buf[0] ? " or " : "");
  return buf;
}

static const char *dtype_list(uint64_t mask, char *buf, size_t n) {
  buf[0] = 0;
  static const mil_dtype all[] = {MIL_DT_BOOL, MIL_DT_STRING, MIL_DT_FP16, MIL_DT_FP32, MIL_DT_FP64, MIL_DT_BF16,
                                  MIL_DT_INT4, MIL_DT_INT8, MIL_DT_INT16, MIL_DT_INT32, MIL_DT_INT64, MIL_DT_UINT1,
                                  MIL_DT_UINT2, MIL_DT_UINT3, MIL_DT_UINT4, MIL_DT_UINT6, MIL_DT_UINT8, MIL_DT_UINT16,
                                  MIL_DT_UINT32, MIL_DT_UINT64, MIL_DT_FP8E4M3FN, MIL_DT_FP8E5M2,
                                  MIL_DT_COMPLEX64, MIL_DT_COMPLEX128};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (mask & MIL_DTB(all[i])) {
      size_t l = strlen(buf);
      snprintf(buf + l, n - l, "%s%s", l ? ", " : "", mil_dtype_name(all[i]));
    }
  return buf;
}

/* The spec input named `name` (op input names are interned, spec names are
 * literals: compared by content, from the second character on once the
 * first ones are equal), or n when none. */
static inline int32_t spec_index(const mil_input_spec *specs, int32_t n, const char *name) {
  int32_t j = 0;
  while (j < n && !(specs[j].name[0] == name[0] && (!name[0] || op_str_eq(specs[j].name + 1, name + 1)))) j++;
  return j;
}

static mil_status fail_unknown(mil_infer_ctx *c, const char *name) {
  return op_fail(c, "unknown input '%s' (not an input of %s in %s)", name, c->def->type,
                 mil_opset_target_name(c->opset) ? mil_opset_target_name(c->opset) : "this opset");
}

/* The type-domain variables met so far: name, dtype, and the input that
 * fixed it. At most 8 are tracked; further ones are not checked. */
typedef struct tv_seen {
  const char *name;
  mil_dtype dt;
  const char *first;
} tv_seen;

/* Checks the bindings of spec input s (binding `in`, or NULL). */
static mil_status check_input(mil_infer_ctx *c, const mil_input_spec *s, const mil_input *in, tv_seen *tvs, int *ntv) {
  if (!in || in->n_args == 0) {
    if (!(s->flags & (MIL_IF_OPTIONAL | MIL_IF_INTERNAL)) && !(in && (s->kinds & MIL_IK_TUPLE)))
      return op_fail(c, "required input '%s' is missing", s->name);
    return MIL_OK;
  }
  if (in->n_args > 1 && !(s->kinds & MIL_IK_TUPLE))
    return op_fail(c, "input '%s' takes one value, got a tuple of %d", s->name, in->n_args);
  uint32_t kinds = s->kinds & ~(uint32_t)MIL_IK_TUPLE;
  for (int32_t j = 0; j < in->n_args; j++) {
    const mil_arg *a = &in->args[j];
    const mil_type *t = a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
    if (!t) return op_fail(c, "input '%s' is unbound", s->name);
    if (kinds && !kind_ok(kinds, t)) {
      char b1[256];
      return op_fail(c, "input '%s' must be %s, got %s", s->name, kind_names(kinds, b1, sizeof b1), op_tstr(c, t));
    }
    if (t->kind == MIL_TYPE_TENSOR || t->kind == MIL_TYPE_STATE) {
      mil_dtype dt = elem_dtype(t);
      if (!dtype_ok(s->dtypes, dt)) {
        char b2[256];
        return op_fail(c, "input '%s' must have dtype %s, got %s", s->name, dtype_list(s->dtypes, b2, sizeof b2),
                       op_tstr(c, t));
      }
      if (s->type_var) {
        int k = 0;
        while (k < *ntv && !op_str_eq(tvs[k].name, s->type_var)) k++;
        if (k == *ntv && *ntv < 8) tvs[(*ntv)++] = (tv_seen){s->type_var, dt, s->name};
        else if (k < *ntv && tvs[k].dt != dt)
          return op_fail(c, "input '%s' must have the same dtype as '%s' (%s), got %s", s->name, tvs[k].first,
                         mil_dtype_name(tvs[k].dt), op_tstr(c, t));
      }
    }
    if ((s->flags & MIL_IF_CONST) && !a->value) {
      const mil_var *v = a->use.var;
      if (!op_is_const_descendant(v))
        return op_fail(c, "input '%s' must be a compile-time constant, but %%%s is computed at run time", s->name,
                       v->name);
    }
  }
  return MIL_OK;
}

/* True when the one binding of spec input s is surely valid: a tensor of a
 * listed dtype, agreeing with the dtype its type variable has so far (then
 * recorded), known when const is required. False leaves the type variables
 * as they were and says nothing about validity. */
static inline bool input_ok(const mil_input_spec *s, const mil_input *in, tv_seen *tvs, int *ntv) {
  if (in->n_args != 1) return false;
  const mil_arg *a = &in->args[0];
  const mil_type *t = a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
  if (!t || t->kind != MIL_TYPE_TENSOR || !(s->kinds & MIL_IK_TENSOR)) return false;
  if (s->dtypes && !(s->dtypes & MIL_DTB(t->dtype))) return false;
  if ((s->flags & MIL_IF_CONST) && !a->value && !a->use.var->val) return false;
  if (!s->type_var) return true;
  int k = 0;
  while (k < *ntv && !op_str_eq(tvs[k].name, s->type_var)) k++;
  if (k < *ntv) return tvs[k].dt == t->dtype;
  if (k == 8) return false;
  tvs[(*ntv)++] = (tv_seen){s->type_var, t->dtype, s->name};
  return true;
}

/* Checks op's bindings against the variant's spec: first that every input
 * is in the spec, then each spec input in spec order. Leaves the binding
 * map in c (see mil_infer_ctx). */
static mil_status check_inputs(mil_infer_ctx *c) {
  const mil_op_def *def = c->def;
  const mil_input_spec *specs = def->inputs;
  int32_t ns = def->n_inputs;
  mil_op *op = c->op;
  tv_seen tvs[8];
  int ntv = 0;
  mil_status st;
  if (ns > OP_MAX_SPEC) { /* no map: each spec input looked up by name */
    for (int32_t i = 0; i < op->n_inputs; i++)
      if (spec_index(specs, ns, op->inputs[i].name) == ns) return fail_unknown(c, op->inputs[i].name);
    for (int32_t j = 0; j < ns; j++)
      if ((st = check_input(c, &specs[j], mil_op_find_input(op, specs[j].name), tvs, &ntv)) != MIL_OK) return st;
    return MIL_OK;
  }
  /* the first binding of each spec input, found in one pass over the op's
   * inputs (spec input names are distinct) */
  uint64_t bound = 0;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    int32_t j = spec_index(specs, ns, op->inputs[i].name);
    if (j == ns) return fail_unknown(c, op->inputs[i].name);
    if (!(bound >> j & 1)) {
      bound |= 1ull << j;
      c->in_of[j] = &op->inputs[i];
    }
  }
  for (int32_t j = 0; j < ns; j++) {
    const mil_input_spec *s = &specs[j];
    if (!(bound >> j & 1)) {
      c->in_of[j] = NULL;
      if (!(s->flags & (MIL_IF_OPTIONAL | MIL_IF_INTERNAL)))
        return op_fail(c, "required input '%s' is missing", s->name);
      continue;
    }
    /* the usual bindings inline; anything else, and every failure, through
     * check_input, which sees the type variables as they were */
    if (!input_ok(s, c->in_of[j], tvs, &ntv) && (st = check_input(c, s, c->in_of[j], tvs, &ntv)) != MIL_OK)
      return st;
  }
  c->mapped = true;
  return MIL_OK;
}

/* Sets the context's fields for op; the map, scratch and op_tstr buffers
 * are left unset (each is written before it is read). */
static void ctx_init(mil_infer_ctx *c, mil_op *op, int opset, const char *func, mil_diag *d) {
  c->op = op;
  c->def = NULL;
  c->prog = op->program;
  c->opset = opset;
  c->func = func;
  c->diag = d;
  c->n_out = 0;
  c->out = NULL;
  c->val = NULL;
  c->mark = NULL;
  c->tnext = 0;
  c->mapped = false;
  c->pool = NULL;
}

/* The spec version of f's opset for inference (MIL_IOS18 when f is NULL or
 * its opset is not a known name). */
static inline int func_version(const mil_function *f) {
  if (!f) return MIL_IOS18;
  const char *o = f->opset;
  if (o && o[0] == 'C' && o[1] == 'o' && o[2] == 'r' && o[3] == 'e' && o[4] == 'M' && o[5] == 'L' && o[6] >= '3' &&
      o[6] <= '9' && !o[7])
    return o[6] - '0' + 1;
  int v = mil_opset_version(o);
  return v < 0 ? MIL_IOS18 : v;
}

/* The largest known tensor value bound to op's inputs: its bytes and
 * element count. */
static void largest_input_value(const mil_op *op, int64_t *bytes, int64_t *numel) {
  *bytes = 0;
  *numel = 0;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t j = 0; j < op->inputs[i].n_args; j++) {
      const mil_arg *a = &op->inputs[i].args[j];
      const mil_value *v = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
      if (!v || v->kind != MIL_VAL_TENSOR) continue;
      if ((int64_t)v->nbytes > *bytes) *bytes = (int64_t)v->nbytes;
      if (v->numel > *numel) *numel = v->numel;
    }
}

/* Whether folding may materialize op's outputs. An output of at most
 * MIL_FOLD_MAX_BYTES always may; a larger one only when it has no more
 * elements than one of the op's known input values and at most twice its
 * bytes (a cast, transpose or slice of a large weight folds, as in
 * coremltools). Growth is refused: a tile, fill or broadcast that
 * multiplies a small value into a large one, and a concat of a value with
 * itself, keep only their types, so a chain of doublings (40 concats of a
 * 1-element const) never materializes more than the cap. Element counts
 * are checked for overflow before any size is computed. */
static bool fold_within_bound(const mil_op *op, const mil_type **types, int32_t n) {
  int64_t in_bytes = -1, in_numel = -1;
  for (int32_t i = 0; i < n; i++) {
    const mil_type *t = types[i];
    if (!t || t->kind != MIL_TYPE_TENSOR || t->rank <= 0) continue;
    int64_t count = 1;
    for (int32_t k = 0; k < t->rank; k++) {
      int64_t s = t->dims[k].size;
      if (s < 0) continue; /* symbolic: the fold cannot give it a value */
      if (s && count > INT64_MAX / s) return false;
      count *= s;
    }
    if (count > MIL_TENSOR_MAX_ELEMENTS) return false;
    int64_t bytes = (int64_t)mil_dtype_storage_bytes(t->dtype, count);
    if (bytes <= MIL_FOLD_MAX_BYTES) continue;
    if (in_bytes < 0) largest_input_value(op, &in_bytes, &in_numel);
    if (count > in_numel || bytes / 2 > in_bytes) return false;
  }
  return true;
}

/* Infers op into types/vals/marks (c.n_out entries, more when infer raises
 * the count); `zeroed` when the arrays are already zeroed. */
static OP_ALWAYS_INLINE mil_status run_infer(mil_op *op, const mil_type **types, const mil_value **vals,
                                             mil_mark *marks, bool zeroed, mil_diag *d, int32_t *n_out) {
  const mil_function *f = op_function(op);
  int version = func_version(f);
  mil_infer_ctx c;
  op_tmp_pool pool;
  ctx_init(&c, op, version, f ? f->name : "?", d);
  pool.used = 0;
  c.pool = &pool;
  ensure();
  const def_info *di = op->def ? info_of(op->def) : NULL;
  if (di && info_applies(di, op->type, version)) {
    c.def = di->def;
  } else {
    c.def = mil_op_def_find(op->type, version);
  }
  if (!c.def) {
    const mil_op_def *newer = NULL;
    for (int v = version + 1; v <= MIL_IOS26 && !newer; v++) newer = mil_op_def_find(op->type, v);
    if (newer)
      return mil_diag_error(d, MIL_ERR_NOT_FOUND,
                            "function '%s': op '%s' (%s): op type '%s' needs opset %s (%s) or newer, the function is "
                            "%s",
                            c.func, op->name, op->type, op->type, mil_opset_name(newer->opset),
                            mil_opset_target_name(newer->opset), f ? f->opset : "?");
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "function '%s': op '%s' (%s): unknown op type '%s'", c.func, op->name,
                          op->type, op->type);
  }
  op->def = c.def;
  c.n_out = op->n_outputs ? op->n_outputs : (c.def->n_outputs >= 0 ? c.def->n_outputs : 1);
  c.out = types;
  c.val = vals;
  c.mark = marks;
  if (!zeroed && c.n_out == 1) { /* the usual count, without three memset calls */
    types[0] = NULL;
    vals[0] = NULL;
    marks[0] = MIL_MARK_NONE;
  } else if (!zeroed) {
    for (int32_t i = 0; i < c.n_out; i++) {
      types[i] = NULL;
      vals[i] = NULL;
      marks[i] = MIL_MARK_NONE;
    }
  }
  mil_status st = check_inputs(&c);
  if (st != MIL_OK) return st;
  size_t errs = d ? d->n_errors : 0;
  st = c.def->infer(&c);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < c.n_out; i++) {
    if (types[i]) continue;
    if (d && d->n_errors > errs) return MIL_ERR_TYPE; /* the reason is reported (e.g. a shape too large) */
    return op_fail(&c, "internal: type inference produced no type for output %d", i);
  }
  if (c.def->fold && fold_within_bound(op, types, c.n_out)) {
    st = c.def->fold(&c);
    if (st != MIL_OK) return st;
  }
  if (n_out) *n_out = c.n_out; /* infer may set the count of a variable-output op */
  return MIL_OK;
}

static int32_t out_count(const mil_op *op) {
  if (op->n_outputs) return op->n_outputs;
  return 16; /* enough for any op with a fixed output count */
}

mil_status mil_op_infer_types(mil_op *op, const mil_type **types, const mil_value **vals, mil_diag *d) {
  mil_mark marks[64];
  mil_mark *mk = marks;
  int32_t n = out_count(op);
  if (n > 64) {
    mk = mil_program_alloc(op->program, (size_t)n * sizeof *mk);
    if (!mk) return MIL_ERR_NOMEM;
  }
  return run_infer(op, types, vals, mk, false, d, NULL);
}

/* The name of output i of k an op named op_name gets: the op's name, or
 * "<name>_<i>" when it has several (at most 511 characters). */
static const char *out_name(const char *op_name, int32_t i, int32_t k, char *buf, size_t cap) {
  size_t len = strlen(op_name);
  if (k == 1 && len < cap) return op_name;
  if (k == 1) {
    memcpy(buf, op_name, cap - 1);
    buf[cap - 1] = 0;
    return buf;
  }
  snprintf(buf, cap, "%s_%d", op_name, i);
  return buf;
}

mil_status mil_op_infer(mil_op *op, mil_diag *d) {
  int32_t n = out_count(op);
  /* outputs of ordinary ops fit on the stack. Zeroed like the program
   * allocation for an op without outputs yet, as infer may raise the count
   * of a variable-output op; for an op with outputs the count is fixed and
   * run_infer clears its entries. */
  enum { STACK_OUT = 16 };
  const mil_type *st_types[STACK_OUT];
  const mil_value *st_vals[STACK_OUT];
  mil_mark st_marks[STACK_OUT];
  const mil_type **types = st_types;
  const mil_value **vals = st_vals;
  mil_mark *marks = st_marks;
  bool zeroed = false; /* else run_infer clears the n entries of a fixed count */
  if (n > STACK_OUT) {
    types = mil_program_alloc(op->program, (size_t)n * sizeof *types);
    vals = mil_program_alloc(op->program, (size_t)n * sizeof *vals);
    marks = mil_program_alloc(op->program, (size_t)n * sizeof *marks);
    if (!types || !vals || !marks) return MIL_ERR_NOMEM;
    zeroed = true;
  } else if (!op->n_outputs) {
    memset(st_types, 0, sizeof st_types);
    memset(st_vals, 0, sizeof st_vals);
    memset(st_marks, 0, sizeof st_marks);
    zeroed = true;
  }
  int32_t k = 0;
  mil_status st = run_infer(op, types, vals, marks, zeroed, d, &k);
  if (st != MIL_OK) return st;
  if (!op->n_outputs) {
    for (int32_t i = 0; i < k; i++) {
      char name[512];
      if (!mil_op_add_output(op, out_name(op->name, i, k, name, sizeof name), types[i])) return MIL_ERR_NOMEM;
    }
  }
  for (int32_t i = 0; i < op->n_outputs; i++) {
    mil_var *v = op->outputs[i];
    v->type = types[i];
    if (!mil_op_is_const(op)) {
      v->val = vals[i];
      v->mark = vals[i] ? MIL_MARK_VALUE : marks[i];
      if (v->mark == MIL_MARK_VALUE && !v->val) op->program->marks_pending = true;
    }
  }
  return MIL_OK;
}

const mil_value *mil_op_materialize(mil_op *op, int32_t i, mil_diag *d) {
  if (i < 0 || i >= op->n_outputs) return NULL;
  if (op->outputs[i]->val) return op->outputs[i]->val;
  if (strncmp(op->type, "constexpr_", 10) != 0 && strcmp(op->type, "dequantize") != 0) return NULL;
  return op_constexpr_materialize(op, i, d);
}

mil_status mil_op_add_defaults(mil_op *op, mil_diag *d) {
  const mil_function *f = op_function(op);
  mil_infer_ctx c;
  ctx_init(&c, op, func_version(f), f ? f->name : "?", d);
  c.def = mil_op_def_find(op->type, c.opset);
  if (!c.def)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "function '%s': op '%s': unknown op type '%s'", c.func, op->name,
                          op->type);
  return c.def->defaults ? c.def->defaults(&c) : MIL_OK;
}

void mil_op_canonicalize_inputs(mil_op *op) {
  if (op->n_inputs < 2) return;
  int version = func_version(op_function(op));
  ensure();
  const def_info *di = op->def ? info_of(op->def) : NULL;
  const mil_op_def *def = di && info_applies(di, op->type, version) ? di->def : mil_op_def_find(op->type, version);
  if (!def) return;
  mil_input tmp[64];
  if (op->n_inputs > 64) return;
  /* spec position of each input (def->n_inputs when not in the spec); the
   * inputs are ordered by it, keeping their order among equal positions */
  int32_t pos[64];
  bool sorted = true;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    int32_t s = 0;
    while (s < def->n_inputs && !name_eq(op->inputs[i].name, def->inputs[s].name)) s++;
    pos[i] = s;
    if (i > 0 && pos[i] < pos[i - 1]) sorted = false;
  }
  if (sorted) return;
  int32_t k = 0;
  for (int32_t s = 0; s <= def->n_inputs; s++)
    for (int32_t i = 0; i < op->n_inputs; i++)
      if (pos[i] == s) tmp[k++] = op->inputs[i];
  memcpy(op->inputs, tmp, (size_t)k * sizeof *tmp);
}

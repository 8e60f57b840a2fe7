/* The op registry: lookup of op variants by type and opset, the inference
 * driver (input checks against the spec, then the variant's infer/fold), and
 * the program validator. Mirrors coremltools ops/registry.py and the input
 * checks of operation.py / input_type.py. */
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

static int cmp_def(const void *a, const void *b) {
  const mil_op_def *x = *(const mil_op_def *const *)a, *y = *(const mil_op_def *const *)b;
  int c = strcmp(x->type, y->type);
  return c ? c : x->opset - y->opset;
}

static void build(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++) n += *k_families[f].count;
  g_defs = malloc((n ? n : 1) * sizeof *g_defs);
  if (!g_defs) return;
  for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++)
    for (size_t i = 0; i < *k_families[f].count; i++) g_defs[g_n++] = &k_families[f].defs[i];
  qsort(g_defs, g_n, sizeof *g_defs, cmp_def);
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
  if (s->type == type && s->version == version && s->def && strcmp(s->def->type, type) == 0) return s->def;
  const mil_op_def *best = def_search(type, version);
  if (best) *s = (def_slot){type, version, best};
  return best;
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
static inline bool name_eq(const char *a, const char *b) { return a == b || (a[0] == b[0] && strcmp(a, b) == 0); }

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

/* Checks op's bindings against the variant's spec. */
static mil_status check_inputs(mil_infer_ctx *c) {
  const mil_op_def *def = c->def;
  mil_op *op = c->op;
  char b1[256], b2[256];
  /* the first binding of each spec input, found in one pass over the op's
   * inputs (spec input names are distinct) */
  enum { MAX_SPEC = 64 };
  int32_t first[MAX_SPEC];
  bool mapped = def->n_inputs <= MAX_SPEC;
  for (int32_t j = 0; mapped && j < def->n_inputs; j++) first[j] = -1;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const char *name = op->inputs[i].name;
    int32_t j = 0;
    while (j < def->n_inputs && !name_eq(def->inputs[j].name, name)) j++;
    if (j == def->n_inputs)
      return op_fail(c, "unknown input '%s' (not an input of %s in %s)", name, def->type,
                     mil_opset_target_name(c->opset) ? mil_opset_target_name(c->opset) : "this opset");
    if (mapped && first[j] < 0) first[j] = i;
  }
  struct tv { const char *name; mil_dtype dt; const char *first; } tvs[8];
  int ntv = 0;
  for (int32_t i = 0; i < def->n_inputs; i++) {
    const mil_input_spec *s = &def->inputs[i];
    const mil_input *in = !mapped ? mil_op_find_input(op, s->name) : first[i] >= 0 ? &op->inputs[first[i]] : NULL;
    if (!in || in->n_args == 0) {
      if (!(s->flags & (MIL_IF_OPTIONAL | MIL_IF_INTERNAL)) && !(in && (s->kinds & MIL_IK_TUPLE)))
        return op_fail(c, "required input '%s' is missing", s->name);
      continue;
    }
    if (in->n_args > 1 && !(s->kinds & MIL_IK_TUPLE))
      return op_fail(c, "input '%s' takes one value, got a tuple of %d", s->name, in->n_args);
    for (int32_t j = 0; j < in->n_args; j++) {
      const mil_arg *a = &in->args[j];
      const mil_type *t = a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
      if (!t) return op_fail(c, "input '%s' is unbound", s->name);
      uint32_t kinds = s->kinds & ~(uint32_t)MIL_IK_TUPLE;
      if (kinds && !kind_ok(kinds, t))
        return op_fail(c, "input '%s' must be %s, got %s", s->name, kind_names(kinds, b1, sizeof b1), op_tstr(c, t));
      mil_dtype dt = elem_dtype(t);
      if (t->kind == MIL_TYPE_TENSOR || t->kind == MIL_TYPE_STATE) {
        if (!dtype_ok(s->dtypes, dt))
          return op_fail(c, "input '%s' must have dtype %s, got %s", s->name, dtype_list(s->dtypes, b2, sizeof b2),
                         op_tstr(c, t));
        if (s->type_var) {
          int k = 0;
          while (k < ntv && strcmp(tvs[k].name, s->type_var) != 0) k++;
          if (k == ntv && ntv < 8) tvs[ntv++] = (struct tv){s->type_var, dt, s->name};
          else if (k < ntv && tvs[k].dt != dt)
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
  }
  return MIL_OK;
}

/* Zeroes c but the op_tstr buffers (written before they are read, and most
 * of the context's size), then sets the common fields. */
static void ctx_init(mil_infer_ctx *c, mil_op *op, int opset, const char *func, mil_diag *d) {
  size_t at = offsetof(mil_infer_ctx, tbuf), end = at + sizeof c->tbuf;
  memset(c, 0, at);
  memset((char *)c + end, 0, sizeof *c - end);
  for (int i = 0; i < 4; i++) c->tbuf[i][0] = 0;
  c->op = op;
  c->prog = op->program;
  c->opset = opset;
  c->func = func;
  c->diag = d;
}

static mil_status run_infer(mil_op *op, const mil_type **types, const mil_value **vals, mil_mark *marks,
                            mil_diag *d, int32_t *n_out) {
  const mil_function *f = op_function(op);
  int version = f ? mil_opset_version(f->opset) : MIL_IOS18;
  if (version < 0) version = MIL_IOS18;
  mil_infer_ctx c;
  ctx_init(&c, op, version, f ? f->name : "?", d);
  c.def = mil_op_def_find(op->type, version);
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
  for (int32_t i = 0; i < c.n_out; i++) {
    types[i] = NULL;
    vals[i] = NULL;
    marks[i] = MIL_MARK_NONE;
  }
  mil_status st = check_inputs(&c);
  if (st != MIL_OK) return st;
  st = c.def->infer(&c);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < c.n_out; i++)
    if (!types[i]) return op_fail(&c, "internal: type inference produced no type for output %d", i);
  if (c.def->fold) {
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
  return run_infer(op, types, vals, mk, d, NULL);
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
  /* outputs of ordinary ops fit on the stack; zeroed like the program
   * allocation, as infer may raise the count of a variable-output op */
  enum { STACK_OUT = 16 };
  const mil_type *st_types[STACK_OUT] = {0};
  const mil_value *st_vals[STACK_OUT] = {0};
  mil_mark st_marks[STACK_OUT] = {0};
  const mil_type **types = st_types;
  const mil_value **vals = st_vals;
  mil_mark *marks = st_marks;
  if (n > STACK_OUT) {
    types = mil_program_alloc(op->program, (size_t)n * sizeof *types);
    vals = mil_program_alloc(op->program, (size_t)n * sizeof *vals);
    marks = mil_program_alloc(op->program, (size_t)n * sizeof *marks);
    if (!types || !vals || !marks) return MIL_ERR_NOMEM;
  }
  int32_t k = 0;
  mil_status st = run_infer(op, types, vals, marks, d, &k);
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
  int version = f ? mil_opset_version(f->opset) : MIL_IOS18;
  mil_infer_ctx c;
  ctx_init(&c, op, version < 0 ? MIL_IOS18 : version, f ? f->name : "?", d);
  c.def = mil_op_def_find(op->type, c.opset);
  if (!c.def)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "function '%s': op '%s': unknown op type '%s'", c.func, op->name,
                          op->type);
  return c.def->defaults ? c.def->defaults(&c) : MIL_OK;
}

void mil_op_canonicalize_inputs(mil_op *op) {
  const mil_function *f = op_function(op);
  int version = f ? mil_opset_version(f->opset) : MIL_IOS18;
  const mil_op_def *def = mil_op_def_find(op->type, version < 0 ? MIL_IOS18 : version);
  if (!def || op->n_inputs < 2) return;
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

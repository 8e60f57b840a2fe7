/* Program, function and block structure; op placement within blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

#define ORDER_STEP ((uint64_t)1 << 20)

mil_program *mil_program_new(const mil_allocator *alloc) {
  if (!alloc) alloc = mil_default_allocator();
  ir_arena *ar = ir_arena_new(alloc);
  if (!ar) return NULL;
  mil_program *p = ir_arena_alloc(ar, sizeof *p);
  ir_intern *strs = p ? ir_intern_new(alloc, ar) : NULL;
  ir_arena *nodes = strs ? ir_arena_new(alloc) : NULL;
  ir_arena *ops = nodes ? ir_arena_new(alloc) : NULL;
  if (!ops) {
    if (nodes) ir_arena_free(nodes);
    if (strs) ir_intern_free(strs);
    ir_arena_free(ar);
    return NULL;
  }
  p->arena = ar;
  p->nodes = nodes;
  p->ops = ops;
  p->strs = strs;
  p->alloc = alloc;
  p->version = 1;
  return p;
}

void mil_program_free(mil_program *p) {
  if (!p) return;
  ir_builder_names_free(p->builder_names);
  ir_typecount_free(p);
  ir_big_free_all(p);
  ir_mappings_free(p);
  ir_typetab_free(p);
  ir_intern_free(p->strs);
  ir_arena_free(p->nodes);
  ir_arena_free(p->ops);
  ir_arena_free(p->arena); /* p itself lives in the arena */
}

void ir_builder_names_free(ir_builder_names *n) {
  if (!n) return;
  ir_ptrmap_free(&n->counts);
  ir_ptrmap_free(&n->intended);
  free(n);
}

ir_builder_names *ir_builder_names_of(mil_program *p) {
  if (!p->builder_names) {
    p->builder_names = calloc(1, sizeof *p->builder_names);
    if (p->builder_names) {
      ir_ptrmap_init(&p->builder_names->counts);
      ir_ptrmap_init(&p->builder_names->intended);
    }
  }
  return p->builder_names;
}

/* Builder.name_count[key] (a defaultdict(int)), then += 1. Stored as
 * count + 1 so that a missing key reads 0. */
int64_t mil_program_name_count_next(mil_program *p, const char *key) {
  ir_builder_names *n = ir_builder_names_of(p);
  if (!n) return -1;
  uintptr_t stored = (uintptr_t)ir_ptrmap_get(&n->counts, key);
  int64_t k = stored ? (int64_t)(stored - 1) : 0;
  if (!ir_ptrmap_put(&n->counts, key, (void *)(uintptr_t)(k + 2))) return -1;
  return k;
}

void mil_program_name_counts_reset(mil_program *p) {
  if (!p || !p->builder_names) return;
  ir_ptrmap_free(&p->builder_names->counts);
  ir_ptrmap_init(&p->builder_names->counts);
}

/* count[prefix] = max(count[prefix], k + 1) for name "<prefix>_<k>". */
static bool seed_name(mil_program *p, ir_builder_names *n, const char *name) {
  if (!name) return true;
  const char *us = strrchr(name, '_');
  if (!us || us == name || !us[1]) return true;
  uint64_t k = 0;
  for (const char *c = us + 1; *c; c++) {
    if (*c < '0' || *c > '9' || k > (UINT64_MAX - 9) / 10 / 2) return true;
    k = k * 10 + (uint64_t)(*c - '0');
  }
  const char *key = mil_program_intern(p, name, (size_t)(us - name));
  if (!key) return false;
  uintptr_t stored = (uintptr_t)ir_ptrmap_get(&n->counts, key);
  if (stored >= (uintptr_t)k + 2) return true;
  return ir_ptrmap_put(&n->counts, key, (void *)(uintptr_t)(k + 2));
}

typedef struct seed_ctx {
  mil_program *p;
  ir_builder_names *n;
} seed_ctx;

static int seed_op(mil_op *op, void *ud) {
  seed_ctx *c = ud;
  bool ok = seed_name(c->p, c->n, op->name);
  for (int32_t i = 0; ok && i < op->n_outputs; i++) ok = seed_name(c->p, c->n, op->outputs[i]->name);
  for (int32_t b = 0; ok && b < op->n_blocks; b++) {
    const mil_block *nb = op->blocks[b];
    for (int32_t i = 0; ok && i < nb->n_inputs; i++) ok = seed_name(c->p, c->n, nb->inputs[i]->name);
  }
  return ok ? 0 : 1;
}

bool mil_program_name_counts_seed(mil_program *p) {
  seed_ctx c = {p, ir_builder_names_of(p)};
  if (!c.n) return false;
  for (int32_t i = 0; i < p->n_functions; i++)
    for (int32_t k = 0; k < p->functions[i]->n_inputs; k++)
      if (!seed_name(p, c.n, p->functions[i]->inputs[k]->name)) return false;
  return mil_program_walk(p, seed_op, &c) == 0;
}

bool mil_program_name_intended_set(mil_program *p, const char *given, const char *intended) {
  ir_builder_names *n = ir_builder_names_of(p);
  return n && ir_ptrmap_put(&n->intended, given, (void *)intended);
}

const char *mil_program_name_intended(const mil_program *p, const char *given) {
  const ir_builder_names *n = p->builder_names;
  const char *s = n && n->intended.count && given ? ir_ptrmap_get(&n->intended, given) : NULL;
  return s ? s : given;
}

bool mil_program_name_intended_any(const mil_program *p) {
  return p->builder_names && p->builder_names->intended.count > 0;
}

void mil_program_name_intended_clear(mil_program *p) {
  if (p->builder_names) ir_ptrmap_free(&p->builder_names->intended);
}

void *mil_program_alloc(mil_program *p, size_t n) { return ir_arena_alloc(p->arena, n); }

const char *mil_program_intern(mil_program *p, const char *s, size_t len) { return ir_intern_str(p->strs, s, len); }

const char *mil_program_find_string(const mil_program *p, const char *s, size_t len) {
  return ir_intern_find(p->strs, s, len);
}

mil_function *mil_program_find_function(const mil_program *p, const char *name) {
  /* function names are interned in p (mil_function_new, clone and every
   * pass that renames a function intern them): a name p never interned
   * names no function, and an interned one compares by pointer (a scan
   * with strcmp took seconds for 20,000 functions) */
  const char *in = name && p->strs ? ir_intern_find(p->strs, name, (size_t)-1) : NULL;
  if (!in) return NULL;
  for (int32_t i = 0; i < p->n_functions; i++)
    if (p->functions[i]->name == in) return p->functions[i];
  return NULL;
}

/* Sets attribute `name` in an (attrs, n) array, growing it in the arena. */
static mil_status set_attr(mil_program *p, mil_attr **attrs, int32_t *n, const char *name, const mil_value *v) {
  const char *in = mil_program_intern(p, name, (size_t)-1);
  if (!in) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < *n; i++)
    if ((*attrs)[i].name == in) {
      (*attrs)[i].value = v;
      return MIL_OK;
    }
  mil_attr *na = ir_arena_grow(p->arena, *attrs, (size_t)*n, (size_t)*n + 1, sizeof *na);
  if (!na) return MIL_ERR_NOMEM;
  na[*n].name = in;
  na[*n].value = v;
  *attrs = na;
  (*n)++;
  return MIL_OK;
}

mil_status mil_program_set_attr(mil_program *p, const char *name, const mil_value *v) {
  return set_attr(p, &p->attrs, &p->n_attrs, name, v);
}

mil_status mil_function_set_attr(mil_function *f, const char *name, const mil_value *v) {
  return set_attr(f->program, &f->attrs, &f->n_attrs, name, v);
}

const mil_value *mil_function_get_attr(const mil_function *f, const char *name) {
  for (int32_t i = 0; f && i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].name, name) == 0) return f->attrs[i].value;
  return NULL;
}

void mil_op_set_attr(mil_op *op, const char *name, const mil_value *v) {
  set_attr(op->program, &op->attrs, &op->n_attrs, name, v);
}

const mil_value *mil_op_get_attr(const mil_op *op, const char *name) {
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) return op->attrs[i].value;
  return NULL;
}

static int count_ops(mil_op *op, void *ud) {
  (void)op;
  (*(int64_t *)ud)++;
  return 0;
}

int64_t ir_count_ops_walk(const mil_program *p) {
  int64_t n = 0;
  mil_program_walk((mil_program *)p, count_ops, &n);
  return n;
}

int64_t mil_program_count_ops(const mil_program *p) { return p->n_ops; }

/* ---------- functions ---------- */

mil_block *mil_block_new(mil_program *p, const char *name) {
  mil_block *b = ir_arena_alloc(p->nodes, sizeof *b);
  if (!b) return NULL;
  b->program = p;
  if (name) {
    b->name = mil_program_intern(p, name, (size_t)-1);
    if (!b->name) return NULL;
  }
  return b;
}

mil_function *mil_function_new(mil_program *p, const char *name, const char *opset) {
  if (mil_program_find_function(p, name)) return NULL;
  mil_function *f = ir_arena_alloc(p->arena, sizeof *f);
  if (!f) return NULL;
  f->program = p;
  f->name = mil_program_intern(p, name, (size_t)-1);
  f->opset = mil_program_intern(p, opset, (size_t)-1);
  if (!f->name || !f->opset) return NULL;
  if (!mil_function_add_specialization(f, opset)) return NULL;
  return ir_program_push_function(p, f) ? f : NULL;
}

bool ir_program_push_function(mil_program *p, mil_function *f) {
  /* the array doubles when full (a copy per function made 20,000
   * functions cost 1.6 GB) */
  int32_t cap = p->functions && p->functions == p->fn_grown ? p->cap_functions : p->n_functions;
  mil_function **nf = p->functions;
  if (p->n_functions >= cap) {
    if (p->n_functions > INT32_MAX / 2 - 1) return false;
    cap = p->n_functions < 4 ? 4 : p->n_functions * 2;
    nf = ir_arena_grow(p->arena, p->functions, (size_t)p->n_functions, (size_t)cap, sizeof *nf);
    if (!nf) return false;
  }
  nf[p->n_functions++] = f;
  p->functions = nf;
  p->fn_grown = nf;
  p->cap_functions = cap;
  return true;
}

mil_block *mil_function_add_specialization(mil_function *f, const char *opset) {
  mil_program *p = f->program;
  mil_block *b = mil_block_new(p, NULL);
  if (!b) return NULL;
  b->func = f;
  mil_specialization *ns = ir_arena_grow(p->arena, f->specs, (size_t)f->n_specs, (size_t)f->n_specs + 1, sizeof *ns);
  if (!ns) return NULL;
  ns[f->n_specs].opset = mil_program_intern(p, opset, (size_t)-1);
  ns[f->n_specs].block = b;
  f->specs = ns;
  f->n_specs++;
  return b;
}

mil_block *mil_function_body(const mil_function *f) {
  for (int32_t i = 0; i < f->n_specs; i++)
    if (f->specs[i].opset == f->opset || strcmp(f->specs[i].opset, f->opset) == 0) return f->specs[i].block;
  return f->n_specs ? f->specs[0].block : NULL;
}

static mil_var *var_new(mil_program *p, const char *name, const mil_type *type) {
  mil_var *v = ir_arena_alloc(p->nodes, sizeof *v);
  if (!v) return NULL;
  v->name = mil_program_intern(p, name, (size_t)-1);
  if (!v->name) return NULL;
  v->type = type;
  return v;
}

/* Appends a new var named `name` to an (array, count) pair of the arena. */
static mil_var *append_var(mil_program *p, mil_var ***arr, int32_t *n, const char *name, const mil_type *type) {
  mil_var *v = var_new(p, name, type);
  if (!v) return NULL;
  mil_var **na = ir_arena_grow(p->arena, *arr, (size_t)*n, (size_t)*n + 1, sizeof *na);
  if (!na) return NULL;
  na[(*n)++] = v;
  *arr = na;
  return v;
}

mil_var *mil_function_add_input(mil_function *f, const char *name, const mil_type *type) {
  mil_var *v = append_var(f->program, &f->inputs, &f->n_inputs, name, type);
  if (v) v->func_input_of = f;
  return v;
}

mil_var *mil_block_add_input(mil_block *b, const char *name, const mil_type *type) {
  mil_var *v = append_var(b->program, &b->inputs, &b->n_inputs, name, type);
  if (v) v->input_of = b;
  return v;
}

mil_var *mil_op_add_output(mil_op *op, const char *name, const mil_type *type) {
  mil_program *p = op->program;
  if (op->cap_outputs == 0 && op->n_outputs == 0) {
    /* the first output (most ops have one): the outputs array takes the
     * var record's alignment padding, in one allocation */
    _Static_assert(sizeof(mil_var) % sizeof(mil_var *) == 0, "the outputs array follows the var aligned");
    mil_var *v = ir_arena_alloc(p->nodes, sizeof *v + sizeof *op->outputs);
    if (!v) return NULL;
    v->name = mil_program_intern(p, name, (size_t)-1);
    if (!v->name) return NULL;
    v->type = type;
    op->outputs = (mil_var **)(v + 1);
    op->cap_outputs = 1;
    v->op = op;
    v->out_index = 0;
    op->outputs[op->n_outputs++] = v;
    return v;
  }
  mil_var *v = var_new(p, name, type);
  if (!v) return NULL;
  if (op->n_outputs == op->cap_outputs) {
    int32_t nc = op->cap_outputs ? op->cap_outputs * 2 : 1;
    mil_var **no = ir_arena_grow(p->arena, op->outputs, (size_t)op->n_outputs, (size_t)nc, sizeof *no);
    if (!no) return NULL;
    op->outputs = no;
    op->cap_outputs = nc;
  }
  v->op = op;
  v->out_index = op->n_outputs;
  op->outputs[op->n_outputs++] = v;
  return v;
}

mil_status mil_block_set_outputs(mil_block *b, int32_t n, mil_var *const *vars) {
  for (int32_t i = 0; i < b->n_outputs; i++) ir_use_unlink(&b->outputs[i]);
  mil_use *no = b->outputs;
  if (n > b->n_outputs) {
    no = ir_arena_alloc(b->program->arena, (size_t)n * sizeof *no);
    if (!no) return MIL_ERR_NOMEM;
  }
  for (int32_t i = 0; i < n; i++) {
    memset(&no[i], 0, sizeof no[i]);
    no[i].block = b;
    ir_use_link(&no[i], vars[i]);
  }
  b->outputs = no;
  b->n_outputs = n;
  return MIL_OK;
}

void mil_block_set_output(mil_block *b, int32_t i, mil_var *v) {
  ir_use_unlink(&b->outputs[i]);
  ir_use_link(&b->outputs[i], v);
}

mil_program *mil_block_program(const mil_block *b) { return b->program; }
mil_program *mil_op_program(const mil_op *op) { return op->program; }

bool mil_block_is_inside(const mil_block *b, const mil_block *outer) {
  while (b) {
    if (b == outer) return true;
    b = b->parent ? b->parent->block : NULL;
  }
  return false;
}

/* ---------- the program's op count ---------- */

/* True when b hangs, through placed ops, from a function's body block. */
static bool attached(const mil_block *b) {
  while (b->parent) {
    if (!b->parent->block) return false;
    b = b->parent->block;
  }
  return b->func != NULL;
}

static void count_block(mil_program *p, const mil_block *b, int64_t sign);

/* counts op and the ops of its nested blocks, recursively, with sign +1/-1 */
static void count_op_rec(mil_program *p, const mil_op *op, int64_t sign) {
  ir_count_op(p, op->type, sign);
  for (int32_t i = 0; i < op->n_blocks; i++) count_block(p, op->blocks[i], sign);
}

static void count_block(mil_program *p, const mil_block *b, int64_t sign) {
  for (const mil_op *o = b->first; o; o = o->next) count_op_rec(p, o, sign);
}

void mil_op_add_block(mil_op *op, mil_block *b) {
  mil_program *p = op->program;
  mil_block **nb = ir_arena_grow(p->arena, op->blocks, (size_t)op->n_blocks, (size_t)op->n_blocks + 1, sizeof *nb);
  if (!nb) return;
  nb[op->n_blocks++] = b;
  op->blocks = nb;
  b->parent = op;
  b->func = op->block ? op->block->func : NULL;
  if (op->block && attached(op->block)) count_block(p, b, 1);
}

/* ---------- placement ---------- */

static void set_func_rec(mil_op *op, mil_function *f) {
  for (int32_t i = 0; i < op->n_blocks; i++) {
    op->blocks[i]->func = f;
    for (mil_op *o = op->blocks[i]->first; o; o = o->next) set_func_rec(o, f);
  }
}

static void placed(mil_block *b, mil_op *op) {
  op->block = b;
  b->n_ops++;
  if (op->n_blocks) set_func_rec(op, b->func);
  if (attached(b)) count_op_rec(b->program, op, 1);
}

void mil_block_append(mil_block *b, mil_op *op) {
  op->prev = b->last;
  op->next = NULL;
  if (b->last) {
    b->last->next = op;
    if (b->last->order > UINT64_MAX - ORDER_STEP) b->order_dirty = true;
    else op->order = b->last->order + ORDER_STEP;
  } else {
    b->first = op;
    op->order = ORDER_STEP;
  }
  b->last = op;
  placed(b, op);
}

/* Spreads the order keys of the ops in [first, last] (count n) evenly over
 * the open interval (lo, hi). */
static void spread(mil_op *first, int64_t n, uint64_t lo, uint64_t hi) {
  uint64_t step = (hi - lo) / (uint64_t)(n + 1);
  uint64_t k = lo + step;
  for (mil_op *o = first; n-- > 0; o = o->next, k += step) o->order = k;
}

static void renumber(mil_block *b);

/* Gives op (already linked) a key between its neighbours. When there is no
 * gap, relabels a window around op that doubles until its key range leaves
 * at least 2^16 per op (order-maintenance relabeling: amortized O(log n)
 * per insertion, never a whole-block renumbering per insertion). */
static void order_between(mil_block *b, mil_op *op) {
  uint64_t lo = op->prev ? op->prev->order : 0;
  uint64_t hi = op->next ? op->next->order : lo + 2 * ORDER_STEP;
  if (op->next && hi <= lo) { /* keys already inconsistent: renumber lazily */
    b->order_dirty = true;
    return;
  }
  if (hi > lo + 1) {
    op->order = lo + (hi - lo) / 2;
    return;
  }
  mil_op *left = op, *right = op;
  int64_t n = 1;
  for (int64_t want = 2;; want *= 2) {
    while (n < want && (left->prev || right->next)) {
      if (left->prev) left = left->prev, n++;
      if (n < want && right->next) right = right->next, n++;
    }
    uint64_t wlo = left->prev ? left->prev->order : 0;
    uint64_t whi = right->next ? right->next->order : UINT64_MAX;
    if (whi > wlo && (whi - wlo) / (uint64_t)(n + 1) >= ((uint64_t)1 << 16)) {
      spread(left, n, wlo, whi);
      return;
    }
    if (!left->prev && !right->next) {
      renumber(b);
      return;
    }
  }
}

void mil_block_insert_before(mil_op *anchor, mil_op *op) {
  mil_block *b = anchor->block;
  op->next = anchor;
  op->prev = anchor->prev;
  if (anchor->prev) anchor->prev->next = op;
  else b->first = op;
  anchor->prev = op;
  order_between(b, op);
  placed(b, op);
}

void mil_block_insert_after(mil_op *anchor, mil_op *op) {
  mil_block *b = anchor->block;
  if (!anchor->next) {
    mil_block_append(b, op);
    return;
  }
  mil_block_insert_before(anchor->next, op);
}

void mil_op_detach(mil_op *op) {
  mil_block *b = op->block;
  if (!b) return;
  if (attached(b)) count_op_rec(b->program, op, -1);
  for (int32_t i = 0; i < op->n_outputs; i++) /* a weight may have lost its last reference */
    if (op->outputs[i]->val) ir_big_note_detached(b->program, op->outputs[i]->val);
  if (op->prev) op->prev->next = op->next;
  else b->first = op->next;
  if (op->next) op->next->prev = op->prev;
  else b->last = op->prev;
  op->prev = op->next = NULL;
  op->block = NULL;
  b->n_ops--;
}

static void renumber(mil_block *b) {
  uint64_t k = ORDER_STEP;
  for (mil_op *o = b->first; o; o = o->next, k += ORDER_STEP) o->order = k;
  b->order_dirty = false;
}

bool mil_op_is_before(const mil_op *a, const mil_op *b) {
  if (!a->block || a->block != b->block || a == b) return false;
  if (a->block->order_dirty) renumber(a->block);
  return a->order < b->order;
}

/* ---------- walking ---------- */

int mil_block_walk(mil_block *b, mil_op_visit_fn fn, void *ud) {
  mil_op *op = b->first;
  while (op) {
    mil_op *next = op->next;
    int32_t nb = op->n_blocks;
    mil_block **blocks = op->blocks;
    int r = fn(op, ud);
    if (r) return r;
    /* the visited op may have been removed; its nested blocks are still valid arena memory */
    for (int32_t i = 0; i < nb; i++) {
      r = mil_block_walk(blocks[i], fn, ud);
      if (r) return r;
    }
    op = next;
  }
  return 0;
}

int mil_program_walk(mil_program *p, mil_op_visit_fn fn, void *ud) {
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs; s++) {
      int r = mil_block_walk(f->specs[s].block, fn, ud);
      if (r) return r;
    }
  }
  return 0;
}

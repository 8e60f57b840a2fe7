/* Deep copy of a program into a fresh arena. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

typedef struct cl {
  mil_program *dst;
  ir_ptrmap vars; /* source var -> copied var */
  bool oom;
} cl;

static mil_var *map_var(cl *c, const mil_var *v) { return v ? ir_ptrmap_get(&c->vars, v) : NULL; }

static void copy_var_info(cl *c, mil_var *dv, const mil_var *sv) {
  dv->val = ir_value_import(c->dst, sv->val);
  if (sv->val && !dv->val) c->oom = true;
  dv->mark = sv->mark;
  if (dv->mark == MIL_MARK_VALUE && !dv->val) c->dst->marks_pending = true;
  if (!ir_ptrmap_put(&c->vars, sv, dv)) c->oom = true;
}

static mil_attr *copy_attrs(cl *c, const mil_attr *a, int32_t n) {
  if (!n) return NULL;
  mil_attr *r = mil_program_alloc(c->dst, (size_t)n * sizeof *r);
  if (!r) {
    c->oom = true;
    return NULL;
  }
  for (int32_t i = 0; i < n; i++) {
    r[i].name = mil_program_intern(c->dst, a[i].name, (size_t)-1);
    r[i].value = ir_value_import(c->dst, a[i].value);
  }
  return r;
}

static mil_block *copy_block(cl *c, const mil_block *sb);

static mil_op *copy_op(cl *c, const mil_op *so) {
  mil_program *p = c->dst;
  mil_op *op = mil_op_new(p, so->type, so->name);
  if (!op) return NULL;
  for (int32_t i = 0; i < so->n_inputs; i++) {
    const mil_input *si = &so->inputs[i];
    mil_input *in = mil_op_add_input_slots(op, si->name, si->n_args, si->is_tuple);
    if (!in) return NULL;
    for (int32_t j = 0; j < si->n_args; j++) {
      if (si->args[j].value) in->args[j].value = ir_value_import(p, si->args[j].value);
      else mil_arg_set_var(op, &in->args[j], map_var(c, si->args[j].use.var));
    }
  }
  for (int32_t i = 0; i < so->n_outputs; i++) {
    const mil_var *sv = so->outputs[i];
    mil_var *dv = mil_op_add_output(op, sv->name, mil_type_import(p, sv->type));
    if (!dv) return NULL;
    copy_var_info(c, dv, sv);
  }
  op->attrs = copy_attrs(c, so->attrs, so->n_attrs);
  op->n_attrs = so->n_attrs;
  op->def = so->def;
  for (int32_t i = 0; i < so->n_blocks; i++) {
    mil_block *b = copy_block(c, so->blocks[i]);
    if (!b) return NULL;
    mil_op_add_block(op, b);
  }
  return op;
}

static mil_block *copy_block(cl *c, const mil_block *sb) {
  mil_program *p = c->dst;
  mil_block *b = mil_block_new(p, sb->name);
  if (!b) return NULL;
  for (int32_t i = 0; i < sb->n_inputs; i++) {
    mil_var *v = mil_block_add_input(b, sb->inputs[i]->name, mil_type_import(p, sb->inputs[i]->type));
    if (!v) return NULL;
    copy_var_info(c, v, sb->inputs[i]);
  }
  for (const mil_op *so = sb->first; so; so = so->next) {
    mil_op *op = copy_op(c, so);
    if (!op) return NULL;
    mil_block_append(b, op);
  }
  mil_var *stack[16], **outs = stack;
  if (sb->n_outputs > 16) outs = mil_program_alloc(p, (size_t)sb->n_outputs * sizeof *outs);
  if (!outs) return NULL;
  for (int32_t i = 0; i < sb->n_outputs; i++) outs[i] = map_var(c, sb->outputs[i].var);
  if (mil_block_set_outputs(b, sb->n_outputs, outs) != MIL_OK) return NULL;
  b->attrs = copy_attrs(c, sb->attrs, sb->n_attrs);
  b->n_attrs = sb->n_attrs;
  return b;
}

static bool copy_function(cl *c, const mil_function *sf, const char *name, mil_function **out) {
  mil_program *p = c->dst;
  mil_function *f = mil_program_alloc(p, sizeof *f);
  if (!f) return false;
  if (out) *out = f;
  f->program = p;
  f->name = mil_program_intern(p, name ? name : sf->name, (size_t)-1);
  f->opset = mil_program_intern(p, sf->opset, (size_t)-1);
  for (int32_t i = 0; i < sf->n_inputs; i++) {
    mil_var *v = mil_function_add_input(f, sf->inputs[i]->name, mil_type_import(p, sf->inputs[i]->type));
    if (!v) return false;
    copy_var_info(c, v, sf->inputs[i]);
  }
  f->specs = mil_program_alloc(p, (size_t)(sf->n_specs ? sf->n_specs : 1) * sizeof *f->specs);
  if (!f->specs) return false;
  for (int32_t s = 0; s < sf->n_specs; s++) {
    f->specs[s].opset = mil_program_intern(p, sf->specs[s].opset, (size_t)-1);
    /* ops are placed with func set so nested blocks inherit it */
    mil_block *b = mil_block_new(p, sf->specs[s].block->name);
    if (!b) return false;
    b->func = f;
    f->specs[s].block = b;
    const mil_block *sb = sf->specs[s].block;
    for (const mil_op *so = sb->first; so; so = so->next) {
      mil_op *op = copy_op(c, so);
      if (!op) return false;
      mil_block_append(b, op);
    }
    mil_var *stack[16], **outs = stack;
    if (sb->n_outputs > 16) outs = mil_program_alloc(p, (size_t)sb->n_outputs * sizeof *outs);
    if (!outs) return false;
    for (int32_t i = 0; i < sb->n_outputs; i++) outs[i] = map_var(c, sb->outputs[i].var);
    if (mil_block_set_outputs(b, sb->n_outputs, outs) != MIL_OK) return false;
    b->attrs = copy_attrs(c, sb->attrs, sb->n_attrs);
    b->n_attrs = sb->n_attrs;
  }
  f->n_specs = sf->n_specs;
  f->attrs = copy_attrs(c, sf->attrs, sf->n_attrs);
  f->n_attrs = sf->n_attrs;
  return ir_program_push_function(p, f);
}

/* The keys of m (interned in src's strings) and, when vals_are_names,
 * its values interned in dst, put into d. false on out of memory. */
static bool copy_interned_map(mil_program *dst, ir_ptrmap *d, const ir_ptrmap *m, bool vals_are_names) {
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    const char *k = mil_program_intern(dst, m->keys[i], (size_t)-1);
    void *v = vals_are_names ? (void *)mil_program_intern(dst, m->vals[i], (size_t)-1) : m->vals[i];
    if (!k || !v || !ir_ptrmap_put(d, k, v)) return false;
  }
  return true;
}

/* The builder's name counts and intended names (mil_program_name_count_next,
 * mil_program_name_intended), their strings interned in dst. false on out
 * of memory. */
static bool copy_name_counts(mil_program *dst, const mil_program *src) {
  const ir_builder_names *n = src->builder_names;
  if (!n) return true;
  ir_builder_names *d = ir_builder_names_of(dst);
  return d && copy_interned_map(dst, &d->counts, &n->counts, false) &&
         copy_interned_map(dst, &d->intended, &n->intended, true);
}

mil_program *mil_program_clone(const mil_program *src) { return ir_program_clone_with(src, src->alloc); }

static mil_program *clone(const mil_program *src, const mil_allocator *alloc, bool borrow) {
  cl c = {0};
  c.dst = mil_program_new(alloc);
  if (!c.dst) return NULL;
  if (borrow && !(ir_intern_seed(c.dst->strs, src->strs) && ir_typetab_seed(c.dst, src))) {
    mil_program_free(c.dst);
    return NULL;
  }
  ir_ptrmap_init(&c.vars);
  mil_program *p = c.dst;
  p->version = src->version;
  p->doc_string = src->doc_string ? mil_program_intern(p, src->doc_string, (size_t)-1) : NULL;
  p->next_block_id = src->next_block_id;
  p->next_symbol_id = src->next_symbol_id;
  bool counts_ok = copy_name_counts(p, src);
  p->user = src->user;
  p->attrs = copy_attrs(&c, src->attrs, src->n_attrs);
  p->n_attrs = src->n_attrs;
  bool ok = true;
  for (int32_t i = 0; ok && i < src->n_functions; i++) ok = copy_function(&c, src->functions[i], NULL, NULL);
  ir_ptrmap_free(&c.vars);
  if (!ok || c.oom || !counts_ok) {
    mil_program_free(p);
    return NULL;
  }
  return p;
}

mil_program *ir_program_clone_with(const mil_program *src, const mil_allocator *alloc) {
  return clone(src, alloc, false);
}

mil_program *ir_program_clone_borrowing(const mil_program *src, const mil_allocator *alloc) {
  return clone(src, alloc, true);
}

mil_function *mil_program_copy_function(mil_program *dst, const mil_function *src, const char *name) {
  if (!dst || !src) return NULL;
  if (mil_program_find_function(dst, name ? name : src->name)) return NULL;
  cl c = {0};
  c.dst = dst;
  ir_ptrmap_init(&c.vars);
  mil_function *f = NULL;
  bool ok = copy_function(&c, src, name, &f);
  ir_ptrmap_free(&c.vars);
  return ok && !c.oom ? f : NULL;
}

/* Ops: inputs and their bindings, use lists, removal, use replacement. */
#include <string.h>

#include "core/core_internal.h"

void ir_use_link(mil_use *u, mil_var *v) {
  u->var = v;
  u->prev_use = NULL;
  u->next_use = NULL;
  if (!v) return;
  u->next_use = v->uses;
  if (v->uses) v->uses->prev_use = u;
  v->uses = u;
  v->n_uses++;
}

void ir_use_unlink(mil_use *u) {
  mil_var *v = u->var;
  if (!v) return;
  if (u->prev_use) u->prev_use->next_use = u->next_use;
  else v->uses = u->next_use;
  if (u->next_use) u->next_use->prev_use = u->prev_use;
  v->n_uses--;
  u->var = NULL;
  u->prev_use = u->next_use = NULL;
}

mil_op *mil_op_new(mil_program *p, const char *type, const char *name) {
  /* on a cache line of its own: a walk reads the first 64 bytes only */
  mil_op *op = ir_arena_alloc_aligned(p->ops, sizeof *op, 64);
  if (!op) return NULL;
  p->ops_made++;
  op->program = p;
  op->type = mil_program_intern(p, type, (size_t)-1);
  op->name = name ? mil_program_intern(p, name, (size_t)-1) : NULL;
  if (!op->type || (name && !op->name)) return NULL;
  return op;
}

mil_input *mil_op_add_input_slots(mil_op *op, const char *name, int32_t n, bool is_tuple) {
  mil_program *p = op->program;
  if (n < 0) return NULL;
  if (op->n_inputs == op->cap_inputs) {
    int32_t nc = op->cap_inputs ? op->cap_inputs * 2 : 4;
    mil_input *ni = ir_arena_grow(p->arena, op->inputs, (size_t)op->n_inputs, (size_t)nc, sizeof *ni);
    if (!ni) return NULL;
    op->inputs = ni;
    op->cap_inputs = nc;
  }
  mil_arg *args = ir_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *args);
  const char *in = mil_program_intern(p, name, (size_t)-1);
  if (!args || !in) return NULL;
  for (int32_t i = 0; i < n; i++) args[i].use.op = op;
  mil_input *inp = &op->inputs[op->n_inputs++];
  inp->name = in;
  inp->n_args = n;
  inp->args = args;
  inp->is_tuple = is_tuple;
  return inp;
}

void mil_arg_set_var(mil_op *op, mil_arg *a, mil_var *v) {
  ir_use_unlink(&a->use);
  a->use.op = op;
  a->value = NULL;
  ir_use_link(&a->use, v);
}

mil_input *mil_op_add_input(mil_op *op, const char *name, mil_var *v) {
  mil_input *in = mil_op_add_input_slots(op, name, 1, false);
  if (in) mil_arg_set_var(op, &in->args[0], v);
  return in;
}

mil_input *mil_op_add_input_tuple(mil_op *op, const char *name, int32_t n, mil_var *const *vars) {
  mil_input *in = mil_op_add_input_slots(op, name, n, true);
  if (in)
    for (int32_t i = 0; i < n; i++) mil_arg_set_var(op, &in->args[i], vars[i]);
  return in;
}

mil_input *mil_op_add_input_value(mil_op *op, const char *name, const mil_value *v) {
  mil_input *in = mil_op_add_input_slots(op, name, 1, false);
  if (in) in->args[0].value = v;
  return in;
}

mil_input *mil_op_find_input(const mil_op *op, const char *name) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    if (op->inputs[i].name == name || strcmp(op->inputs[i].name, name) == 0) return &op->inputs[i];
  return NULL;
}

mil_var *mil_op_input_var(const mil_op *op, const char *name) {
  mil_input *in = mil_op_find_input(op, name);
  return in && in->n_args > 0 ? in->args[0].use.var : NULL;
}

void mil_op_remove_input(mil_op *op, const char *name) {
  mil_input *in = mil_op_find_input(op, name);
  if (!in) return;
  for (int32_t i = 0; i < in->n_args; i++) ir_use_unlink(&in->args[i].use);
  int32_t idx = (int32_t)(in - op->inputs);
  memmove(&op->inputs[idx], &op->inputs[idx + 1], (size_t)(op->n_inputs - idx - 1) * sizeof *in);
  op->n_inputs--;
}

void mil_op_set_input(mil_op *op, const char *name, mil_var *v) {
  mil_input *in = mil_op_find_input(op, name);
  if (!in) {
    mil_op_add_input(op, name, v);
    return;
  }
  for (int32_t i = 1; i < in->n_args; i++) ir_use_unlink(&in->args[i].use);
  if (in->n_args == 0) {
    /* no slot to reuse: replace the input by a fresh one at the same place */
    mil_op_remove_input(op, name);
    mil_op_add_input(op, name, v);
    return;
  }
  in->n_args = 1;
  in->is_tuple = false;
  mil_arg_set_var(op, &in->args[0], v);
}

void ir_op_drop_uses(mil_op *op) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t j = 0; j < op->inputs[i].n_args; j++) ir_use_unlink(&op->inputs[i].args[j].use);
  for (int32_t b = 0; b < op->n_blocks; b++) {
    mil_block *blk = op->blocks[b];
    for (mil_op *o = blk->first; o; o = o->next) ir_op_drop_uses(o);
    for (int32_t k = 0; k < blk->n_outputs; k++) ir_use_unlink(&blk->outputs[k]);
  }
}

/* True when every use of v is inside op's nested blocks. */
static bool uses_only_inside(const mil_var *v, const mil_op *op) {
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    const mil_block *b = u->op ? u->op->block : u->block;
    bool inside = false;
    for (; b; b = b->parent ? b->parent->block : NULL)
      if (b->parent == op) {
        inside = true;
        break;
      }
    if (!inside) return false;
  }
  return true;
}

mil_status mil_op_remove(mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->n_uses && !uses_only_inside(op->outputs[i], op)) return MIL_ERR_INVALID;
  ir_op_drop_uses(op);
  mil_op_detach(op);
  return MIL_OK;
}

mil_op *mil_const_new(mil_program *p, const char *name, const mil_value *v) {
  mil_op *op = mil_op_new(p, "const", name);
  if (!op) return NULL;
  mil_var *out = mil_op_add_output(op, name, v->type);
  if (!out) return NULL;
  mil_var_set_value(out, v);
  return op;
}

void mil_var_set_value(mil_var *v, const mil_value *val) {
  v->val = val;
  v->mark = val ? MIL_MARK_VALUE : MIL_MARK_NONE;
}

bool mil_var_is_block_output(const mil_var *v) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->block) return true;
  return false;
}

void mil_var_replace_all_uses(mil_var *old, mil_var *new_var) {
  if (old == new_var) return;
  mil_use *u = old->uses;
  while (u) {
    mil_use *next = u->next_use;
    ir_use_unlink(u);
    ir_use_link(u, new_var);
    u = next;
  }
}

/* The op of block `b` that contains (at any nesting depth) block `inner`,
 * or NULL when inner is not nested in b. */
static mil_op *ancestor_in(const mil_block *inner, const mil_block *b) {
  while (inner && inner != b) {
    mil_op *parent = inner->parent;
    if (!parent) return NULL;
    if (parent->block == b) return parent;
    inner = parent->block;
  }
  return NULL;
}

void mil_var_replace_uses_after(mil_var *old, mil_var *new_var, const mil_op *after) {
  if (old == new_var) return;
  const mil_block *b = after->block;
  mil_use *u = old->uses;
  while (u) {
    mil_use *next = u->next_use;
    bool hit = false;
    if (u->op) {
      const mil_op *user = u->op->block == b ? u->op : ancestor_in(u->op->block, b);
      hit = user && user != after && mil_op_is_before(after, user);
      if (user == after && u->op != after) hit = false;
    } else if (u->block == b) {
      hit = true;
    } else {
      const mil_op *anc = ancestor_in(u->block, b);
      hit = anc && anc != after && mil_op_is_before(after, anc);
    }
    if (hit) {
      ir_use_unlink(u);
      ir_use_link(u, new_var);
    }
    u = next;
  }
}

void mil_op_remove_arg(mil_op *op, const char *name, int32_t j) {
  mil_input *in = mil_op_find_input(op, name);
  if (!in || j < 0 || j >= in->n_args) return;
  /* use records are embedded in the args: unlink the tail, shift, relink */
  int32_t n = in->n_args;
  mil_var *tail[64], **vars = tail;
  if (n > 64 && !(vars = ir_arena_alloc(op->program->arena, (size_t)n * sizeof *vars))) return;
  for (int32_t k = j; k < n; k++) {
    vars[k] = in->args[k].use.var;
    ir_use_unlink(&in->args[k].use);
  }
  for (int32_t k = j; k + 1 < n; k++) {
    in->args[k].value = in->args[k + 1].value;
    in->args[k].use.op = op;
    ir_use_link(&in->args[k].use, vars[k + 1]);
  }
  in->args[n - 1].value = NULL;
  in->n_args = n - 1;
}

mil_status mil_op_remove_output(mil_op *op, int32_t i) {
  if (i < 0 || i >= op->n_outputs || op->outputs[i]->n_uses) return MIL_ERR_INVALID;
  op->outputs[i]->op = NULL;
  for (int32_t k = i; k + 1 < op->n_outputs; k++) {
    op->outputs[k] = op->outputs[k + 1];
    op->outputs[k]->out_index = k;
  }
  op->n_outputs--;
  return MIL_OK;
}

mil_status mil_block_remove_input(mil_block *b, int32_t i) {
  if (i < 0 || i >= b->n_inputs || b->inputs[i]->n_uses) return MIL_ERR_INVALID;
  b->inputs[i]->input_of = NULL;
  memmove(&b->inputs[i], &b->inputs[i + 1], (size_t)(b->n_inputs - i - 1) * sizeof *b->inputs);
  b->n_inputs--;
  return MIL_OK;
}

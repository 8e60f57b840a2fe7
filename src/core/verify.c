/* Structural verifier: SSA and scoping rules of MIL, use-list and list-link
 * consistency. Type rules belong to the op registry's validator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

typedef struct undo {
  const char *name;
  mil_var *prev;
} undo;

typedef struct vctx {
  const mil_function *f;
  mil_diag *d;
  ir_ptrmap names;   /* interned name -> visible var */
  ir_ptrmap visible; /* var -> (void*)1 while visible */
  undo *log;
  size_t n_log, cap_log;
  size_t errors;
  int depth;
} vctx;

static void err(vctx *c, const char *fmt, const char *a, const char *b, const char *e) {
  c->errors++;
  mil_diag_add(c->d, MIL_SEV_ERROR, "function '%s': ", c->f->name);
  /* merge the prefix into one message */
  if (c->d && c->d->count) {
    mil_diag_msg *m = &c->d->msgs[c->d->count - 1];
    size_t need = strlen(m->text) + strlen(fmt) + (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + (e ? strlen(e) : 0) + 16;
    char *t = malloc(need);
    if (t) {
      int n = snprintf(t, need, "%s", m->text);
      snprintf(t + n, need - (size_t)n, fmt, a ? a : "", b ? b : "", e ? e : "");
      free(m->text);
      m->text = t;
    }
  }
}

static bool is_identifier(const char *s) {
  if (!s || !*s) return false;
  if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'))) return false;
  for (const char *q = s + 1; *q; q++)
    if (!(*q == '_' || *q == '@' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')))
      return false;
  return true;
}

/* coremltools' sanitize_input_output_names gives a model's inputs and
 * outputs names of the form [A-Za-z_][A-Za-z0-9_]* (NameSanitizer); other
 * names ("input.1", which coremltools itself writes for ops and vars) are
 * accepted by Core ML and not warned about. */
static bool is_feature_name(const char *s) {
  if (!is_identifier(s)) return false;
  return strchr(s, '@') == NULL;
}

static void warn_name(vctx *c, const char *what, const char *name) {
  if (!is_feature_name(name))
    mil_diag_add(c->d, MIL_SEV_WARNING,
                 "function '%s': %s name '%s' is not of the form [A-Za-z_][A-Za-z0-9_]* that Core ML model "
                 "interfaces use (coremltools' sanitize_input_output_names renames it)",
                 c->f->name, what, name);
}

static void define(vctx *c, mil_var *v, const char *where) {
  if (!v || !v->name) {
    err(c, "%s%s: a var has no name%s", where, "", "");
    return;
  }
  mil_var *prev = ir_ptrmap_get(&c->names, v->name);
  /* Shadowing a visible name is legal in memory (coremltools binds by
   * object, and frontends produce it); a saved model binds by name, which
   * common::dedup_op_and_var_names fixes. */
  if (prev && prev != v)
    mil_diag_add(c->d, MIL_SEV_WARNING, "function '%s': %s: %%%s shadows an earlier definition of the same name", c->f->name,
                 where, v->name);
  else if (prev)
    err(c, "%s: %%%s is defined twice%s", where, v->name, " (the same var is declared in two places)");
  if (c->n_log == c->cap_log) {
    size_t nc = c->cap_log ? c->cap_log * 2 : 64;
    undo *nl = realloc(c->log, nc * sizeof *nl);
    if (!nl) return;
    c->log = nl;
    c->cap_log = nc;
  }
  c->log[c->n_log++] = (undo){v->name, prev};
  ir_ptrmap_put(&c->names, v->name, v);
  ir_ptrmap_put(&c->visible, v, (void *)1);
  if (v->func_input_of) warn_name(c, "input", v->name);
}

static void leave(vctx *c, size_t mark) {
  while (c->n_log > mark) {
    undo u = c->log[--c->n_log];
    mil_var *cur = ir_ptrmap_get(&c->names, u.name);
    if (cur) ir_ptrmap_put(&c->visible, cur, NULL);
    ir_ptrmap_put(&c->names, u.name, u.prev);
    if (u.prev) ir_ptrmap_put(&c->visible, u.prev, (void *)1);
  }
}

static void check_uses(vctx *c, const mil_var *v) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (u->var != v || (!u->op && !u->block) || ++n > v->n_uses) {
      err(c, "%%%s: use list is corrupt%s%s", v->name, "", "");
      return;
    }
  }
  if (n != v->n_uses) err(c, "%%%s: use count does not match its use list%s%s", v->name, "", "");
}

static void check_block(vctx *c, const mil_block *b, const char *bname);

static void check_op(vctx *c, const mil_op *op) {
  char where[512];
  snprintf(where, sizeof where, "op '%s' (%s)", op->name ? op->name : "?", op->type);
  if (!op->name) err(c, "%s: op has no name%s%s", where, "", "");
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    for (int32_t j = 0; j < in->n_args; j++) {
      const mil_arg *a = &in->args[j];
      if (a->value) continue;
      const mil_var *v = a->use.var;
      if (!v) {
        err(c, "%s: input '%s' has an unbound argument%s", where, in->name, "");
        continue;
      }
      if (a->use.op != op) err(c, "%s: input '%s': use record points at another op%s", where, in->name, "");
      if (!ir_ptrmap_get(&c->visible, v)) {
        char msg[600];
        snprintf(msg, sizeof msg, " uses %%%s, which is not defined before this op in this or an enclosing block",
                 v->name);
        err(c, "%s: input '%s'%s", where, in->name, msg);
      }
    }
  }
  if (mil_op_is_const(op) && (op->n_outputs != 1 || !op->outputs[0]->val))
    err(c, "%s: a const op must have exactly one output with a value%s%s", where, "", "");
  for (int32_t i = 0; i < op->n_blocks; i++) {
    const mil_block *nb = op->blocks[i];
    if (nb->parent != op) err(c, "%s: nested block %s has a wrong parent link%s", where, nb->name ? nb->name : "", "");
    size_t mark = c->n_log;
    if (++c->depth > 256) {
      err(c, "%s: blocks nested more than 256 deep%s%s", where, "", "");
      c->depth--;
      return;
    }
    check_block(c, nb, nb->name ? nb->name : where);
    c->depth--;
    leave(c, mark);
  }
  for (int32_t i = 0; i < op->n_outputs; i++) {
    mil_var *v = op->outputs[i];
    if (v->op != op || v->out_index != i) err(c, "%s: output %%%s has a wrong producer link%s", where, v->name, "");
    define(c, v, where);
    check_uses(c, v);
  }
}

static void check_block(vctx *c, const mil_block *b, const char *bname) {
  char where[512];
  snprintf(where, sizeof where, "block %s", bname ? bname : "?");
  for (int32_t i = 0; i < b->n_inputs; i++) {
    define(c, b->inputs[i], where);
    check_uses(c, b->inputs[i]);
  }
  int32_t n = 0;
  const mil_op *prev = NULL;
  for (const mil_op *op = b->first; op; op = op->next) {
    if (op->block != b || op->prev != prev) err(c, "%s: op list links are corrupt at '%s'%s", where, op->name, "");
    prev = op;
    n++;
    check_op(c, op);
  }
  if (b->last != prev || n != b->n_ops) err(c, "%s: op list end or count is corrupt%s%s", where, "", "");
  for (int32_t i = 0; i < b->n_outputs; i++) {
    const mil_var *v = b->outputs[i].var;
    if (!v) err(c, "%s: output %s is unbound%s", where, "", "");
    else if (!ir_ptrmap_get(&c->visible, v))
      err(c, "%s: output %%%s is not defined in this block or an enclosing one%s", where, v->name, "");
  }
}

typedef struct type_tally {
  ir_ptrmap counts; /* interned type -> count, stored in the pointer */
  const char **types;
  size_t n, cap;
  bool oom;
} type_tally;

static int tally_visit(mil_op *op, void *ud) {
  type_tally *t = ud;
  intptr_t n = (intptr_t)ir_ptrmap_get(&t->counts, op->type);
  if (n == 0) {
    if (t->n == t->cap) {
      size_t nc = t->cap ? t->cap * 2 : 32;
      const char **nt = realloc(t->types, nc * sizeof *nt);
      if (!nt) {
        t->oom = true;
        return 1;
      }
      t->types = nt;
      t->cap = nc;
    }
    t->types[t->n++] = op->type;
  }
  if (!ir_ptrmap_put(&t->counts, op->type, (void *)(n + 1))) t->oom = true;
  return t->oom;
}

/* The kept per-type counts against a walk of the functions. */
static void walked_types_check(const mil_program *p, mil_diag *d, size_t *total) {
  type_tally t = {0};
  ir_ptrmap_init(&t.counts);
  mil_program_walk((mil_program *)p, tally_visit, &t);
  for (size_t i = 0; i < t.n && !t.oom; i++) {
    int64_t n = (int64_t)(intptr_t)ir_ptrmap_get(&t.counts, t.types[i]);
    int64_t kept = mil_program_count_op_type(p, t.types[i]);
    if (kept >= 0 && kept != n) {
      mil_diag_add(d, MIL_SEV_ERROR, "the program's count of '%s' ops is stale: it says %lld, its functions hold %lld",
                   t.types[i], (long long)kept, (long long)n);
      (*total)++;
    }
  }
  free(t.types);
  ir_ptrmap_free(&t.counts);
}

/* coremltools' one rule on duplicate names (dedup_op_and_var_names):
 * mil_function_io_names_ok; any other repeated op or var name is allowed
 * (the pass renames it; a var name defined twice in a scope shadows, with
 * a warning). */
static void check_io_names(vctx *c, const mil_function *f, const mil_block *body) {
  char why[512];
  if (!mil_function_io_names_ok(f, body, NULL, why, sizeof why)) {
    c->errors++;
    mil_diag_add(c->d, MIL_SEV_ERROR, "%s", why);
  }
}

mil_status mil_program_verify(const mil_program *p, mil_diag *d) {
  size_t total = 0;
  ir_ptrmap fnames; /* function name -> function: one lookup each, not a scan */
  ir_ptrmap_init(&fnames);
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    vctx c = {0};
    c.f = p->functions[fi];
    c.d = d;
    ir_ptrmap_init(&c.names);
    ir_ptrmap_init(&c.visible);
    const mil_function *f = c.f;
    if (!is_identifier(f->name))
      mil_diag_add(d, MIL_SEV_WARNING, "function name '%s' is not a MIL identifier", f->name);
    if (f->name && ir_ptrmap_get(&fnames, f->name)) err(&c, "the function name is used twice%s%s%s", "", "", "");
    else if (f->name) ir_ptrmap_put(&fnames, f->name, (void *)f);
    bool has_body = false;
    for (int32_t s = 0; s < f->n_specs; s++)
      if (strcmp(f->specs[s].opset, f->opset) == 0) has_body = true;
    if (!has_body) err(&c, "no block specialization for its opset '%s'%s%s", f->opset, "", "");
    for (int32_t i = 0; i < f->n_inputs; i++) {
      define(&c, f->inputs[i], "inputs");
      check_uses(&c, f->inputs[i]);
    }
    size_t base = c.n_log;
    const mil_block *body = mil_function_body(f);
    for (int32_t i = 0; body && i < body->n_outputs; i++)
      if (body->outputs[i].var) warn_name(&c, "output", body->outputs[i].var->name);
    check_io_names(&c, f, body);
    for (int32_t s = 0; s < f->n_specs; s++) {
      const mil_block *b = f->specs[s].block;
      if (b->parent) err(&c, "specialization '%s' has a parent op%s%s", f->specs[s].opset, "", "");
      check_block(&c, b, b->name ? b->name : f->specs[s].opset);
      leave(&c, base);
      if (body && b != body) {
        if (b->n_outputs != body->n_outputs) {
          err(&c, "specialization '%s' has a different number of outputs than '%s'%s", f->specs[s].opset, f->opset,
              "");
        } else {
          for (int32_t i = 0; i < b->n_outputs; i++)
            if (b->outputs[i].var && body->outputs[i].var &&
                !mil_type_equal(b->outputs[i].var->type, body->outputs[i].var->type))
              err(&c, "specialization '%s': output %%%s has a different type than in '%s'", f->specs[s].opset,
                  b->outputs[i].var->name, f->opset);
        }
      }
    }
    total += c.errors;
    free(c.log);
    ir_ptrmap_free(&c.names);
    ir_ptrmap_free(&c.visible);
  }
  ir_ptrmap_free(&fnames);
  int64_t walked = ir_count_ops_walk(p);
  /* the per-type counts must add up the same way */
  walked_types_check(p, d, &total);
  if (walked != p->n_ops) {
    mil_diag_add(d, MIL_SEV_ERROR, "the program's op count is stale: it says %lld ops, its functions hold %lld",
                 (long long)p->n_ops, (long long)walked);
    total++;
  }
  return total ? MIL_ERR_INVALID : MIL_OK;
}

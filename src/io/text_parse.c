/* MIL text parser: programs, functions, blocks and ops (mil-text.md
 * sections 1-2, formats.md section 6).
 *
 *   program  := function { function }
 *   function := name "[" opset "]" "(" [ var { "," var } ] ")" "{" block "}"
 *   block    := name "(" [ var { "," var } ] ")" "{" { op } "}" "->" "(" [ %name { "," %name } ] ")"
 *   op       := [ var { "," var } ] "=" op_type [ "[" scopes "]" ] "(" [","] [ arg { "," arg } ] ")" { block }
 *   var      := "%" name ":" type
 *   arg      := param "=" ( operand | "(" [ operand { "," operand } ] ")" | "@blob(" path "," offset ")" )
 *   operand  := "%" name | literal
 *
 * Layout is free (the scanner skips white space and '#' comments), so the
 * parser accepts coremltools' print(program) output as well as hand-edited
 * text. Names are resolved while parsing, with MIL's scoping: a var is
 * visible after its definition in its block and in blocks nested there;
 * function inputs everywhere in the function; block inputs in their block.
 * A name defined twice in one input or output list is an error. A later op
 * that defines a visible name again shadows it until its scope closes:
 * coremltools prints such programs (e.g. after prefer_state_in_downstream,
 * or before dedup_op_and_var_names), and a use can only mean the latest
 * definition; a warning says so.
 *
 * Inline literals (coremltools form) become const ops inserted before the
 * op that uses them, named "<op name>_<param>_<k>" like coremltools' own
 * literal consts. Their dtype comes from the literal alone: int32 for
 * integers (int64 when a value does not fit), fp32 for floats, bool,
 * string; operand type domains are not consulted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

/* ---------- small helpers ---------- */

static const char *intern(io_parser *P, const char *s, size_t n, const char *at) {
  const char *r = mil_program_intern(P->p, s, n);
  if (!r) io_lex_error_st(&P->L, MIL_ERR_NOMEM, at, "out of memory");
  return r;
}

static bool nomem(io_parser *P) {
  io_lex_error_st(&P->L, MIL_ERR_NOMEM, P->L.p, "out of memory");
  return false;
}

#define GROW(P, arr, n, cap)                                                        \
  ((n) < (cap) || io_grow((void **)&(arr), &(cap), sizeof *(arr), (n) + 1) || nomem(P))

bool io_grow(void **arr, size_t *cap, size_t elem, size_t need) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *na = realloc(*arr, nc * elem);
  if (!na) return false;
  *arr = na;
  *cap = nc;
  return true;
}

/* "%name" at the cursor: consumes '%' and the name. */
static const char *parse_percent_name(io_parser *P, const char *what, const char **at) {
  io_lex *L = &P->L;
  io_lex_skip(L);
  *at = L->p;
  if (!io_lex_accept(L, '%')) {
    io_lex_expected(L, what);
    return NULL;
  }
  const char *s;
  size_t n = io_lex_name_here(L, &s);
  if (n == 0) {
    io_lex_error(L, L->p, "expected a variable name right after '%%'");
    return NULL;
  }
  return intern(P, s, n, *at);
}

/* "%name: type" */
static bool parse_var_decl(io_parser *P, const char *what, const char **name, const mil_type **type, mil_mark *mark,
                           const char **at) {
  *name = parse_percent_name(P, what, at);
  if (!*name) return false;
  if (!io_lex_expect(&P->L, ':', "after the variable name")) return false;
  P->decl_name = *name;
  *type = io_parse_type(P, mark);
  P->decl_name = NULL;
  return *type != NULL;
}

/* ---------- arguments ---------- */

/* Skips a balanced "[...]" (op scopes printed with print_attr=True). */
static bool skip_scopes(io_parser *P) {
  io_lex *L = &P->L;
  int depth = 0;
  const char *open = L->p;
  do {
    int c = io_lex_peek(L);
    if (c < 0) return io_lex_error(L, open, "unbalanced '[' in op scopes"), false;
    if (c == '"' || c == '\'') {
      size_t len;
      if (!io_lex_string(L, &P->sbuf, &P->scap, &len)) return false;
      continue;
    }
    if (c == '[') {
      if (++depth > IO_PARSE_MAX_LIST_DEPTH) return io_lex_error(L, L->p, "op scopes nested too deeply"), false;
    } else if (c == ']') {
      depth--;
    }
    L->p++;
  } while (depth > 0);
  return true;
}

/* Pushes one binding: a var, or an inline literal turned into a const
 * once the op's name is known (make_literal_consts). */
static bool push_bind(io_parser *P, mil_var *v, const mil_value *lit, const char *at) {
  if (P->n_vars == P->cap_vars) {
    size_t nc = P->cap_vars ? P->cap_vars * 2 : 64;
    void *a = realloc(P->vars, nc * sizeof *P->vars);
    if (!a) return nomem(P);
    P->vars = a;
    a = realloc(P->lits, nc * sizeof *P->lits);
    if (!a) return nomem(P);
    P->lits = a;
    a = realloc(P->lit_at, nc * sizeof *P->lit_at);
    if (!a) return nomem(P);
    P->lit_at = a;
    P->cap_vars = nc;
  }
  P->vars[P->n_vars] = v;
  P->lits[P->n_vars] = lit;
  P->lit_at[P->n_vars] = at;
  P->n_vars++;
  return true;
}

/* One "%name" or literal element; pushes its binding. */
static bool parse_bind(io_parser *P, const char *what) {
  io_lex *L = &P->L;
  io_lex_skip(L);
  const char *at = L->p;
  if (io_lex_peek(L) == '%') {
    const char *name = parse_percent_name(P, what, &at);
    mil_var *v = name ? io_sym_resolve(P, name, at) : NULL;
    return v && push_bind(P, v, NULL, at);
  }
  if (io_lex_peek(L) == '@') {
    io_lex_error(L, at, "@blob(...) is only allowed as the val of a const");
    return false;
  }
  if (!io_lex_at_literal(L)) {
    io_lex_expected(L, what);
    return false;
  }
  const mil_value *lit = io_parse_literal(L, P->p);
  if (!lit) return false;
  P->saw_literal = true;
  return push_bind(P, NULL, lit, at);
}

/* True when the parenthesized group at the cursor holds a '%' at its own
 * level: a tuple of operands "(%a, %b)" rather than a Python tuple literal
 * "(0, 2, 1)". "()" is an empty operand tuple. */
static bool paren_is_var_tuple(const io_lex *L) {
  int depth = 0;
  bool empty = true;
  for (const char *q = L->p; q < L->end; q++) {
    char c = *q;
    if (c == '"' || c == '\'') { /* skip a string */
      for (q++; q < L->end && *q != c; q++)
        if (*q == '\\' && q + 1 < L->end) q++;
      empty = false;
      continue;
    }
    if (c == '#') { /* skip a comment */
      while (q + 1 < L->end && q[1] != '\n') q++;
      continue;
    }
    if (c == '(' || c == '[') {
      depth++;
    } else if (c == ')' || c == ']') {
      if (--depth == 0) return empty;
    } else if (c == '%' && depth == 1) {
      return true;
    } else if (c == '{' || c == '}') {
      return false; /* malformed; let the literal parser report it */
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      empty = false;
    }
  }
  return false;
}

/* One argument value for parameter `param` of an op being parsed. */
static bool parse_arg_value(io_parser *P, io_arg_tmp *a, bool const_val, const io_out_tmp *const_out) {
  io_lex *L = &P->L;
  int c = io_lex_peek(L);
  a->at = L->p;
  if (const_val) {
    if (c == '@') return (a->lit = io_parse_blob_ref(P, const_out->type, const_out->name)) != NULL;
    return (a->lit = io_parse_tensor_value(L, P->p, const_out->type, const_out->name)) != NULL;
  }
  a->first_var = P->n_vars;
  if (c == '(' && paren_is_var_tuple(L)) {
    L->p++;
    a->is_tuple = true;
    if (!io_lex_accept(L, ')')) {
      do {
        if (!parse_bind(P, "'%name' or a literal in a tuple of operands")) return false;
      } while (io_lex_accept(L, ','));
      if (!io_lex_expect(L, ')', "closing the tuple of operands")) return false;
    }
  } else if (!parse_bind(P, "'%name', '(%a, ...)' or a literal as the argument value")) {
    return false;
  }
  a->n_vars = (int32_t)(P->n_vars - a->first_var);
  return true;
}

/* "(" args ")" of an op; sets *op_name. */
static bool parse_args(io_parser *P, size_t outs_mark, bool is_const, const char **op_name) {
  io_lex *L = &P->L;
  *op_name = NULL;
  if (!io_lex_expect(L, '(', "after the op type")) return false;
  io_lex_accept(L, ','); /* "op(, name=...)" when no argument is printed */
  if (io_lex_accept(L, ')')) goto done;
  for (;;) {
    const char *pname, *at;
    io_lex_skip(L);
    at = L->p;
    size_t pn = io_lex_ident(L, &pname);
    if (pn == 0) {
      io_lex_expected(L, "an argument name");
      return false;
    }
    if (!io_lex_expect(L, '=', "after the argument name")) return false;
    if (pn == 4 && memcmp(pname, "name", 4) == 0) {
      if (*op_name) return io_lex_error(L, at, "duplicate name= argument"), false;
      if (io_lex_peek(L) != '"' && io_lex_peek(L) != '\'') {
        io_lex_expected(L, "a quoted op name after name=");
        return false;
      }
      size_t len;
      if (!io_lex_string(L, &P->sbuf, &P->scap, &len)) return false;
      if (!(*op_name = intern(P, P->sbuf, len, at))) return false;
    } else {
      const char *param = intern(P, pname, pn, at);
      if (!param) return false;
      for (size_t i = P->arg_mark; i < P->n_args; i++)
        if (P->args[i].param == param) return io_lex_error(L, at, "duplicate argument '%s'", param), false;
      bool const_val = is_const && pn == 3 && memcmp(pname, "val", 3) == 0;
      if (is_const && !const_val)
        return io_lex_error(L, at, "unexpected argument '%s' of a const (only val= and name=)", param), false;
      if (const_val && P->n_outs - outs_mark != 1)
        return io_lex_error(L, at, "a const must have exactly one output, found %zu", P->n_outs - outs_mark), false;
      if (!GROW(P, P->args, P->n_args, P->cap_args)) return false;
      io_arg_tmp *a = &P->args[P->n_args];
      memset(a, 0, sizeof *a);
      a->param = param;
      a->const_val = const_val;
      if (!parse_arg_value(P, a, const_val, const_val ? &P->outs[outs_mark] : NULL)) return false;
      P->n_args++;
    }
    if (!io_lex_accept(L, ',')) break;
  }
  if (!io_lex_expect(L, ')', "after arguments")) return false;
done:
  if (!*op_name) {
    io_lex_error(L, L->p - 1, "expected name=\"...\" among the arguments of the op, found ')'");
    return false;
  }
  return true;
}

/* ---------- ops and blocks ---------- */

static bool parse_block(io_parser *P, mil_block *b, int depth);

/* True when the next token starts a nested block (a block name). */
static bool at_block_name(io_parser *P) {
  int c = io_lex_peek(&P->L);
  return c >= 0 && c != '%' && c != '=' && c != '}' && c != ')' && c != '(' && c != ',' && c != '"';
}

/* Creates the const ops of the inline literals of the op being built and
 * binds them in place of the literals. */
static bool make_literal_consts(io_parser *P, mil_block *b, const char *op_name) {
  for (size_t i = P->arg_mark; i < P->n_args; i++) {
    io_arg_tmp *a = &P->args[i];
    if (a->const_val) continue;
    for (size_t k = a->first_var; k < a->first_var + (size_t)a->n_vars; k++) {
      if (!P->lits[k]) continue;
      const char *cname = io_sym_fresh_name(P, op_name, a->param);
      if (!cname) return false;
      mil_op *cop = mil_const_new(P->p, cname, P->lits[k]);
      if (!cop) return nomem(P);
      mil_block_append(b, cop);
      if (!io_sym_define(P, cop->outputs[0], P->lit_at[k], true, SIZE_MAX)) return false;
      P->vars[k] = cop->outputs[0];
    }
  }
  return true;
}

static bool parse_op(io_parser *P, mil_block *b, int depth) {
  io_lex *L = &P->L;
  size_t outs_mark = P->n_outs, args_mark = P->n_args, vars_mark = P->n_vars, saved_arg_mark = P->arg_mark;
  P->arg_mark = args_mark;
  bool ok = false;
  int c = io_lex_peek(L);
  if (c != '%' && c != '=') {
    io_lex_expected(L, "an op ('%name: type = op_type(...)') or '}'");
    goto out;
  }
  if (c == '%') {
    do {
      if (!GROW(P, P->outs, P->n_outs, P->cap_outs)) goto out;
      io_out_tmp *o = &P->outs[P->n_outs];
      if (!parse_var_decl(P, "'%' starting an output", &o->name, &o->type, &o->mark, &o->at)) goto out;
      P->n_outs++;
    } while (io_lex_accept(L, ','));
  }
  if (!io_lex_expect(L, '=', P->n_outs > outs_mark ? "after the op's outputs" : NULL)) goto out;
  const char *tname, *tat;
  io_lex_skip(L);
  tat = L->p;
  size_t tn = io_lex_ident(L, &tname);
  if (tn == 0) {
    io_lex_expected(L, "an op type after '='");
    goto out;
  }
  const char *op_type = intern(P, tname, tn, tat);
  if (!op_type) goto out;
  bool is_const = tn == 5 && memcmp(tname, "const", 5) == 0;
  if (io_lex_peek(L) == '[' && !skip_scopes(P)) goto out;
  const char *op_name;
  if (!parse_args(P, outs_mark, is_const, &op_name)) goto out;

  /* build the op */
  mil_op *op = mil_op_new(P->p, op_type, op_name);
  if (!op) {
    nomem(P);
    goto out;
  }
  if (!make_literal_consts(P, b, op_name)) goto out;
  const mil_value *const_val = NULL;
  for (size_t i = args_mark; i < P->n_args; i++) {
    io_arg_tmp *a = &P->args[i];
    if (a->const_val) {
      const_val = a->lit;
      continue;
    }
    /* an empty tuple "()" binds no var: P->vars may still be NULL */
    mil_var *const *tv = a->n_vars ? &P->vars[a->first_var] : NULL;
    mil_input *in = a->is_tuple ? mil_op_add_input_tuple(op, a->param, a->n_vars, tv)
                                : mil_op_add_input(op, a->param, P->vars[a->first_var]);
    if (!in) {
      nomem(P);
      goto out;
    }
  }
  if (is_const && !const_val) {
    io_lex_error(L, tat, "const '%s' has no val= argument", op_name);
    goto out;
  }
  for (size_t i = outs_mark; i < P->n_outs; i++) {
    mil_var *v = mil_op_add_output(op, P->outs[i].name, P->outs[i].type);
    if (!v) {
      nomem(P);
      goto out;
    }
    v->mark = P->outs[i].mark;
    if (v->mark == MIL_MARK_VALUE) op->program->marks_pending = true; /* values are filled in later */
  }
  if (is_const) {
    mil_var_set_value(op->outputs[0], const_val);
    P->saw_const = true;
  }
  mil_block_append(b, op);

  /* nested blocks */
  while (at_block_name(P)) {
    if (depth + 1 > IO_PARSE_MAX_BLOCK_DEPTH) {
      io_lex_error(L, L->p, "blocks nested deeper than %d levels", IO_PARSE_MAX_BLOCK_DEPTH);
      goto out;
    }
    mil_block *nb = mil_block_new(P->p, NULL);
    int32_t nblocks = op->n_blocks;
    if (nb) mil_op_add_block(op, nb);
    if (!nb || op->n_blocks != nblocks + 1) {
      nomem(P);
      goto out;
    }
    if (!parse_block(P, nb, depth + 1)) goto out;
  }

  /* outputs become visible after the op (and its blocks) */
  size_t first_def = P->n_scope_defs;
  for (size_t i = outs_mark; i < P->n_outs; i++)
    if (!io_sym_define(P, op->outputs[i - outs_mark], P->outs[i].at, false, first_def)) goto out;
  ok = true;
out:
  P->n_outs = outs_mark;
  P->n_args = args_mark;
  P->n_vars = vars_mark;
  P->arg_mark = saved_arg_mark;
  return ok;
}

/* block := name "(" inputs ")" "{" ops "}" "->" "(" outputs ")" */
static bool parse_block(io_parser *P, mil_block *b, int depth) {
  io_lex *L = &P->L;
  const char *name, *at;
  io_lex_skip(L);
  at = L->p;
  size_t n = io_lex_name(L, &name);
  if (n == 0) {
    io_lex_expected(L, "a block name (e.g. 'block0')");
    return false;
  }
  if (!(b->name = intern(P, name, n, at))) return false;
  if (!io_lex_expect(L, '(', "after the block name") || !io_sym_push_scope(P)) return false;
  bool ok = false;
  size_t vars_mark = P->n_vars;
  if (!io_lex_accept(L, ')')) {
    do {
      const char *vname, *vat;
      const mil_type *t;
      mil_mark mark;
      if (!parse_var_decl(P, "'%' starting a block input", &vname, &t, &mark, &vat)) goto out;
      mil_var *v = mil_block_add_input(b, vname, t);
      if (!v) {
        nomem(P);
        goto out;
      }
      v->mark = mark;
      if (!io_sym_define(P, v, vat, false, P->scopes[P->n_scopes - 1])) goto out;
    } while (io_lex_accept(L, ','));
    if (!io_lex_expect(L, ')', "after the block inputs")) goto out;
  }
  if (!io_lex_expect(L, '{', "opening the block")) goto out;
  for (;;) {
    int c = io_lex_peek(L);
    if (c == '}') break;
    if (c < 0) {
      char what[300];
      snprintf(what, sizeof what, "'}' closing block '%s'", b->name);
      io_lex_expected(L, what);
      goto out;
    }
    if (!parse_op(P, b, depth)) goto out;
  }
  L->p++;
  io_lex_skip(L);
  if (L->end - L->p < 2 || L->p[0] != '-' || L->p[1] != '>') {
    io_lex_expected(L, "'->' after the block body");
    goto out;
  }
  L->p += 2;
  if (!io_lex_expect(L, '(', "before the block outputs")) goto out;
  if (!io_lex_accept(L, ')')) {
    do {
      const char *vat, *vname = parse_percent_name(P, "'%' naming a block output", &vat);
      if (!vname) goto out;
      mil_var *v = io_sym_resolve(P, vname, vat);
      if (!v) goto out;
      if (!push_bind(P, v, NULL, vat)) goto out;
    } while (io_lex_accept(L, ','));
    if (!io_lex_expect(L, ')', "after the block outputs")) goto out;
  }
  /* no outputs bound yet: P->vars may still be NULL (no offset into it) */
  mil_var *const *outs = P->n_vars > vars_mark ? &P->vars[vars_mark] : NULL;
  if (mil_block_set_outputs(b, (int32_t)(P->n_vars - vars_mark), outs) != MIL_OK) {
    nomem(P);
    goto out;
  }
  /* a function body: its outputs and the function's inputs need distinct names */
  if (depth == 0 && b->func) {
    char why[512];
    int32_t at;
    if (!mil_function_io_names_ok(b->func, b, &at, why, sizeof why)) {
      int32_t k = at - b->func->n_inputs;
      io_lex_error(L, k >= 0 ? P->lit_at[vars_mark + (size_t)k] : L->p, "%s", why);
      goto out;
    }
  }
  ok = true;
out:
  P->n_vars = vars_mark;
  io_sym_pop_scope(P);
  return ok;
}

/* function := name "[" opset "]" "(" inputs ")" "{" block "}" */
static bool parse_function(io_parser *P) {
  io_lex *L = &P->L;
  const char *s, *at;
  io_lex_skip(L);
  at = L->p;
  size_t n = io_lex_name(L, &s);
  if (n == 0) {
    io_lex_expected(L, "a function ('main[CoreML7](...) {')");
    return false;
  }
  const char *fname = intern(P, s, n, at);
  if (!fname || !io_lex_expect(L, '[', "after the function name")) return false;
  io_lex_skip(L);
  const char *oat = L->p;
  n = io_lex_name(L, &s);
  if (n == 0) {
    io_lex_expected(L, "an opset name (e.g. 'CoreML7')");
    return false;
  }
  const char *opset = intern(P, s, n, oat);
  if (!opset || !io_lex_expect(L, ']', "after the opset name")) return false;
  if (mil_program_find_function(P->p, fname)) {
    io_lex_error(L, at, "duplicate function '%s'", fname);
    return false;
  }
  mil_function *f = mil_function_new(P->p, fname, opset);
  if (!f) return nomem(P);
  io_sym_reset(P);
  if (!io_sym_push_scope(P)) return false;
  bool ok = false;
  if (!io_lex_expect(L, '(', "after the function head")) goto out;
  if (!io_lex_accept(L, ')')) {
    do {
      const char *vname, *vat;
      const mil_type *t;
      mil_mark mark;
      if (!parse_var_decl(P, "'%' starting a function input", &vname, &t, &mark, &vat)) goto out;
      mil_var *v = mil_function_add_input(f, vname, t);
      if (!v) {
        nomem(P);
        goto out;
      }
      (void)mark; /* function inputs carry no compile-time value */
      if (!io_sym_define(P, v, vat, false, 0)) goto out;
    } while (io_lex_accept(L, ','));
    if (!io_lex_expect(L, ')', "after the function inputs")) goto out;
  }
  if (!io_lex_expect(L, '{', "opening the function body")) goto out;
  if (!parse_block(P, mil_function_body(f), 0)) goto out;
  {
    char what[300];
    snprintf(what, sizeof what, "closing function '%s'", fname);
    if (!io_lex_expect(L, '}', what)) goto out;
  }
  ok = true;
out:
  io_sym_pop_scope(P);
  return ok;
}

/* ---------- entry points ---------- */

mil_status mil_parse_program(const char *text, size_t len, const mil_parse_options *opt, mil_program **out,
                             mil_diag *d) {
  if (out) *out = NULL;
  if (!out || (!text && len)) {
    mil_diag_error(d, MIL_ERR_INVALID, "mil_parse_program: NULL argument");
    return MIL_ERR_INVALID;
  }
  io_parser P;
  memset(&P, 0, sizeof P);
  io_lex_init(&P.L, text ? text : "", len, opt ? opt->filename : NULL, d);
  P.opt = opt;
  P.p = mil_program_new(NULL);
  if (!P.p) {
    mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", P.L.filename);
    return MIL_ERR_NOMEM;
  }
  do {
    if (!parse_function(&P)) break;
  } while (io_lex_peek(&P.L) >= 0);
  mil_status st = P.L.st;
  io_parser_free(&P);
  io_lex_fini(&P.L);
  /* a program printed from PyMIL was built in that process: the builder's
   * counts go on from its names (mil_program_name_counts_seed) */
  if (st == MIL_OK && !mil_program_name_counts_seed(P.p))
    st = mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", P.L.filename);
  if (st != MIL_OK) {
    mil_program_free(P.p);
    return st;
  }
  *out = P.p;
  return MIL_OK;
}

mil_status mil_parse_file(const char *path, mil_program **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!path || !out) {
    mil_diag_error(d, MIL_ERR_INVALID, "mil_parse_file: NULL argument");
    return MIL_ERR_INVALID;
  }
  char *text = NULL;
  size_t len = 0;
  mil_status st = io_read_file(path, &text, &len, d);
  if (st != MIL_OK) return st;
  mil_parse_options opt = {.filename = path, .base_dir = NULL};
  st = mil_parse_program(text, len, &opt, out, d);
  free(text);
  return st;
}

/* MIL text parser, part 2: the scoped name table, value types, @blob
 * references, and file reading. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "io/fsafe.h"
#include "io/io_internal.h"
#include "mil/blob.h"

/* ================= names ================= */

static bool sym_nomem(io_parser *P, const char *at) {
  io_lex_error_st(&P->L, MIL_ERR_NOMEM, at, "out of memory");
  return false;
}

static size_t ptr_hash(const char *s) {
  uint64_t h = (uint64_t)(uintptr_t)s;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h;
}

/* Index of the entry for interned `name`, or -1. */
static int32_t sym_find(const io_parser *P, const char *name) {
  if (!P->index_cap) return -1;
  size_t mask = P->index_cap - 1;
  for (size_t h = ptr_hash(name) & mask;; h = (h + 1) & mask) {
    int32_t i = P->index[h];
    if (i < 0 || P->syms[i].name == name) return i;
  }
}

static void index_put(io_parser *P, int32_t i) {
  size_t mask = P->index_cap - 1;
  size_t h = ptr_hash(P->syms[i].name) & mask;
  while (P->index[h] >= 0) h = (h + 1) & mask;
  P->index[h] = i;
}

/* Appends a new, not yet visible entry (the name must not be present). */
static int32_t sym_add(io_parser *P, const char *name) {
  if (P->n_syms >= INT32_MAX / 2) return -1;
  if ((P->n_syms + 1) * 2 > P->index_cap) {
    size_t nc = P->index_cap ? P->index_cap * 2 : 64;
    int32_t *ni = malloc(nc * sizeof *ni);
    if (!ni) return -1;
    free(P->index);
    P->index = ni;
    P->index_cap = nc;
    memset(ni, 0xff, nc * sizeof *ni);
    for (size_t k = 0; k < P->n_syms; k++) index_put(P, (int32_t)k);
  }
  if (!io_grow((void **)&P->syms, &P->cap_syms, sizeof *P->syms, P->n_syms + 1)) return -1;
  int32_t i = (int32_t)P->n_syms++;
  P->syms[i] = (io_sym){.name = name};
  index_put(P, i);
  return i;
}

/* Makes entry i name `var` in the innermost scope, remembering what it
 * named before. */
static bool sym_set(io_parser *P, int32_t i, mil_var *var, const char *at, bool anon) {
  if (!io_grow((void **)&P->scope_defs, &P->cap_scope_defs, sizeof *P->scope_defs, P->n_scope_defs + 1))
    return sym_nomem(P, at);
  io_sym *s = &P->syms[i];
  io_scope_def *d = &P->scope_defs[P->n_scope_defs];
  d->sym = i;
  d->prev = *s;
  if (!s->visible) { /* when the scope closes the name is out of scope but still known (for messages) */
    d->prev.var = var;
    d->prev.at = at;
    d->prev.anon = anon;
  }
  s->var = var;
  s->at = at;
  s->visible = true;
  s->anon = anon;
  s->def_idx = P->n_scope_defs++;
  return true;
}

void io_sym_reset(io_parser *P) {
  P->n_syms = 0;
  if (P->index) memset(P->index, 0xff, P->index_cap * sizeof *P->index);
  P->n_scope_defs = 0;
  P->n_scopes = 0;
}

bool io_sym_push_scope(io_parser *P) {
  if (!io_grow((void **)&P->scopes, &P->cap_scopes, sizeof *P->scopes, P->n_scopes + 1))
    return sym_nomem(P, P->L.p);
  P->scopes[P->n_scopes++] = P->n_scope_defs;
  return true;
}

void io_sym_pop_scope(io_parser *P) {
  if (!P->n_scopes) return;
  size_t start = P->scopes[--P->n_scopes];
  for (size_t k = P->n_scope_defs; k-- > start;) P->syms[P->scope_defs[k].sym] = P->scope_defs[k].prev;
  P->n_scope_defs = start;
}

/* Interned "<base>_<k>" for the smallest k whose name is unused. */
static const char *unused_name(io_parser *P, const char *base, size_t base_len, const char *at) {
  if (!io_grow((void **)&P->nbuf, &P->ncap, 1, base_len + 24)) return sym_nomem(P, at), NULL;
  memcpy(P->nbuf, base, base_len);
  for (unsigned long long k = 0;; k++) {
    int n = snprintf(P->nbuf + base_len, 24, "_%llu", k);
    const char *s = mil_program_intern(P->p, P->nbuf, base_len + (size_t)n);
    if (!s) return sym_nomem(P, at), NULL;
    if (sym_find(P, s) < 0) return s;
  }
}

const char *io_sym_fresh_name(io_parser *P, const char *op_name, const char *param) {
  size_t a = strlen(op_name), b = strlen(param);
  if (!io_grow((void **)&P->sbuf, &P->scap, 1, a + b + 2)) return sym_nomem(P, P->L.p), NULL;
  /* the op name is free text; the var name must stay a name run (bytes of
   * the syntax and bytes that are not valid UTF-8 become '_') */
  const unsigned char *u = (const unsigned char *)op_name;
  for (size_t i = 0; i < a;) {
    size_t n = u[i] < 0x80 ? 1 : io_utf8_len(u + i, u + a);
    if (!n || (n == 1 && !io_name_byte(u[i]))) {
      P->sbuf[i++] = '_';
      continue;
    }
    memcpy(P->sbuf + i, op_name + i, n);
    i += n;
  }
  P->sbuf[a] = '_';
  memcpy(P->sbuf + a + 1, param, b);
  return unused_name(P, P->sbuf, a + 1 + b, P->L.p);
}

bool io_sym_define(io_parser *P, mil_var *var, const char *at, bool anon, size_t strict_since) {
  int32_t i = sym_find(P, var->name);
  if (i < 0) {
    i = sym_add(P, var->name);
    if (i < 0) return sym_nomem(P, at);
    return sym_set(P, i, var, at, anon);
  }
  io_sym *s = &P->syms[i];
  if (s->visible && s->anon) {
    /* the literal const took a name the text defines: give it another one */
    mil_var *av = s->var;
    const char *base = av->name;
    size_t len = strlen(base);
    while (len > 0 && base[len - 1] >= '0' && base[len - 1] <= '9') len--;
    if (len > 0 && len < strlen(base) && base[len - 1] == '_') len--;
    else len = strlen(base);
    const char *nn = unused_name(P, base, len, at);
    if (!nn) return false;
    av->name = nn;
    if (av->op) av->op->name = nn;
    const char *aat = s->at;
    int32_t j = sym_add(P, nn);
    if (j < 0 || !sym_set(P, j, av, aat, true)) return sym_nomem(P, at);
    s = &P->syms[i]; /* syms may have moved */
    s->visible = false;
    s->anon = false;
    s->var = NULL;
  } else if (s->visible) {
    int line, col;
    io_lex_linecol(&P->L, s->at, &line, &col);
    if (s->def_idx >= strict_since) {
      io_lex_error(&P->L, at, "duplicate definition of %%%s (first defined at line %d, column %d)", var->name, line,
                   col);
      return false;
    }
    io_lex_warn(&P->L, at, "%%%s is defined again (first at line %d, column %d); later uses refer to this definition",
                var->name, line, col);
  }
  return sym_set(P, i, var, at, anon);
}

/* Position of a later definition "%name:" after `from`, or NULL. */
static const char *find_later_def(const io_parser *P, const char *name, const char *from) {
  size_t n = strlen(name);
  const char *p = from, *end = P->L.end;
  while (p < end) {
    const char *q = memchr(p, '%', (size_t)(end - p));
    if (!q) return NULL;
    if ((size_t)(end - q) > n + 1 && memcmp(q + 1, name, n) == 0 && q[n + 1] == ':') return q;
    p = q + 1;
  }
  return NULL;
}

mil_var *io_sym_resolve(io_parser *P, const char *name, const char *at) {
  int32_t i = sym_find(P, name);
  if (i >= 0 && P->syms[i].visible && !P->syms[i].anon) return P->syms[i].var;
  int line, col;
  if (i >= 0 && !P->syms[i].anon && P->syms[i].var) {
    io_lex_linecol(&P->L, P->syms[i].at, &line, &col);
    io_lex_error(&P->L, at,
                 "%%%s is not visible here: it is defined at line %d inside a block that does not enclose this use",
                 name, line);
    return NULL;
  }
  for (size_t k = 0; k < P->n_outs; k++) /* outputs of the op being read (or of an enclosing one) */
    if (P->outs[k].name == name) {
      io_lex_linecol(&P->L, P->outs[k].at, &line, &col);
      io_lex_error(&P->L, at, "%%%s is used before its definition (at line %d): an op cannot read its own outputs",
                   name, line);
      return NULL;
    }
  const char *later = find_later_def(P, name, at);
  if (later) {
    io_lex_linecol(&P->L, later, &line, &col);
    io_lex_error(&P->L, at, "%%%s is used before its definition (at line %d)", name, line);
    return NULL;
  }
  if (!P->saw_const)
    io_lex_error(&P->L, at,
                 "undefined variable %%%s; the text looks like the coremltools form, which leaves out constants "
                 "with more than 10 elements: parse the complete form instead (mil print --complete)",
                 name);
  else
    io_lex_error(&P->L, at, "undefined variable %%%s", name);
  return NULL;
}

/* ================= types ================= */

/* The dtype named [s, s+n): canonical names only ("fp32", not "float32"). */
static bool dtype_named(const char *s, size_t n, mil_dtype *dt) {
  if (!mil_dtype_from_name(s, n, dt)) return false;
  const char *canon = mil_dtype_name(*dt);
  return strlen(canon) == n && memcmp(canon, s, n) == 0;
}

/* The word in dtype position: a dtype, or one of the type names the printer
 * uses for types that have no dtype. */
typedef enum { TW_DTYPE, TW_DICT, TW_TUPLE, TW_UNKNOWN } type_word;

/* "(d0, d1, ..., dtype)": dims then the dtype word; returns the rank
 * (-1 for "(*?,dtype)", the unknown-rank form) or -2 on error. */
static int parse_dims_dtype(io_parser *P, mil_dim *dims, mil_dtype *dt, type_word *tw) {
  io_lex *L = &P->L;
  int rank = 0;
  *tw = TW_DTYPE;
  *dt = MIL_DT_UNUSED;
  if (!io_lex_expect(L, '(', "opening a type")) return -2;
  for (;;) {
    io_lex_skip(L);
    const char *at = L->p;
    int c = io_lex_peek(L);
    const char *s;
    size_t n;
    if (rank >= IO_PARSE_MAX_RANK && (c == '*' || c == '?' || c == '+' || c == '-' || (c >= '0' && c <= '9'))) {
      io_lex_error(L, at, "more than %d dimensions", IO_PARSE_MAX_RANK);
      return -2;
    }
    if (c == '*') { /* variadic: "*sym" or anonymous "*?" */
      L->p++;
      if (io_lex_accept(L, '?')) {
        dims[rank++] = (mil_dim){-1, NULL, true};
      } else {
        n = io_lex_ident(L, &s);
        if (!n) return io_lex_expected(L, "a symbol name or '?' after '*'"), -2;
        const char *sym = mil_program_intern(P->p, s, n);
        if (!sym) return sym_nomem(P, at), -2;
        dims[rank++] = (mil_dim){-1, sym, true};
      }
    } else if (c == '?') {
      L->p++;
      dims[rank++] = (mil_dim){-1, NULL, false};
    } else if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
      io_num num;
      if (!io_lex_number(L, &num)) {
        if (!io_lex_failed(L)) io_lex_expected(L, "a dimension");
        return -2;
      }
      if (num.is_float || num.neg) {
        io_lex_error(L, at, "bad dimension '%.*s' (expected a non-negative integer)", (int)(L->p - at), at);
        return -2;
      }
      if (num.overflow || num.mag > (uint64_t)INT64_MAX) {
        io_lex_error(L, at, "dimension '%.*s' is larger than 2^63-1", (int)(L->p - at), at);
        return -2;
      }
      dims[rank++] = (mil_dim){(int64_t)num.mag, NULL, false};
    } else if ((n = io_lex_ident(L, &s)) > 0) {
      if (io_lex_peek(L) == ')') { /* the last item: the dtype */
        if (n == 4 && memcmp(s, "dict", 4) == 0) *tw = TW_DICT;
        else if (n == 5 && memcmp(s, "tuple", 5) == 0) *tw = TW_TUPLE;
        else if (n == 7 && memcmp(s, "unknown", 7) == 0) *tw = TW_UNKNOWN;
        else if (!dtype_named(s, n, dt)) return io_lex_error(L, at, "unknown dtype '%.*s'", (int)n, s), -2;
        L->p++;
        if (rank == 1 && dims[0].variadic && !dims[0].sym) return -1;
        return rank;
      }
      if (rank >= IO_PARSE_MAX_RANK) return io_lex_error(L, at, "more than %d dimensions", IO_PARSE_MAX_RANK), -2;
      const char *sym = mil_program_intern(P->p, s, n);
      if (!sym) return sym_nomem(P, at), -2;
      dims[rank++] = (mil_dim){-1, sym, false};
    } else {
      io_lex_expected(L, rank ? "a dimension or a dtype" : "a dtype (e.g. 'fp32') or a dimension");
      return -2;
    }
    if (!io_lex_accept(L, ',')) {
      if (io_lex_peek(L) == ')') io_lex_expected(L, "',' and a dtype after the dimensions");
      else io_lex_expected(L, "',' or ')' in a type");
      return -2;
    }
  }
}

static void parse_mark(io_parser *P, mil_mark *mark) {
  *mark = MIL_MARK_NONE;
  if (io_lex_accept(&P->L, '*')) *mark = MIL_MARK_VALUE;
  else if (io_lex_accept(&P->L, '^')) *mark = MIL_MARK_SYMBOLIC;
}

/* "(Kind)" after a type; returns the kind's first letter or 0. */
static char parse_kind(io_parser *P) {
  io_lex *L = &P->L;
  if (!io_lex_expect(L, '(', "before the type kind (Tensor, Scalar, State, List)")) return 0;
  io_lex_skip(L);
  const char *s, *at = L->p;
  size_t n = io_lex_ident(L, &s);
  char k = 0;
  if (n == 6 && memcmp(s, "Tensor", 6) == 0) k = 'T';
  else if (n == 6 && memcmp(s, "Scalar", 6) == 0) k = 'S';
  else if (n == 5 && memcmp(s, "State", 5) == 0) k = 'X';
  else if (n == 4 && memcmp(s, "List", 4) == 0) k = 'L';
  if (!k) {
    L->p = at;
    io_lex_expected(L, "a type kind (Tensor, Scalar, State or List)");
    return 0;
  }
  if (!io_lex_expect(L, ')', "after the type kind")) return 0;
  return k;
}

/* mil_type_tensor, with the size rule's reason as the error at `at` when
 * the shape breaks it. */
static const mil_type *sized_tensor(io_parser *P, const char *at, mil_dtype dt, int rank, const mil_dim *dims) {
  char why[300];
  if (!mil_tensor_size_ok(dt, rank, dims, why, sizeof why))
    return io_lex_error(&P->L, at, "%s%s%stensor type too large: %s", P->decl_name ? "%" : "",
                        P->decl_name ? P->decl_name : "", P->decl_name ? ": " : "", why),
           NULL;
  const mil_type *t = mil_type_tensor(P->p, dt, rank, dims);
  if (!t) sym_nomem(P, at);
  return t;
}

/* The element type of a list: "(dims, dtype)", int, str, unknown, or a
 * nested List[...](List). */
static const mil_type *parse_list_type(io_parser *P, mil_mark *mark, int depth);

static const mil_type *parse_list_elem(io_parser *P, int depth) {
  io_lex *L = &P->L;
  io_lex_skip(L);
  const char *s, *at = L->p;
  if (io_lex_peek(L) == '(') {
    mil_dim dims[IO_PARSE_MAX_RANK];
    mil_dtype dt;
    type_word tw;
    int rank = parse_dims_dtype(P, dims, &dt, &tw);
    if (rank < -1) return NULL;
    if (tw == TW_UNKNOWN && rank == 0) return mil_type_unknown(P->p);
    if (tw != TW_DTYPE) return io_lex_error(L, at, "this list element type cannot be written in MIL text"), NULL;
    return sized_tensor(P, at, dt, rank, dims);
  }
  if (io_lex_at_word(L, "List")) {
    mil_mark m;
    return parse_list_type(P, &m, depth + 1);
  }
  size_t n = io_lex_ident(L, &s);
  if (n == 3 && memcmp(s, "int", 3) == 0) return mil_type_scalar(P->p, MIL_DT_INT64);
  if (n == 3 && memcmp(s, "str", 3) == 0) return mil_type_scalar(P->p, MIL_DT_STRING);
  if (n == 7 && memcmp(s, "unknown", 7) == 0) return mil_type_unknown(P->p);
  L->p = at;
  io_lex_expected(L, "a list element type ('(dims, dtype)', int, str, unknown or List[...])");
  return NULL;
}

/* List[len, elem](List) */
static const mil_type *parse_list_type(io_parser *P, mil_mark *mark, int depth) {
  io_lex *L = &P->L;
  io_lex_skip(L);
  const char *s, *at = L->p;
  if (depth > IO_PARSE_MAX_LIST_DEPTH) return io_lex_error(L, at, "list types nested too deeply"), NULL;
  io_lex_ident(L, &s); /* "List" */
  if (!io_lex_expect(L, '[', "after List")) return NULL;
  mil_dim len = {-1, NULL, false};
  io_lex_skip(L);
  at = L->p;
  if (!io_lex_accept(L, '?')) {
    io_num num;
    if (!io_lex_number(L, &num)) {
      if (!io_lex_failed(L)) io_lex_expected(L, "a list length or '?'");
      return NULL;
    }
    if (num.is_float || num.neg || num.overflow || num.mag > (uint64_t)INT64_MAX / 2)
      return io_lex_error(L, at, "bad list length '%.*s'", (int)(L->p - at), at), NULL;
    len.size = (int64_t)num.mag;
  }
  if (!io_lex_expect(L, ',', "after the list length")) return NULL;
  const mil_type *elem = parse_list_elem(P, depth);
  if (!elem) return io_lex_failed(L) ? NULL : (sym_nomem(P, at), NULL);
  if (!io_lex_expect(L, ']', "closing the list type")) return NULL;
  parse_mark(P, mark);
  io_lex_skip(L);
  at = L->p;
  char k = parse_kind(P);
  if (!k) return NULL;
  if (k != 'L') return io_lex_error(L, at, "a List[...] type must be followed by (List)"), NULL;
  const mil_type *t = mil_type_list(P->p, elem, len);
  if (!t) sym_nomem(P, at);
  return t;
}

const mil_type *io_parse_type(io_parser *P, mil_mark *mark) {
  io_lex *L = &P->L;
  *mark = MIL_MARK_NONE;
  if (io_lex_at_word(L, "List")) return parse_list_type(P, mark, 0);
  io_lex_skip(L);
  const char *at = L->p;
  if (io_lex_peek(L) != '(') {
    io_lex_expected(L, "a type ('(dims, dtype)(Tensor)', '(dtype)(Scalar)' or 'List[...](List)')");
    return NULL;
  }
  mil_dim dims[IO_PARSE_MAX_RANK];
  mil_dtype dt;
  type_word tw;
  int rank = parse_dims_dtype(P, dims, &dt, &tw);
  if (rank < -1) return NULL;
  parse_mark(P, mark);
  io_lex_skip(L);
  const char *kat = L->p;
  char k = parse_kind(P);
  if (!k) return NULL;
  const mil_type *t = NULL;
  if (tw != TW_DTYPE && k == 'S') {
    if (rank != 0) return io_lex_error(L, at, "a dict, tuple or unknown type has no dimensions"), NULL;
    if (tw == TW_TUPLE) {
      t = mil_type_tuple(P->p, 0, NULL);
    } else {
      const mil_type *u = mil_type_unknown(P->p);
      t = tw == TW_UNKNOWN || !u ? u : mil_type_dict(P->p, u, u);
    }
  } else if (tw != TW_DTYPE && tw != TW_UNKNOWN) {
    return io_lex_error(L, kat, "a dict or tuple type is written with (Scalar)"), NULL;
  } else if (k == 'T') {
    if (!(t = sized_tensor(P, at, dt, rank, dims))) return NULL;
  } else if (k == 'S') {
    if (rank != 0) return io_lex_error(L, kat, "a Scalar type has no dimensions (use (Tensor))"), NULL;
    t = mil_type_scalar(P->p, dt);
  } else if (k == 'X') {
    const mil_type *w = tw == TW_UNKNOWN && rank == 0 ? mil_type_unknown(P->p) : sized_tensor(P, at, dt, rank, dims);
    if (!w) return NULL;
    t = mil_type_state(P->p, w);
  } else {
    return io_lex_error(L, kat, "a (List) type is written 'List[length, element](List)'"), NULL;
  }
  if (!t) sym_nomem(P, at);
  return t;
}

/* ================= @blob references ================= */

/* The base directory for relative blob paths (malloc'd). */
static char *blob_base_dir(const io_parser *P) {
  if (P->opt && P->opt->base_dir) return strdup(P->opt->base_dir);
  const char *fn = P->opt ? P->opt->filename : NULL;
  const char *slash = fn ? strrchr(fn, '/') : NULL;
  if (!slash) return strdup(".");
  if (slash == fn) return strdup("/");
  return strndup(fn, (size_t)(slash - fn));
}

static void blob_drop(void *f) { mil_blob_file_close(f); }

/* Opens the weight file at path (as written, joined to the base
 * directory) once it is known to resolve inside the base directory. */
static mil_blob_file *blob_open(io_parser *P, const char *path, const char *at) {
  for (size_t i = 0; i < P->n_blobs; i++)
    if (strcmp(P->blobs[i].path, path) == 0) return P->blobs[i].f;
  mil_diag tmp;
  mil_diag_init(&tmp);
  mil_blob_file *f = NULL;
  mil_status st = MIL_OK;
  char *real = realpath(path, NULL);
  if (!real) st = mil_diag_error(&tmp, MIL_ERR_IO, "%s: %s", path, strerror(errno));
  if (st == MIL_OK && !P->blob_root) {
    char *base = blob_base_dir(P);
    P->blob_root = base ? io_fs_root(base) : NULL;
    if (!P->blob_root)
      st = mil_diag_error(&tmp, MIL_ERR_IO, "%s: cannot resolve the directory @blob paths resolve against (%s): %s",
                          path, base ? base : "?", strerror(errno));
    free(base);
  }
  if (st == MIL_OK) {
    if (io_fs_check_inside(real, P->blob_root, "the @blob path", NULL, NULL) != MIL_OK)
      st = mil_diag_error(&tmp, MIL_ERR_IO, "%s resolves to %s, outside %s (the directory @blob paths resolve "
                          "against); refusing to read it", path, real, P->blob_root);
    else
      st = io_blob_file_open_in(real, P->blob_root, &f, &tmp);
  }
  free(real);
  if (st != MIL_OK) {
    const char *msg = mil_diag_first_error(&tmp);
    io_lex_error_st(&P->L, st, at, "cannot open the weight file: %s", msg ? msg : path);
    mil_diag_clear(&tmp);
    return NULL;
  }
  mil_diag_clear(&tmp);
  char *copy = strdup(path);
  if (!copy || !io_grow((void **)&P->blobs, &P->cap_blobs, sizeof *P->blobs, P->n_blobs + 1)) {
    free(copy);
    mil_blob_file_close(f);
    sym_nomem(P, at);
    return NULL;
  }
  P->blobs[P->n_blobs].path = copy;
  P->blobs[P->n_blobs].f = f;
  P->n_blobs++;
  /* the program keeps its own reference: its values view this mapping */
  if (mil_program_add_mapping(P->p, mil_blob_file_base(f), (size_t)mil_blob_file_size(f), blob_drop,
                              mil_blob_file_retain(f)) != MIL_OK) {
    sym_nomem(P, at);
    return NULL;
  }
  return f;
}

const mil_value *io_parse_blob_ref(io_parser *P, const mil_type *t, const char *var_name) {
  io_lex *L = &P->L;
  io_lex_skip(L);
  const char *at = L->p;
  L->p++; /* '@' */
  if (!io_lex_at_word(L, "blob")) return io_lex_expected(L, "'blob' after '@'"), NULL;
  L->p += 4;
  if (!io_lex_expect(L, '(', "after @blob")) return NULL;
  size_t len;
  if (io_lex_peek(L) != '"') return io_lex_expected(L, "a quoted file path in @blob(...)"), NULL;
  if (!io_lex_string(L, &P->sbuf, &P->scap, &len)) return NULL;
  const char *rel = mil_program_intern(P->p, P->sbuf, len);
  if (!rel) return sym_nomem(P, at), NULL;
  if (!io_lex_expect(L, ',', "after the @blob file path")) return NULL;
  io_lex_skip(L);
  const char *oat = L->p;
  io_num off;
  if (!io_lex_number(L, &off)) {
    if (!io_lex_failed(L)) io_lex_expected(L, "a byte offset in @blob(...)");
    return NULL;
  }
  if (off.is_float || off.neg || off.overflow)
    return io_lex_error(L, oat, "bad @blob offset '%.*s'", (int)(L->p - oat), oat), NULL;
  if (!io_lex_expect(L, ')', "closing @blob(...)")) return NULL;
  if (!t || t->kind != MIL_TYPE_TENSOR || !mil_type_is_static(t) || t->rank > IO_PARSE_MAX_RANK)
    return io_lex_error(L, at, "@blob value of %%%s needs a tensor type with a static shape", var_name), NULL;

  /* resolve the path: "@model_path/" prefix and relative paths against the base dir */
  const char *rp = rel;
  if (strncmp(rp, "@model_path/", 12) == 0) rp += 12;
  char *full;
  if (rp[0] == '/') {
    full = strdup(rp);
  } else {
    char *base = blob_base_dir(P);
    full = base ? malloc(strlen(base) + strlen(rp) + 2) : NULL;
    if (full) sprintf(full, "%s/%s", base, rp);
    free(base);
  }
  if (!full) return sym_nomem(P, at), NULL;
  mil_blob_file *f = blob_open(P, full, at);
  free(full);
  if (!f) return NULL;
  int64_t shape[IO_PARSE_MAX_RANK];
  for (int32_t i = 0; i < t->rank; i++) shape[i] = t->dims[i].size;
  int64_t numel = mil_type_numel(t);
  const void *data;
  size_t nbytes;
  mil_diag tmp;
  mil_diag_init(&tmp);
  mil_status st = mil_blob_file_read(f, off.mag, t->dtype, numel, &data, &nbytes, &tmp);
  if (st != MIL_OK) {
    const char *msg = mil_diag_first_error(&tmp);
    io_lex_error_st(L, st, at, "cannot read the value of %%%s: %s", var_name, msg ? msg : "blob read failed");
    mil_diag_clear(&tmp);
    return NULL;
  }
  mil_diag_clear(&tmp);
  /* copied: the program must not depend on the mapping staying open */
  mil_value *v = mil_value_new_tensor(P->p, t->dtype, t->rank, shape, t->is_scalar, data);
  if (!v) return sym_nomem(P, at), NULL;
  v->blob_file = rel;
  v->blob_offset = off.mag;
  return v;
}

/* ================= files and cleanup ================= */

mil_status io_read_file(const char *path, char **text, size_t *len, mil_diag *d) {
  *text = NULL;
  *len = 0;
  mil_status ost;
  int fd = io_fs_open_regular(path, NULL, "the MIL text file", NULL, &ost, d);
  if (fd < 0) return ost;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory reading the file", path);
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return mil_diag_error(d, MIL_ERR_IO, "%s: read error", path);
  }
  *text = buf;
  *len = n;
  return MIL_OK;
}

void io_parser_free(io_parser *P) {
  free(P->syms);
  free(P->index);
  free(P->scope_defs);
  free(P->scopes);
  free(P->outs);
  free(P->args);
  free(P->vars);
  free(P->lits);
  free(P->lit_at);
  free(P->sbuf);
  free(P->nbuf);
  for (size_t i = 0; i < P->n_blobs; i++) {
    free(P->blobs[i].path);
    mil_blob_file_close(P->blobs[i].f);
  }
  free(P->blobs);
  free(P->blob_root);
}

/* Internal table of contents of src/io (text parser and printer). Not part
 * of the public API. Each section belongs to one group of files and has its
 * own include guard, so new sections are appended at the end. */
#ifndef MIL_IO_INTERNAL_H
#define MIL_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mil/ir.h"
#include "mil/text.h"

#if defined(__GNUC__)
#define IO_HIDDEN __attribute__((visibility("hidden")))
#else
#define IO_HIDDEN
#endif

#endif /* MIL_IO_INTERNAL_H */

/* parser */
/* text_lex.c, text_parse.c, text_parse_value.c: the MIL text parser
 * (mil_parse_program). The scanner works directly on the caller's buffer;
 * positions are byte pointers into it, turned into line:column only when a
 * message is written. Only the first error is reported. */
#ifndef MIL_IO_INTERNAL_PARSER_H
#define MIL_IO_INTERNAL_PARSER_H

#include <stdarg.h>

/* Nesting limits that keep hostile input from exhausting the stack. */
#define IO_PARSE_MAX_BLOCK_DEPTH MIL_MAX_BLOCK_DEPTH /* nested blocks (while_loop, cond) */
#define IO_PARSE_MAX_RANK 64        /* dims in one tensor type */
#define IO_PARSE_MAX_LIST_DEPTH 32  /* nesting of an inline literal list */

typedef struct io_lex {
  const char *buf, *p, *end; /* whole text, cursor, end of text */
  const char *filename;      /* for messages */
  mil_diag *d;
  mil_status st;             /* first error, MIL_OK while none */
  void *c_locale;            /* locale_t for strtod_l, created on first use */
  /* line/column cache: position `lc_at` is on line `lc_line`, which starts
   * at `lc_bol`; lookups at or after it scan forward only */
  const char *lc_at, *lc_bol;
  int lc_line;
} io_lex;

/* A number as written: integers keep their exact magnitude; every number
 * also has its correctly rounded double value. */
typedef struct io_num {
  bool is_float;  /* had '.', an exponent, or is inf/nan */
  bool neg;       /* leading '-' (also for -0.0 and -inf) */
  bool overflow;  /* integer magnitude does not fit in 64 bits */
  uint64_t mag;   /* |value| of an integer */
  double f;       /* value as double (integers too) */
} io_num;

/* Bytes that may appear in a name run (mil-text.md section 2): anything but
 * white space, control bytes and the punctuation of the grammar. */
/* Length of the valid UTF-8 sequence at p (2 to 4 bytes), or 0. */
static inline size_t io_utf8_len(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n || (size_t)(end - p) < n) return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
      (c == 0xf4 && p[1] > 0x8f))
    return 0; /* overlong, surrogate or past U+10FFFF */
  return n;
}

static inline bool io_name_byte(unsigned char c) {
  if (c <= 0x20 || c == 0x7f) return false;
  switch (c) {
  case ',': case '(': case ')': case ':': case '=': case '[': case ']': case '{': case '}': case '"': return false;
  default: return true;
  }
}

IO_HIDDEN void io_lex_init(io_lex *L, const char *text, size_t len, const char *filename, mil_diag *d);
IO_HIDDEN void io_lex_fini(io_lex *L);
/* Skips white space and '#' comments. */
IO_HIDDEN void io_lex_skip(io_lex *L);
/* Next significant byte (after io_lex_skip), or -1 at end of text. */
IO_HIDDEN int io_lex_peek(io_lex *L);
/* Consumes `c` when it is the next significant byte. */
IO_HIDDEN bool io_lex_accept(io_lex *L, char c);
/* Consumes `c` or records "expected 'c' <context>, found ..." and returns
 * false. context may be NULL or e.g. "after arguments". */
IO_HIDDEN bool io_lex_expect(io_lex *L, char c, const char *context);
/* Identifier [A-Za-z_][A-Za-z0-9_]* at the cursor (after skipping); returns
 * its length (0 when there is none) and sets *s. */
IO_HIDDEN size_t io_lex_ident(io_lex *L, const char **s);
/* A name run: any bytes other than white space and ,():=[]{}"  (var names
 * after '%', block and function names). Length 0 when there is none. */
IO_HIDDEN size_t io_lex_name(io_lex *L, const char **s);
/* Same without skipping white space first (the name right after '%'). */
IO_HIDDEN size_t io_lex_name_here(io_lex *L, const char **s);
/* True when the identifier at the cursor equals `word` (not consumed). */
IO_HIDDEN bool io_lex_at_word(io_lex *L, const char *word);
/* Scans a number at the cursor ([+-] digits [. digits] [e [+-] digits],
 * inf, nan). Returns false without consuming anything when the cursor is
 * not at a number; records an error (and returns false) for a malformed one
 * such as "1.2.3" or "1e". */
IO_HIDDEN bool io_lex_number(io_lex *L, io_num *n);
/* Same, but when `imag` a 'j' may directly follow (imaginary part of a
 * complex literal such as "(1+2j)"; the 'j' is not consumed). */
IO_HIDDEN bool io_lex_number_ex(io_lex *L, io_num *n, bool imag);
/* Scans a quoted string ("..." or '...') with backslash escapes
 * (\\ \" \' \n \t \r \0 \a \b \f \v \xHH \uHHHH \UHHHHHHHH) into a buffer
 * the caller frees with free(); *len excludes the terminating NUL.
 * Returns false (error recorded) for a bad escape, a NUL byte, or a missing
 * closing quote. */
IO_HIDDEN bool io_lex_string(io_lex *L, char **buf, size_t *cap, size_t *len);
/* 1-based line and column (in bytes) of `at`. */
IO_HIDDEN void io_lex_linecol(const io_lex *L, const char *at, int *line, int *col);
/* Records "<file>:<line>:<col>: <message>" for position `at` (only the
 * first error is kept) and returns MIL_ERR_PARSE. */
IO_HIDDEN mil_status io_lex_error(io_lex *L, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like io_lex_error with status `st` (MIL_ERR_NOMEM, MIL_ERR_UNSUPPORTED...). */
IO_HIDDEN mil_status io_lex_error_st(io_lex *L, mil_status st, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes a short description of what is at `at` ("','", "'foo'", "end of
 * input", "a number", "a string") into out. */
IO_HIDDEN const char *io_lex_describe(const io_lex *L, const char *at, char out[48]);
/* Records "expected <what>, found <description of the cursor>". */
IO_HIDDEN mil_status io_lex_expected(io_lex *L, const char *what);
/* Records a warning "<file>:<line>:<col>: <message>" (the severity is the
 * message's, not part of its text). */
IO_HIDDEN void io_lex_warn(io_lex *L, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline bool io_lex_failed(const io_lex *L) { return L->st != MIL_OK; }

/* text_parse_value.c: literal values. */
/* Parses the value of a const whose var has tensor type `t` (static shape):
 * a nested list in t's shape, or a bare literal for rank 0, stored with
 * t's dtype (floats rounded once from the decimal). `at_var` is the var name
 * for messages. NULL with an error recorded on failure. */
IO_HIDDEN mil_value *io_parse_tensor_value(io_lex *L, mil_program *p, const mil_type *t, const char *var_name);
/* Parses an inline literal of a coremltools-form operand (scalar, nested
 * list or tuple): ints become int32 (int64 when out of int32 range),
 * floats fp32, True/False bool, quoted text string; a list has the shape of
 * its nesting. NULL with an error recorded on failure. */
IO_HIDDEN mil_value *io_parse_literal(io_lex *L, mil_program *p);
/* True when the byte at the cursor can start an inline literal. */
IO_HIDDEN bool io_lex_at_literal(io_lex *L);

/* text_parse.c, text_parse_sym.c: parser state shared by the parser files. */
typedef struct mil_blob_file io_blob_file_t;

typedef struct io_out_tmp { /* an output "%name: type" read before its op exists */
  const char *name;
  const mil_type *type;
  mil_mark mark;
  const char *at;
} io_out_tmp;

typedef struct io_arg_tmp { /* one "param=value" of the op being read */
  const char *param;
  const char *at;
  const mil_value *lit; /* inline literal, or the const's val */
  size_t first_var;     /* bindings: parser.vars/lits[first_var .. +n_vars) */
  int32_t n_vars;
  bool is_tuple;
  bool const_val;       /* the val= of a const op */
} io_arg_tmp;

typedef struct io_sym { /* a name defined in the current function */
  const char *name;     /* interned */
  mil_var *var;         /* its current definition (NULL: none) */
  const char *at;       /* where that definition is */
  size_t def_idx;       /* scope_defs record that made it current */
  bool visible;         /* in an open scope */
  bool anon;            /* const made from an inline literal (may be renamed) */
} io_sym;

typedef struct io_scope_def { /* one definition in an open scope */
  int32_t sym;
  io_sym prev; /* the entry before it, restored when the scope closes */
} io_scope_def;

typedef struct io_parser {
  io_lex L;
  mil_program *p;
  const mil_parse_options *opt;
  /* names of the current function: syms[] plus an open-addressing index */
  io_sym *syms;
  size_t n_syms, cap_syms;
  int32_t *index;
  size_t index_cap; /* power of two, or 0 */
  io_scope_def *scope_defs;                         /* definitions in open scopes */
  size_t n_scope_defs, cap_scope_defs;
  size_t *scopes, n_scopes, cap_scopes;             /* start of each open scope in scope_defs */
  /* per-op scratch, used as stacks across nested blocks */
  io_out_tmp *outs;
  size_t n_outs, cap_outs;
  io_arg_tmp *args;
  size_t n_args, cap_args, arg_mark;
  mil_var **vars;                 /* operand bindings, block outputs */
  const mil_value **lits;         /* parallel to vars: inline literal to bind instead */
  const char **lit_at;            /* parallel to vars: text position */
  size_t n_vars, cap_vars;
  char *sbuf, *nbuf; /* string and name scratch */
  size_t scap, ncap;
  bool saw_const, saw_literal;
  const char *decl_name; /* the variable whose type is being read (for messages), or NULL */
  /* weight files opened for @blob values */
  struct io_parse_blob {
    char *path;
    io_blob_file_t *f;
  } *blobs;
  size_t n_blobs, cap_blobs;
  char *blob_root; /* canonical base directory of @blob paths, on first use */
} io_parser;

/* Grows a malloc'd array to hold at least `need` elements. */
IO_HIDDEN bool io_grow(void **arr, size_t *cap, size_t elem, size_t need);
IO_HIDDEN void io_parser_free(io_parser *P);
/* Names: a function starts with io_sym_reset; blocks push and pop scopes. */
IO_HIDDEN void io_sym_reset(io_parser *P);
IO_HIDDEN bool io_sym_push_scope(io_parser *P);
IO_HIDDEN void io_sym_pop_scope(io_parser *P);
/* Defines var->name at position `at`. A visible name defined by record
 * strict_since or later of scope_defs (the same input list or output list)
 * is an error; an earlier visible definition is shadowed, with a warning,
 * and comes back when the scope closes; an anonymous literal const holding
 * the name is renamed. */
IO_HIDDEN bool io_sym_define(io_parser *P, mil_var *var, const char *at, bool anon, size_t strict_since);
/* The visible var named `name` (interned), or NULL with an error saying
 * whether it is used before its definition, out of scope, or undefined. */
IO_HIDDEN mil_var *io_sym_resolve(io_parser *P, const char *name, const char *at);
/* An unused name "<op>_<param>_<k>" (interned) for a literal const. */
IO_HIDDEN const char *io_sym_fresh_name(io_parser *P, const char *op_name, const char *param);
/* A value type after "%name:" with its '*' / '^' marker. */
IO_HIDDEN const mil_type *io_parse_type(io_parser *P, mil_mark *mark);
/* val=@blob("path", offset) for a const of type t: reads the blob through
 * the weight-file reader (mil/blob.h) and copies it into the program. */
IO_HIDDEN const mil_value *io_parse_blob_ref(io_parser *P, const mil_type *t, const char *var_name);
/* Reads a whole file into a malloc'd buffer (MIL_ERR_IO on failure). */
IO_HIDDEN mil_status io_read_file(const char *path, char **text, size_t *len, mil_diag *d);

#endif /* MIL_IO_INTERNAL_PARSER_H */

/* printer */
/* numfmt.c, buf.c, text_print.c, text_print_value.c: the MIL text printer
 * (mil_print_program, mil_format_double, mil_buf_*).
 *
 * Text conventions beyond coremltools' own output (coremltools never prints
 * these, so the printer had to choose):
 *  - a dim with neither size nor symbol prints "?"; a variadic dim prints
 *    "*" + its symbol ("*?" when anonymous); a tensor of unknown rank
 *    (rank -1) prints like one variadic anonymous dim: "(*?,fp32)";
 *  - a tuple-typed var prints "(tuple)", an unknown type "(unknown)", both
 *    with the "(Scalar)" kind, as coremltools does for every non-tensor,
 *    non-list, non-state type (a dict prints "(dict)(Scalar)");
 *  - complete-form strings escape '"', '\\' and bytes below 0x20 or 0x7f as
 *    \" \\ \n \t \r \xHH; other bytes (UTF-8) print as they are;
 *  - list / tuple / dict values print as [a, b], (a, b) / (a,), {k: v}. */
#ifndef MIL_IO_INTERNAL_PRINTER_H
#define MIL_IO_INTERNAL_PRINTER_H

#include <stdio.h>

/* numfmt.c. The writers store no NUL; `out` needs 32 bytes for a double,
 * 21 for an integer. They return the number of chars written. */
#define IO_FMT_NO_DOT0 1u /* integral values without ".0" (parts of a complex) */
#define IO_FMT_SIGN 2u    /* a '+' before non-negative values (imaginary part) */
IO_HIDDEN int io_fmt_double(char *out, double v, unsigned flags);
IO_HIDDEN int io_fmt_u64(char *out, uint64_t v);
IO_HIDDEN int io_fmt_i64(char *out, int64_t v);

/* buf.c: makes room for n more bytes plus a NUL; false (and b->oom) when
 * memory runs out. The bytes go to b->data + b->len; the caller bumps len. */
IO_HIDDEN bool io_buf_grow(mil_buf *b, size_t n);
static inline bool io_buf_reserve(mil_buf *b, size_t n) {
  return (b->len + n < b->cap && !b->oom) || io_buf_grow(b, n);
}

/* Printer output: a buffer, optionally drained into a stdio stream in
 * chunks so that printing a large model never holds all of its text. */
typedef struct io_out {
  mil_buf *b;
  FILE *f;   /* NULL: everything stays in b */
  bool err;  /* a write to f failed */
} io_out;
#define IO_OUT_CHUNK ((size_t)1 << 20)
IO_HIDDEN void io_out_drain(io_out *o);
/* Room for n more bytes at o->b->data + o->b->len (false when out of memory). */
static inline bool io_out_room(io_out *o, size_t n) {
  if (o->f && o->b->len >= IO_OUT_CHUNK) io_out_drain(o);
  return io_buf_reserve(o->b, n);
}

/* text_print.c: the type text of a var, "(1, 3, fp32)*(Tensor)" or
 * "List[?, (2,fp32)](List)"; the mark is printed only where coremltools
 * would print one. */
IO_HIDDEN void io_print_type(mil_buf *b, const mil_type *t, mil_mark mark);
/* text_print_value.c: a value as a literal. complete: every element, with
 * escaped strings (the .mil form); otherwise Python's str(val.tolist()) as
 * coremltools prints an inline const. */
IO_HIDDEN void io_print_value(io_out *o, const mil_value *v, bool complete);
/* A name (var, op type, input, block, function) as it is when it is valid
 * UTF-8 without control characters, otherwise escaped (mil_escape). */
IO_HIDDEN void io_print_name(io_out *o, const char *s);
/* A double-quoted string; complete: with escapes, otherwise as it is
 * (but escaped as io_print_name does). */
IO_HIDDEN void io_print_string(io_out *o, const char *s, bool complete);

#endif /* MIL_IO_INTERNAL_PRINTER_H */

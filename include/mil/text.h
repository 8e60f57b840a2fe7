/* libmil: MIL text, in the two forms of ../shared/spec/mil-text.md.
 *
 * The coremltools form is byte for byte what coremltools' print(program)
 * produces (coremltools/converters/mil/mil/program.py Program.__str__,
 * function.py Function.to_str, block.py Block.indented_str,
 * operation.py Operation.indented_str / var_to_str, var.py Var.__str__).
 * The complete form adds const ops with full values and prints every operand
 * by name; it is lossless and is the `.mil` file format.
 */
#ifndef MIL_TEXT_H
#define MIL_TEXT_H

#include <stdio.h>

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable byte buffer (used for printing). Zero-initialize; free with
 * mil_buf_free. data is NUL-terminated whenever len > 0. */
typedef struct mil_buf {
  char *data;
  size_t len, cap;
  bool oom; /* set when an append failed; later appends are ignored */
} mil_buf;
MIL_API void mil_buf_free(mil_buf *b);
MIL_API void mil_buf_put(mil_buf *b, const char *s, size_t n);
MIL_API void mil_buf_puts(mil_buf *b, const char *s);
MIL_API void mil_buf_putc(mil_buf *b, char c);
MIL_API void mil_buf_printf(mil_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum mil_print_form {
  MIL_PRINT_COREMLTOOLS = 0, /* coremltools' print(program) */
  MIL_PRINT_COMPLETE = 1,    /* lossless: const ops with values, operands by name */
} mil_print_form;

typedef struct mil_print_options {
  mil_print_form form;
  /* COMPLETE form: consts whose value came from a weight file print as
   * val=@blob("<blob_file>", <offset>) instead of the full values. */
  bool blob_refs;
} mil_print_options;

/* Appends the text of p to out. Never fails except for out-of-memory (out->oom). */
MIL_API void mil_print_program(const mil_program *p, const mil_print_options *opt, mil_buf *out);
/* Prints to a stdio stream; MIL_ERR_IO on a write error. */
MIL_API mil_status mil_print_program_file(const mil_program *p, const mil_print_options *opt, FILE *f);
/* What mil_print_program_file_with adds to mil_print_options. */
typedef struct mil_print_extra {
  /* print only the function of this name (NULL: every function) */
  const char *function;
  /* COMPLETE form, when non-NULL: called for every const with a tensor
   * value; returns the file name to print as val=@blob("<file>", *offset)
   * (the string must live until printing ends), or NULL to print the value
   * itself. Replaces blob_refs. */
  const char *(*blob_ref)(void *ud, const mil_value *v, uint64_t *offset);
  void *blob_ref_ud;
} mil_print_extra;

/* mil_print_program_file with the choices of x (NULL: none). Errors:
 * MIL_ERR_NOT_FOUND when x->function names no function of p (nothing is
 * printed), MIL_ERR_IO, MIL_ERR_NOMEM, MIL_ERR_INVALID (NULL p or f). */
MIL_API mil_status mil_print_program_file_with(const mil_program *p, const mil_print_options *opt,
                                               const mil_print_extra *x, FILE *f);

/* Writes p as a complete-form .mil file at `path`, the way `mil` writes
 * .mil output. Unless inline_weights, every const that a model writer would
 * put into weight.bin (mil/blob.h mil_blob_should_store, at the
 * specification version the first function's opset implies, at least 6)
 * goes into a weight file beside the text, named after it ("net.mil" ->
 * "net.weight.bin", so that two programs in one directory keep their own),
 * and the text refers to it relative to itself: val=@blob("net.weight.bin",
 * offset), which mil_parse_file resolves against the .mil's directory.
 * Identical blobs are stored once. Both files are written to temporary
 * siblings and renamed into place (the weight file first), created with
 * mode 0666 minus the umask; on failure neither existing file changes. A
 * program without such consts writes no weight file.
 * Errors: MIL_ERR_IO (naming the file), MIL_ERR_NOMEM, MIL_ERR_INVALID
 * (NULL p or path). */
MIL_API mil_status mil_save_text(const mil_program *p, const char *path, bool inline_weights, mil_diag *d);

/* Appends v as coremltools prints an inline value ("[1, 2]", "2.0",
 * "\"same\"", "None" for NULL), every element of it: meant for small
 * values. Out of memory sets out->oom. */
MIL_API void mil_print_value(const mil_value *v, mil_buf *out);

/* Appends the Python repr of a double (shortest round-trip digits, "1e-05",
 * "2.0", "inf", "nan"); returns the number of chars written (< 32). */
MIL_API int mil_format_double(char out[32], double v);

typedef struct mil_parse_options {
  const char *filename; /* for messages ("<stdin>" when NULL) */
  /* Directory against which @blob("file", off) paths resolve; NULL = the
   * directory of filename. */
  const char *base_dir;
} mil_parse_options;

/* Parses MIL text (complete form, or a coremltools-form snippet whose inline
 * literals become anonymous consts) into a new program. On error returns
 * NULL-program and a status, with a "file:line:col: expected X, found Y"
 * message in d. `text` need not be NUL-terminated.
 *
 * Accepts what coremltools' print(program) writes (formats.md section 6:
 * Program.__str__, Function.to_str, Block.indented_str,
 * Operation.indented_str, Var.__str__) plus the complete form's const lines
 * (mil-text.md section 2); layout is free and '#' starts a comment. The
 * caller owns *out (mil_program_free).
 *  - Const values are stored with the var's declared dtype, each element
 *    rounded once from its decimal text. "nan" gives the default quiet NaN.
 *    Sub-byte consts also accept values of the 8-bit type coremltools holds
 *    them in, keeping the low bits (with a warning in d).
 *  - An inline literal becomes a const op inserted before its op and named
 *    "<op name>_<param>_<k>"; its dtype comes from the literal alone: int32
 *    for integers (int64 when a value does not fit), fp32 for floats, bool
 *    for True/False, string for quoted text. Operand type domains are not
 *    consulted, so passes that need another dtype must cast.
 *  - Names are resolved as they are read: a var is visible after its
 *    definition in its block and in blocks nested there. A later
 *    definition of a visible name shadows it from there on (coremltools
 *    can print such programs), with a warning in d; the same name twice in
 *    one input or output list is an error.
 *  - val=@blob("path", offset) reads the blob with the weight-file reader
 *    (mil/blob.h), resolving the path ("@model_path/" prefix dropped)
 *    against opt->base_dir, and copies it into the program (the value
 *    keeps blob_file/blob_offset). The resolved path (realpath, symlinks
 *    followed) must lie inside the base directory: "@blob(\"/etc/passwd\",
 *    0)" or "../x" leaving it are errors unless the caller names a
 *    base_dir that holds them. The file must be a regular file; messages
 *    never show bytes of a file that is not a weight file.
 * The names the passes later give go on from the program's own
 * "<prefix>_<k>" names, as coremltools' builder counts in the process that
 * built the program (mil_program_name_counts_seed).
 * Errors: MIL_ERR_PARSE (malformed text, undefined or out-of-scope names,
 * bad values, nesting beyond 64 blocks / 64 dims / 32 literal levels),
 * MIL_ERR_IO and MIL_ERR_FORMAT (a @blob file that cannot be read),
 * MIL_ERR_NOMEM, MIL_ERR_INVALID (NULL out, or NULL text with len > 0). */
MIL_API mil_status mil_parse_program(const char *text, size_t len, const mil_parse_options *opt, mil_program **out,
                                     mil_diag *d);
/* Reads the file at `path` and parses it as mil_parse_program does, with
 * `path` as the file name in messages and its directory as base_dir.
 * Errors: those of mil_parse_program, and MIL_ERR_IO when the file cannot
 * be read. */
MIL_API mil_status mil_parse_file(const char *path, mil_program **out, mil_diag *d);

#ifdef __cplusplus
}
#endif
#endif

/* libmil: status codes, diagnostics and the allocator hook.
 *
 * Every fallible libmil function returns a mil_status and, when given a
 * non-NULL mil_diag, records a human-readable message saying where the
 * problem is (file and line:column for text, byte offset for binary files,
 * function / op / input for IR errors), what was expected and what was found.
 * The library never exits or aborts on bad input.
 */
#ifndef MIL_STATUS_H
#define MIL_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MIL_BUILDING_LIB) && defined(__GNUC__)
#define MIL_API __attribute__((visibility("default")))
#else
#define MIL_API
#endif

typedef enum mil_status {
  MIL_OK = 0,
  MIL_ERR_PARSE,       /* malformed text */
  MIL_ERR_IO,          /* file system error (open, read, write, rename) */
  MIL_ERR_FORMAT,      /* malformed binary file (protobuf, blob, npy, package) */
  MIL_ERR_TYPE,        /* type mismatch, failed type inference */
  MIL_ERR_INVALID,     /* structurally invalid program or bad argument */
  MIL_ERR_NOMEM,       /* allocation failed */
  MIL_ERR_UNSUPPORTED, /* valid input that libmil does not handle (yet) */
  MIL_ERR_NOT_FOUND,   /* a named entity (pass, op, function, input) does not exist */
} mil_status;

/* Short name of a status ("ok", "parse error", ...). Never NULL. */
MIL_API const char *mil_status_str(mil_status s);

typedef enum mil_severity { MIL_SEV_ERROR = 0, MIL_SEV_WARNING = 1, MIL_SEV_NOTE = 2 } mil_severity;

typedef struct mil_diag_msg {
  mil_severity severity;
  char *text; /* full message, e.g. "model.mil:3:14: expected ')', found ','" */
} mil_diag_msg;

/* A diagnostics sink. Zero-initialize (or mil_diag_init) before use;
 * release with mil_diag_clear. Messages are kept in order. */
typedef struct mil_diag {
  mil_diag_msg *msgs;
  size_t count, cap;
  size_t n_errors, n_warnings;
  size_t max_msgs; /* 0 = default (1000); further messages are counted, not stored */
} mil_diag;

MIL_API void mil_diag_init(mil_diag *d);
/* Frees every message; the sink can be reused. */
MIL_API void mil_diag_clear(mil_diag *d);
/* Records a printf-formatted message. d may be NULL (then nothing happens).
 * Returns MIL_OK for notes/warnings and MIL_ERR_INVALID for errors so callers
 * can `return mil_diag_add(...)`; use mil_diag_error for another status. */
MIL_API mil_status mil_diag_add(mil_diag *d, mil_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
MIL_API mil_status mil_diag_vadd(mil_diag *d, mil_severity sev, const char *fmt, va_list ap);
/* Records an error message and returns `st` (so `return mil_diag_error(d, MIL_ERR_IO, ...)`). */
MIL_API mil_status mil_diag_error(mil_diag *d, mil_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The text of the first error, or NULL when there is none. */
MIL_API const char *mil_diag_first_error(const mil_diag *d);

/* Escaping text that comes from a model (names, op types, strings) before
 * it reaches a terminal or a file name. Valid UTF-8 other than control
 * characters is kept byte for byte; C0 controls (including newline and
 * tab), DEL, the C1 controls U+0080..U+009F and every byte that is not part
 * of valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points
 * above U+10FFFF) become "\xhh" (two lowercase hex digits). With
 * MIL_ESCAPE_FILE_NAME they become "%hh" instead and '/' becomes '_'.
 * Every message recorded in a mil_diag is escaped this way. */
#define MIL_ESCAPE_FILE_NAME 1u
/* Writes the escaped form of s (NULL: "") to out, at most cap - 1 bytes
 * and a NUL (nothing when cap is 0; out may then be NULL). Returns the
 * length of the whole escaped text, as snprintf does. */
MIL_API size_t mil_escape(const char *s, char *out, size_t cap, unsigned flags);
/* Whether s has anything mil_escape would change. */
MIL_API bool mil_escape_needed(const char *s, unsigned flags);
/* s itself when it needs no escaping, otherwise its escaped form in buf
 * (cap bytes; cut to fit, ending in "..." when cut). For printing:
 * printf("%s", mil_escaped(name, buf, sizeof buf)). NULL gives "". */
MIL_API const char *mil_escaped(const char *s, char *buf, size_t cap);

/* Allocator hook (Lua style): realloc semantics. alloc(ud, NULL, 0, n)
 * allocates, alloc(ud, p, old, 0) frees and returns NULL, otherwise resizes.
 * Returns NULL on failure (never for a free). */
typedef void *(*mil_alloc_fn)(void *ud, void *ptr, size_t old_size, size_t new_size);
typedef struct mil_allocator {
  mil_alloc_fn fn;
  void *ud;
} mil_allocator;

/* The default allocator (malloc/realloc/free). */
MIL_API const mil_allocator *mil_default_allocator(void);

#ifdef __cplusplus
}
#endif
#endif

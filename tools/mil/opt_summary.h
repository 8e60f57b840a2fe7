/* `mil opt` observability: the in-place progress line shown on a terminal,
 * and the end-of-run summary (ops by type before/after, weight bytes, phase
 * times, peak memory). Everything goes to stderr; nothing here writes to
 * stdout, so `mil opt IN -o -` keeps stdout for the program text. */
#ifndef MIL_CLI_OPT_SUMMARY_H
#define MIL_CLI_OPT_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mil/mil.h"
#include "mil/passes.h"

/* Monotonic clock in seconds. */
double opt_now(void);

/* ---------- progress line ---------- */

/* A status line rewritten in place ("\r...\033[K"). Inactive (every call a
 * no-op) unless opt_progress_init found a terminal on `f` and `enabled`. */
typedef struct opt_progress {
  FILE *f;
  bool active;
  bool shown; /* something is on the line now */
  int width;  /* terminal columns */
} opt_progress;

void opt_progress_init(opt_progress *pg, FILE *f, bool enabled);
/* Replaces the line with the formatted text (cut to the terminal width). */
void opt_progress_show(opt_progress *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erases the line (before other output, and at the end). */
void opt_progress_clear(opt_progress *pg);

/* ---------- census of a program ---------- */

/* Op counts by type and the bytes of weight-file consts of one program. */
typedef struct opt_census {
  int32_t n_types, cap_types;
  char **types;    /* malloc'ed copies (the program may be freed before printing) */
  int64_t *counts; /* ops of types[i], nested blocks included */
  int64_t ops;     /* all ops */
  uint64_t weight_bytes; /* const tensors the model writer puts in weight.bin */
  int64_t n_weights;
} opt_census;

/* Counts p's ops and weights. spec_version decides which consts go to
 * weight.bin (mil_blob_should_store); 0 = the version the opset of p's
 * first function implies. Returns false on out of memory (c is then
 * partially filled; still free it). */
bool opt_census_take(mil_program *p, int spec_version, opt_census *c);
void opt_census_free(opt_census *c);

/* ---------- summary ---------- */

typedef struct opt_summary {
  const char *in, *out, *pipeline;
  int32_t n_passes_run;     /* pass runs executed */
  int32_t n_skipped;        /* distinct passes left out (--skip-missing) */
  const mil_pipeline_report *rep; /* may be NULL */
  const opt_census *before, *after; /* after may be NULL (pipeline failed) */
  double load_s, pipeline_s, verify_s, save_s, total_s;
  bool saved;
} opt_summary;

/* Prints the summary (about 20 lines) to f. The first line of the op
 * section reads "ops: N before, M after". */
void opt_summary_print(FILE *f, const opt_summary *s);

/* The one-line summary `mil convert`, `mil opt` and `mil compress` print
 * on success (unless --quiet), to f:
 *   "mil: wrote OUT (spec 7, iOS16): 57 ops, 12 weights (1.23 MB) in 0.04 s"
 * ops counts every op (nested blocks included, consts too); weights the
 * const tensors the model writer puts in a weight file. spec_version 0:
 * the one p's opset implies. "-" is shown as standard output. */
void opt_print_written(FILE *f, const char *out, mil_program *p, int spec_version, double seconds);

/* Human-readable byte count ("1.23 GB", "512 B"); returns buf. */
const char *opt_fmt_bytes(uint64_t n, char *buf, size_t len);

#endif

/* libmil: graph passes, their options, and pass pipelines.
 *
 * A pass rewrites a program in place (dead-code elimination, constant
 * folding, conv+batchnorm fusion, ...). Every pass is described by a
 * mil_pass_def: its coremltools name ("common::dead_code_elimination"), a
 * one-line description, its typed options with defaults, and a run function.
 * Pipelines are ordered lists of pass names with per-pass options, created by
 * name ("default", "cleanup", "empty", ...) exactly as coremltools'
 * PassPipeline.
 *
 * Mirrors coremltools/converters/mil/mil/passes/pass_pipeline.py
 * (PassPipeline, PassPipelineManager), graph_pass.py (AbstractGraphPass,
 * PassOption) and pass_registry.py (PASS_REGISTRY). Names of passes, options
 * and pipelines are coremltools' own.
 *
 * Passes that coremltools has but libmil does not implement yet are still
 * known by name (with their options), so a pipeline that names them can be
 * built, printed and edited; running it fails with one error that lists every
 * pass still missing.
 */
#ifndef MIL_PASSES_H
#define MIL_PASSES_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Options                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum mil_pass_opt_type {
  MIL_POPT_BOOL = 0,
  MIL_POPT_INT = 1,
  MIL_POPT_DOUBLE = 2,
  MIL_POPT_STRING = 3,
  /* A list of strings. From text: a JSON array of strings, or one string of
   * comma-separated items as coremltools takes it ("mul,const"). */
  MIL_POPT_STRING_LIST = 4,
  /* A JSON document (e.g. materialize_symbolic_shape_program's
   * function_name_to_materialization_map); the pass parses it. */
  MIL_POPT_JSON = 5,
  /* A predicate on ops (coremltools' `op_selector` callable). Settable only
   * through mil_pass_options_set_selector / mil_pipeline_set_selector, never
   * from text. Unset means "every op". */
  MIL_POPT_SELECTOR = 6,
} mil_pass_opt_type;

/* Short name of an option type ("bool", "int", "double", "string",
 * "string list", "json", "op selector"). Never NULL. */
MIL_API const char *mil_pass_opt_type_name(mil_pass_opt_type t);

/* An op predicate for MIL_POPT_SELECTOR options: true = the pass may touch op. */
typedef bool (*mil_op_selector)(const mil_op *op, void *ud);

/* Declaration of one option of a pass. */
typedef struct mil_pass_option_def {
  const char *name; /* coremltools' name, e.g. "const_threshold" */
  mil_pass_opt_type type;
  /* Default in the text form mil_pass_options_set accepts ("100", "true",
   * "main", "mul,const", "{}"), or NULL for coremltools' None (unset). */
  const char *default_value;
  /* Inclusive bounds checked for INT and DOUBLE values when has_min/has_max. */
  bool has_min, has_max;
  double min, max;
  const char *doc; /* one line */
} mil_pass_option_def;

/* The option values a pass runs with: every declared option, either unset
 * (no default, never set) or set (default or explicit value). Opaque;
 * created by mil_pass_options_new or by the pipeline runner. */
typedef struct mil_pass_options mil_pass_options;

/* ------------------------------------------------------------------------ */
/* Passes                                                                     */
/* ------------------------------------------------------------------------ */

/* What a pass reports back. The pass adds the number of rewrites it made to
 * `changes` (0 = program unchanged). */
typedef struct mil_pass_stats {
  int64_t changes;
} mil_pass_stats;

/* A pass's run function. Rewrites p in place; increments st->changes per
 * rewrite; on failure records a message in d and returns its status (the
 * program may then be partially rewritten). opts is never NULL. */
typedef mil_status (*mil_pass_run_fn)(mil_program *p, const mil_pass_options *opts, mil_pass_stats *st, mil_diag *d);

/* A pass descriptor. Each pass file src/passes/<name>.c exports one
 * `const mil_pass_def pass_def_<name>` and is listed in src/passes/passes.def. */
typedef struct mil_pass_def {
  const char *name; /* "common::dead_code_elimination" */
  const char *doc;  /* one line */
  const mil_pass_option_def *options;
  int32_t n_options;
  mil_pass_run_fn run; /* NULL in catalog entries of passes not implemented */
  /* Op types the pass rewrites or starts its patterns from (NULL-terminated),
   * or NULL. When set and the program holds no op of any of these types
   * (mil_program_count_op_type), the pass cannot change anything:
   * mil_pass_run and mil_pipeline_run return at once without calling run. */
  const char *const *anchors;
} mil_pass_def;

/* Implemented (registered) passes: passes.def order, then the passes added
 * with mil_pass_register. */
MIL_API size_t mil_pass_count(void);
MIL_API const mil_pass_def *mil_pass_at(size_t i);

/* Every pass name libmil knows: the registered passes followed by the
 * coremltools passes not implemented yet (whose run is NULL). For
 * `mil passes` and for validating names in pipelines. */
MIL_API size_t mil_pass_known_count(void);
MIL_API const mil_pass_def *mil_pass_known_at(size_t i);

/* The registered pass called `name` ("common::const_elimination", or
 * "const_elimination" for a pass of the common namespace), or NULL. */
MIL_API const mil_pass_def *mil_pass_find(const char *name);
/* Like mil_pass_find, but also returns the catalog entry of a known pass that
 * is not implemented (run == NULL). NULL when the name is unknown. */
MIL_API const mil_pass_def *mil_pass_lookup(const char *name);
/* True when the pass exists and has a run function. */
MIL_API bool mil_pass_is_implemented(const char *name);

/* Registers a pass defined outside the library (coremltools'
 * register_pass for user passes), e.g. a project-specific rewrite or a test
 * fixture. The descriptor must outlive its registration. Its name must have
 * a namespace ("ns::name") and must not be a registered pass; it may be the
 * name of a known pass that is not implemented, which then counts as
 * implemented. At most 64 passes can be added. Not thread-safe: register
 * before building pipelines. Errors: MIL_ERR_INVALID (no run function, bad
 * or taken name, table full). */
MIL_API mil_status mil_pass_register(const mil_pass_def *pass, mil_diag *d);
/* Removes a pass added by mil_pass_register; false when it was not added. */
MIL_API bool mil_pass_unregister(const char *name);

/* Options of `pass` with every default applied. NULL on out of memory.
 * Free with mil_pass_options_free. */
MIL_API mil_pass_options *mil_pass_options_new(const mil_pass_def *pass);
MIL_API void mil_pass_options_free(mil_pass_options *o);
/* Sets option `key` from text. The text is read as JSON when it parses as
 * JSON, else as a bare string, then converted to the option's type:
 *   bool:   true / false (also "True", "False", 1, 0)
 *   int:    an integral number ("-1", 100)
 *   double: a number, or a string holding one ("1e6"), as coremltools accepts
 *   string: a JSON string, or the bare text
 *   string list: a JSON array of strings, or "a,b,c"
 *   json:   any JSON document
 * "null" unsets the option. Errors: MIL_ERR_NOT_FOUND (the pass has no
 * option `key`; the message lists the ones it has), MIL_ERR_INVALID (value
 * of the wrong type, out of range, or a selector option set from text). */
MIL_API mil_status mil_pass_options_set(mil_pass_options *o, const char *key, const char *value, mil_diag *d);
/* Sets a MIL_POPT_SELECTOR option. Errors: MIL_ERR_NOT_FOUND, MIL_ERR_INVALID
 * (not a selector option). */
MIL_API mil_status mil_pass_options_set_selector(mil_pass_options *o, const char *key, mil_op_selector fn, void *ud,
                                                 mil_diag *d);

/* Typed getters for run functions. `key` must be an option the pass declares
 * with that type (a programming error otherwise, asserted; release builds
 * return 0 / false / NULL). Unset options read as 0 / false / NULL. */
MIL_API bool mil_pass_opt_is_set(const mil_pass_options *o, const char *key);
MIL_API bool mil_pass_opt_bool(const mil_pass_options *o, const char *key);
MIL_API int64_t mil_pass_opt_int(const mil_pass_options *o, const char *key);
MIL_API double mil_pass_opt_double(const mil_pass_options *o, const char *key);
MIL_API const char *mil_pass_opt_string(const mil_pass_options *o, const char *key);
/* The list items (*items may be NULL when the count is 0). */
MIL_API int32_t mil_pass_opt_list(const mil_pass_options *o, const char *key, const char *const **items);
/* True when the string list option holds s. */
MIL_API bool mil_pass_opt_list_has(const mil_pass_options *o, const char *key, const char *s);
/* The JSON text (compact), or NULL when unset. */
MIL_API const char *mil_pass_opt_json(const mil_pass_options *o, const char *key);
/* Applies a selector option to op: true when unset or when the selector
 * accepts op. */
MIL_API bool mil_pass_opt_selects(const mil_pass_options *o, const char *key, const mil_op *op);
/* The option's value as text (the form mil_pass_options_set accepts, "None"
 * when unset; a double as the text or JSON number it was set from). Returns
 * buf. */
MIL_API const char *mil_pass_opt_to_string(const mil_pass_options *o, const char *key, char *buf, size_t n);

/* Runs one registered pass on p with opts (NULL = defaults). *changes (may
 * be NULL) receives the number of rewrites. Errors: MIL_ERR_UNSUPPORTED when
 * the pass is not implemented, otherwise whatever the pass returns. */
MIL_API mil_status mil_pass_run(const mil_pass_def *pass, mil_program *p, const mil_pass_options *opts,
                                int64_t *changes, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Pipelines                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct mil_pipeline mil_pipeline;

/* Names of the predefined pipelines, as coremltools lists them
 * (PassPipeline._PIPELINE_NAME_TO_PASSES) plus "default_pruning" (the
 * DEFAULT_PRUNING property). */
MIL_API size_t mil_pipeline_name_count(void);
MIL_API const char *mil_pipeline_name_at(size_t i);

/* A new pipeline holding a copy of the predefined pipeline `name`
 * (case-insensitive: "default", "DEFAULT", "Cleanup"). "default_palettization"
 * and "default_pruning" come with the compression options coremltools'
 * DEFAULT_PALETTIZATION / DEFAULT_PRUNING set. Errors: MIL_ERR_NOT_FOUND
 * ("there is no pipeline 'x'; available: default, cleanup, ..."),
 * MIL_ERR_NOMEM. Free with mil_pipeline_free. */
MIL_API mil_status mil_pipeline_new(const char *name, mil_pipeline **out, mil_diag *d);
/* A pipeline from a list of pass names (each with or without "common::";
 * stored with the namespace). Errors: MIL_ERR_NOT_FOUND for a name that is
 * not a known pass, MIL_ERR_NOMEM. */
MIL_API mil_status mil_pipeline_new_from_list(const char *name, int32_t n, const char *const *passes,
                                              mil_pipeline **out, mil_diag *d);
MIL_API void mil_pipeline_free(mil_pipeline *pl);

/* The name given at creation ("default", or the caller's name). */
MIL_API const char *mil_pipeline_name(const mil_pipeline *pl);
MIL_API int32_t mil_pipeline_n_passes(const mil_pipeline *pl);
/* Full pass name at index i ("common::..."), or NULL out of range. */
MIL_API const char *mil_pipeline_pass_at(const mil_pipeline *pl, int32_t i);

/* Appends / inserts a known pass (index in 0..n; coremltools' insert_pass).
 * Errors: MIL_ERR_NOT_FOUND (not a known pass), MIL_ERR_INVALID (index out
 * of range), MIL_ERR_NOMEM. */
MIL_API mil_status mil_pipeline_append(mil_pipeline *pl, const char *pass, mil_diag *d);
MIL_API mil_status mil_pipeline_insert(mil_pipeline *pl, int32_t index, const char *pass, mil_diag *d);
/* Removes the pass at index (MIL_ERR_INVALID when out of range). */
MIL_API mil_status mil_pipeline_remove_at(mil_pipeline *pl, int32_t index, mil_diag *d);
/* Removes every occurrence of `pass`; returns how many were removed. */
MIL_API int32_t mil_pipeline_remove_pass(mil_pipeline *pl, const char *pass);

/* Sets option `key` of `pass` (applies to every occurrence of the pass in
 * the pipeline), with the text rules of mil_pass_options_set. The option is
 * checked against the pass's declaration (also for passes not implemented
 * yet). Setting an option twice keeps the last value. Errors:
 * MIL_ERR_NOT_FOUND (unknown pass or option), MIL_ERR_INVALID (bad value),
 * MIL_ERR_NOMEM. */
MIL_API mil_status mil_pipeline_set_option(mil_pipeline *pl, const char *pass, const char *key, const char *value,
                                           mil_diag *d);
/* Sets several options of `pass` from a JSON object text
 * ({"const_threshold": -1}); each member's value goes through the rules
 * above. Errors as mil_pipeline_set_option, MIL_ERR_PARSE for bad JSON. */
MIL_API mil_status mil_pipeline_set_options_json(mil_pipeline *pl, const char *pass, const char *json, mil_diag *d);
/* Sets a selector option of `pass`. */
MIL_API mil_status mil_pipeline_set_selector(mil_pipeline *pl, const char *pass, const char *key, mil_op_selector fn,
                                             void *ud, mil_diag *d);
/* The option values `pass` would run with in this pipeline, or NULL when
 * the pass is unknown or out of memory. Owned by the pipeline (valid until
 * the next change to it). */
MIL_API const mil_pass_options *mil_pipeline_options(mil_pipeline *pl, const char *pass);

/* Checks that the pipeline can run: every pass is implemented (one error
 * listing all missing passes: "pipeline 'default' names 3 passes that are
 * not implemented: common::a, common::b, common::c") and every pass with
 * options set is in the pipeline (coremltools' PassPipeline.validate).
 * Errors: MIL_ERR_UNSUPPORTED (missing passes), MIL_ERR_INVALID. */
MIL_API mil_status mil_pipeline_validate(const mil_pipeline *pl, mil_diag *d);

typedef struct mil_pass_record mil_pass_record;

/* An observer of a pipeline run (what LLVM calls pass instrumentation):
 * mil_pipeline_run calls `before` ahead of each pass and `after` once the
 * pass ran successfully, with its record (time, changes, op counts), for
 * each installed observer in order. Printing the program after a pass
 * (`mil opt --print-after`), verifying it (--verify-each,
 * mil_pass_verifier_observer), progress lines and timing are observers the
 * caller installs: the pass manager itself prints nothing. Either callback
 * may be NULL. `after` may stop the run by returning an error (its message
 * recorded in d, naming the pass); mil_pipeline_run then returns it. */
typedef struct mil_pass_observer {
  void (*before)(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass, mil_program *p,
                 int64_t ops);
  mil_status (*after)(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p, mil_diag *d);
  void *ud;
} mil_pass_observer;

/* Observability settings for mil_pipeline_run. Zero-initialize. */
typedef struct mil_pipeline_run_options {
  const mil_pass_observer *observers; /* n_observers entries, called in order */
  int32_t n_observers;
} mil_pipeline_run_options;

/* The verify-each observer: after every pass mil_program_verify, plus
 * mil_program_validate when the program passed it before the first pass.
 * A failure returns MIL_ERR_INVALID with "the program is invalid after
 * pass 'P' (#i of pipeline 'N')". Zero-initialize the state; it must
 * outlive the run. */
typedef struct mil_pass_verifier {
  bool validate; /* set by the observer before the first pass */
} mil_pass_verifier;
MIL_API mil_pass_observer mil_pass_verifier_observer(mil_pass_verifier *v);

/* One executed pass. */
struct mil_pass_record {
  const char *pass; /* full name (static storage) */
  int32_t index;    /* position in the pipeline */
  double seconds;   /* monotonic wall-clock time of the run function */
  int64_t changes;  /* rewrites the pass reported */
  int64_t ops_before, ops_after; /* mil_program_count_ops around the pass */
  bool skipped;     /* not run: the program held none of the pass's anchor op types */
};

/* What a pipeline run did. Zero-initialize; free with
 * mil_pipeline_report_free. */
typedef struct mil_pipeline_report {
  int32_t n_records;
  mil_pass_record *records; /* malloc'ed, one per executed pass */
  double seconds;           /* total time of the pass run functions */
  double verify_seconds;    /* time spent verifying: left 0 by mil_pipeline_run, for a caller
                             * that times its verify-each observer */
  int64_t ops_before, ops_after;
  int32_t n_changed;        /* records with changes > 0 */
} mil_pipeline_report;
MIL_API void mil_pipeline_report_free(mil_pipeline_report *r);

/* Runs every pass of pl on p in order (coremltools'
 * PassPipelineManager.apply_pipeline). ro and rep may be NULL. The pipeline
 * is validated first (nothing runs when a pass is missing). On a pass error
 * the run stops, d names the pass and its position, and p holds the program
 * as that pass left it; rep covers the passes that ran. Errors:
 * MIL_ERR_UNSUPPORTED (missing passes), MIL_ERR_INVALID (verification failed
 * after a pass), any error of a pass or an observer, MIL_ERR_NOMEM. */
MIL_API mil_status mil_pipeline_run(mil_pipeline *pl, mil_program *p, const mil_pipeline_run_options *ro,
                                    mil_pipeline_report *rep, mil_diag *d);

#ifdef __cplusplus
}
#endif
#endif

/* libmil: the CPU reference interpreter — runs a function of a MIL program
 * on concrete tensors.
 *
 * The interpreter executes ops in program order. Each op first gets its
 * output types from the op registry's type inference (ops.h) on the
 * concrete input types; its outputs are then computed by an interpreter
 * kernel (src/interp/, one file per op family) when there is one, otherwise
 * by the op's value inference (the same code const_elimination folds with),
 * so an op computes the same numbers at compile time and at run time.
 * constexpr_* ops decompress their weights with the registry's
 * decompression kernels.
 *
 * Numerics: fp32 tensors are computed in fp32 (matrix products, linear and
 * convolution through BLAS sgemm; other reductions accumulate in fp32 or
 * double). fp16 tensors are widened to fp32, computed, and rounded to fp16
 * (round to nearest even) at each op's outputs, as Core ML's fp16 path
 * stores every intermediate in half precision. Integer ops wrap like C
 * two's-complement arithmetic; bool is one byte 0/1.
 *
 * Control flow (cond, while_loop), lists (make_list, list_*), states
 * (read_state, coreml_update_state: state values persist across runs in a
 * mil_interp_state the caller holds) and the random ops (deterministic, see
 * mil_interp_set_seed) are supported, and so is every other op of the
 * registry (mil_interp_supports_op); docs/interpreter.md lists the inputs
 * a kernel refuses and why. classify's outputs are a string (or int64)
 * label and a dictionary (mil_interp_output_dict).
 *
 * Mirrors what coremltools does when it predicts with a model through Core
 * ML (coremltools/models/model.py MLModel.predict) and the op semantics of
 * coremltools/converters/mil/mil/ops/defs/.
 *
 * Ownership: the interpreter copies the program when it is created; the
 * program may then change or be freed, but consts that view a memory-mapped
 * weight file (models loaded from .mlpackage / .mlmodel) still read the
 * mapping, so keep the model alive while the interpreter exists. Each run
 * works on a private copy of that program, freed at the end of the run.
 * Inputs are copied; outputs are owned by the interpreter and valid until
 * the next run or mil_interp_free. Across runs the interpreter keeps fp32
 * copies of the fp16 weights it has used and the decompressed outputs of
 * constexpr ops (memory: up to twice the fp16 weights, plus the dense
 * weights of compressed models).
 *
 * Threads. One mil_interp holds one caller's inputs, outputs, seed and
 * default state: use it from one thread at a time (calls on one
 * interpreter must not overlap). mil_interp_fork makes another interpreter
 * of the same function that shares the first one's program copy and
 * caches (read-only weights, fp32 copies, decompressed weights: built once,
 * guarded by a lock) and has its own inputs and outputs; interpreters of
 * one family (created by mil_interp_new and every fork of it) may run at
 * the same time in different threads, and each computes exactly what a
 * lone interpreter would (a server: one fork per worker thread, or a pool
 * of forks). The program given to mil_interp_new and the model that owns
 * its weight mappings must then neither change nor be freed while any run
 * is under way. A mil_interp_state is used by one run at a time. Several
 * interpreters may also be created from one program independently (each
 * with its own copy). The functions without an interpreter argument
 * (mil_interp_supports_op, mil_interp_default_max_value_bytes) may be
 * called from any thread.
 */
#ifndef MIL_INTERP_H
#define MIL_INTERP_H

#include <stdio.h>

#include "ir.h"
#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A dense tensor in libmil's in-memory layout (value.h): row-major, fp16 as
 * uint16_t bit patterns, bool one byte per element. Rank 0 is a scalar
 * (shape may then be NULL). Strings, sub-byte dtypes and complex dtypes are
 * not accepted as interpreter inputs. A string output (classify's class
 * label) is a MIL_DT_STRING tensor whose data is an array of numel
 * `const char *` (nbytes = numel * sizeof(char *)). */
typedef struct mil_tensor {
  mil_dtype dtype;
  int32_t rank;
  const int64_t *shape; /* rank entries, each >= 0 */
  const void *data;     /* numel elements (may be NULL when numel is 0) */
  size_t nbytes;        /* numel * mil_dtype_size(dtype) */
  int64_t numel;        /* product of shape (1 for rank 0) */
} mil_tensor;

typedef struct mil_interp mil_interp;
typedef struct mil_interp_state mil_interp_state;

/* Largest rank the interpreter accepts for inputs and produces. */
#define MIL_INTERP_MAX_RANK 32

/* Creates an interpreter for function `function` of p (NULL: "main", or
 * the only function when there is one). The program is validated first
 * (mil_program_validate; warnings are not reported). On success *out is a
 * new interpreter (release with mil_interp_free).
 * Errors: MIL_ERR_NOT_FOUND (no such function; the message lists the
 * functions), MIL_ERR_INVALID / MIL_ERR_TYPE (the program does not validate;
 * the validator's messages are copied into d), MIL_ERR_NOMEM,
 * MIL_ERR_INVALID for NULL arguments. */
MIL_API mil_status mil_interp_new(const mil_program *p, const char *function, mil_interp **out, mil_diag *d);
/* Frees the interpreter, its inputs and outputs. NULL is allowed. The
 * program copy and caches it shares with its forks are freed with the last
 * interpreter (or state object) of the family. */
MIL_API void mil_interp_free(mil_interp *ip);

/* A new interpreter for the same function as ip that shares ip's program
 * copy and caches (no second copy of the program, weights converted or
 * decompressed once for the whole family) and starts with no inputs set,
 * no outputs, its own default state, and ip's seed, iteration limit and
 * value-size limit. ip and its forks may run concurrently in different
 * threads (see "Threads" above); a state made by any interpreter of the
 * family may be passed to any other (one run at a time). ip is only read;
 * creating forks of one interpreter from several threads at once is
 * allowed as long as ip is not running or being changed at the same time.
 * Release with mil_interp_free (in any order). Errors: MIL_ERR_INVALID
 * (NULL arguments), MIL_ERR_NOMEM. */
MIL_API mil_status mil_interp_fork(const mil_interp *ip, mil_interp **out, mil_diag *d);

/* The function's inputs, in declaration order: name and declared type
 * (tensor types may have symbolic dims; state inputs have a state type and
 * are fed from a mil_interp_state, not with mil_interp_set_input). */
MIL_API int32_t mil_interp_n_inputs(const mil_interp *ip);
MIL_API const char *mil_interp_input_name(const mil_interp *ip, int32_t i);
MIL_API const mil_type *mil_interp_input_type(const mil_interp *ip, int32_t i);
/* The function's outputs (its body block's output vars), in order. */
MIL_API int32_t mil_interp_n_outputs(const mil_interp *ip);
MIL_API const char *mil_interp_output_name(const mil_interp *ip, int32_t i);

/* Sets input `name` to a copy of t. The dtype must equal the declared
 * dtype and the shape must have the declared rank with every constant dim
 * equal (a symbolic dim takes any size; two dims with the same symbol must
 * agree). Errors (messages name the input, what was expected and what was
 * found): MIL_ERR_NOT_FOUND (no input of that name; the message lists the
 * inputs), MIL_ERR_TYPE (dtype, rank or shape mismatch; a state input),
 * MIL_ERR_INVALID (NULL arguments, nbytes/numel inconsistent with shape,
 * rank above MIL_INTERP_MAX_RANK), MIL_ERR_NOMEM. */
MIL_API mil_status mil_interp_set_input(mil_interp *ip, const char *name, const mil_tensor *t, mil_diag *d);
/* Forgets every input set so far (frees their copies): the next run fails
 * naming the first input not set again. A run does not clear its inputs;
 * call this between runs when each run must bring all of its inputs (what
 * a server or libmil's Python predict does). NULL is allowed. */
MIL_API void mil_interp_clear_inputs(mil_interp *ip);

/* Seed of the random ops whose own `seed` input is -1 (the default). Each
 * random op draws from its own generator (xoshiro256**), seeded by
 * splitmix64 from the op's seed when it is >= 0, or else from this seed and
 * the op's name, so a run's random values depend only on the seeds and the
 * program. Default 0. */
MIL_API void mil_interp_set_seed(mil_interp *ip, uint64_t seed);
/* Upper bound on while_loop iterations per run (all loops together), so a
 * loop whose condition never becomes false ends with an error instead of
 * hanging. Default 10,000,000. */
MIL_API void mil_interp_set_max_iterations(mil_interp *ip, int64_t n);
/* Upper bound, in bytes, on any single value the interpreter materializes
 * (an op output: element count x dtype size, sub-byte dtypes packed), so a
 * program whose used values are huge (a fill of shape (2^20, 2^20), a tile
 * by 2^30 that reaches an output) fails with an error before the
 * allocation instead of exhausting memory. Each op's output shape is known
 * from type inference on the concrete inputs before anything is
 * allocated; the element count is checked for overflow first. The bound
 * is per value: the total held at once by the live values of a run is not
 * bounded (it is at most the sum of the live values). Outputs whose shape
 * is only known once computed (non_zero, and the ops that manage their
 * own types: control flow, lists, states, constexpr) are not measured
 * beforehand.
 * n <= 0 restores the default, mil_interp_default_max_value_bytes(); n is
 * capped at MIL_TENSOR_MAX_BYTES (the size rule of every tensor type). */
MIL_API void mil_interp_set_max_value_bytes(mil_interp *ip, int64_t n);
/* The bound in effect for ip (0 for NULL). */
MIL_API int64_t mil_interp_max_value_bytes(const mil_interp *ip);
/* The default bound: half of the machine's physical memory
 * (sysconf(_SC_PHYS_PAGES) x sysconf(_SC_PAGESIZE) / 2), never above
 * MIL_TENSOR_MAX_BYTES (MIL_TENSOR_MAX_BYTES when the memory size is not
 * known). */
MIL_API int64_t mil_interp_default_max_value_bytes(void);

/* Runs the function on the inputs set so far (every input stays set for
 * the next run until set again or mil_interp_clear_inputs). `state` holds the values of
 * the function's state inputs (created by mil_interp_state_new; it is
 * updated by coreml_update_state ops when the run succeeds); it may be NULL,
 * then the interpreter's own state (zero-initialized at creation, kept
 * across runs) is used. On success the outputs are available through
 * mil_interp_output*.
 * Errors (each names the function, the op name and type, and the input
 * concerned): MIL_ERR_INVALID (an input was not set, the state belongs to
 * an interpreter of another family), MIL_ERR_TYPE (an op's type inference failed on the
 * concrete types), MIL_ERR_UNSUPPORTED (an op the interpreter cannot
 * execute; see docs/interpreter.md), MIL_ERR_INVALID (an out-of-range
 * index at run time, the while_loop iteration limit), MIL_ERR_NOMEM (out of
 * memory, or an output larger than mil_interp_set_max_value_bytes allows:
 * the message names the output, its shape and dtype, its size in bytes and
 * the limit). */
MIL_API mil_status mil_interp_run(mil_interp *ip, mil_interp_state *state, mil_diag *d);

/* Profiling (mil run --profile): with on, every later run records the wall
 * time of each op it executes (type inference, kernel or value inference,
 * output allocation), summed per op type and per op name, and the time of
 * the whole run (program copy, inputs and outputs included); turning it on
 * again or off discards what was recorded. Returns MIL_ERR_INVALID for a
 * NULL ip, MIL_ERR_NOMEM when the record cannot be allocated (profiling
 * stays off). Mirrors the per-node profile of ONNX Runtime
 * (SessionOptions.enable_profiling); the numbers are per run, averaged over
 * the profiled runs. */
MIL_API mil_status mil_interp_set_profile(mil_interp *ip, bool on);
/* Writes the profile to f: runs and ms per run, then one line per op type
 * (ops per run, ms per run, us per op, share of the run) slowest first,
 * then the `top` slowest ops other than consts (all when top <= 0) with
 * their type and first output type. Writes nothing when profiling is off or ip is NULL. */
MIL_API void mil_interp_profile_report(const mil_interp *ip, FILE *f, int top);

/* Output `name` (or output i) of the last successful run, or NULL when
 * there is none of that name / no successful run. The tensor and its
 * buffers are owned by the interpreter and valid until the next run or
 * mil_interp_free. */
MIL_API const mil_tensor *mil_interp_output(const mil_interp *ip, const char *name);
MIL_API const mil_tensor *mil_interp_output_at(const mil_interp *ip, int32_t i);

/* A dictionary output: what classify's second output (class label ->
 * probability) holds. Keys are strings (key_dtype MIL_DT_STRING, str_keys)
 * or int64 (MIL_DT_INT64, int_keys), in the order of the op's classes;
 * values[k] belongs to key k. Owned by the interpreter, valid until the
 * next run or mil_interp_free. */
typedef struct mil_interp_dict {
  mil_dtype key_dtype;
  int64_t n;
  const char *const *str_keys; /* n keys, or NULL */
  const int64_t *int_keys;     /* n keys, or NULL */
  const double *values;        /* n values */
} mil_interp_dict;
/* Output i of the last successful run as a dictionary, or NULL when it is
 * not one (or there is no such output / run). mil_interp_output_at gives
 * the same output as an fp64 tensor (n,) of its values. */
MIL_API const mil_interp_dict *mil_interp_output_dict(const mil_interp *ip, int32_t i);
/* True when output i of the last successful run is a class label (the
 * first output of classify: a string or int64 scalar). */
MIL_API bool mil_interp_output_is_label(const mil_interp *ip, int32_t i);
/* A state object for ip's function: one zero-filled tensor per state input
 * (its wrapped tensor type must have a constant shape). Release with
 * mil_interp_state_free. Errors: MIL_ERR_TYPE (a state with a symbolic
 * shape), MIL_ERR_NOMEM. */
MIL_API mil_status mil_interp_state_new(const mil_interp *ip, mil_interp_state **out, mil_diag *d);
MIL_API void mil_interp_state_free(mil_interp_state *s);
/* Current value of state input `name`, or NULL. Owned by s. */
MIL_API const mil_tensor *mil_interp_state_get(const mil_interp_state *s, const char *name);
/* Replaces the value of state input `name` by a copy of t (same dtype and
 * shape as the state). Errors: MIL_ERR_NOT_FOUND, MIL_ERR_TYPE,
 * MIL_ERR_INVALID. */
MIL_API mil_status mil_interp_state_set(mil_interp_state *s, const char *name, const mil_tensor *t, mil_diag *d);

/* Observer of intermediate values: called once for each tensor output of
 * each op the run executes in the function's body block (nested blocks of
 * control flow are not observed; const ops and ops whose outputs nothing
 * needs are not run, so not observed), right after the op computed it, in
 * program order. `op_name`, `op_type` and `var_name` and the tensor t (its
 * shape and data) are valid only during the call; an observer keeps
 * statistics, not the tensor, so a run never holds more than its own live
 * values. It must not call back into the interpreter. */
typedef void (*mil_interp_observer)(void *ud, const char *op_name, const char *op_type, const char *var_name,
                                    const mil_tensor *t);
/* Sets (fn NULL: clears) the observer of the next runs. Used by activation
 * calibration (compress.h mil_calibrator), which mirrors coremltools'
 * ModelDebugger.predict_intermediate_outputs without adding outputs. */
MIL_API void mil_interp_set_observer(mil_interp *ip, mil_interp_observer fn, void *ud);

/* Whether the interpreter can execute ops of `type` for opset version
 * `opset` (ops.h MIL_IOS*): it has a kernel, or the op's value inference
 * computes it; true for every op of the registry in the opsets where it
 * exists. */
MIL_API bool mil_interp_supports_op(const char *type, int opset);

#ifdef __cplusplus
}
#endif
#endif

/* libmil: the MIL program IR (program, function, block, op, var) and its
 * builder API.
 *
 * Mirrors MIL.proto (seed 000) and coremltools' Python IR
 * (coremltools/converters/mil/mil/{program,function,block,operation,var}.py).
 *
 * Ownership: a mil_program owns everything reachable from it (functions,
 * blocks, ops, vars, types, values, interned strings) in one arena; freeing
 * the program frees all of it. Removing an op only unlinks it.
 *
 * Invariants maintained by every function here:
 *  - ops of a block form a doubly linked list (first/last, prev/next);
 *  - each var's use list holds exactly the operand slots and block-output
 *    slots that reference it (op inputs and block outputs alike), so
 *    mil_var_replace_all_uses is O(uses) and mil_var_n_uses is O(1).
 */
#ifndef MIL_IR_H
#define MIL_IR_H

#include "status.h"
#include "types.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mil_function mil_function;
typedef struct mil_block mil_block;
typedef struct mil_op mil_op;
typedef struct mil_var mil_var;
typedef struct mil_use mil_use;

/* A named attribute (MIL.proto map<string, Value>). */
typedef struct mil_attr {
  const char *name; /* interned */
  const mil_value *value;
} mil_attr;

/* One reference to a var: an op operand slot or a block output slot.
 * Exactly one of op / block is set. */
struct mil_use {
  mil_var *var;
  mil_use *prev_use, *next_use; /* links in var->uses */
  mil_op *op;       /* operand slot of this op ... */
  mil_block *block; /* ... or output slot of this block */
};

/* One binding of an op input: a var (by name in proto) or a literal value
 * (proto Argument.Binding.value; used by classify, reshape_like and iOS18
 * constexpr ops). */
typedef struct mil_arg {
  mil_use use;            /* use.var != NULL for a var binding */
  const mil_value *value; /* non-NULL for a literal binding */
} mil_arg;

/* A named input of an op with its bindings, in order. is_tuple marks inputs
 * that take a tuple of vars (variadic/tuple parameters such as
 * concat.values, while_loop.loop_vars), printed as "(%a, %b)" even with a
 * single element. */
typedef struct mil_input {
  const char *name; /* interned */
  int32_t n_args;
  mil_arg *args;
  bool is_tuple;
} mil_input;

/* Compile-time-knowledge marker printed after a var's type: '*' when the
 * value is fully known, '^' when only a symbolic value is known. */
typedef enum mil_mark { MIL_MARK_NONE = 0, MIL_MARK_VALUE = 1, MIL_MARK_SYMBOLIC = 2 } mil_mark;

struct mil_var {
  const char *name; /* interned */
  const mil_type *type;
  mil_op *op;             /* producer; NULL for function / block inputs */
  int32_t out_index;      /* index in op->outputs */
  mil_block *input_of;    /* block that declares this var as input, or NULL */
  mil_function *func_input_of; /* function that declares this var as input, or NULL */
  mil_use *uses;          /* head of the use list */
  int32_t n_uses;
  const mil_value *val;   /* known compile-time value (const ops, value inference) */
  mil_mark mark;          /* marker to print; MIL_MARK_VALUE whenever val != NULL */
  void *aux;              /* scratch for passes; not preserved */
};

struct mil_op {
  /* the fields a walk over ops reads come first, in one cache line */
  const char *type; /* interned op type, e.g. "conv" */
  mil_op *next, *prev;
  mil_block *block; /* containing block; NULL when detached */
  int32_t n_blocks;
  int32_t n_outputs;
  mil_block **blocks;
  mil_var **outputs;
  const char *name; /* interned op name (attribute "name") */
  int32_t n_inputs, cap_inputs;
  mil_input *inputs;
  int32_t cap_outputs;
  int32_t n_attrs;
  mil_attr *attrs; /* attributes other than "name" (const "val" is held in outputs[0]->val) */
  const void *def; /* registry entry, resolved lazily by the op registry */
  uint64_t order;  /* position key within the block; see mil_op_is_before */
  mil_program *program;
  void *aux;       /* scratch for passes; not preserved */
};

struct mil_block {
  const char *name; /* printed block name ("block0", "loop_body_block"); may be NULL */
  mil_op *parent;   /* owning op for nested blocks; NULL for a function body */
  mil_function *func;
  int32_t n_inputs;
  mil_var **inputs;
  int32_t n_outputs;
  mil_use *outputs; /* outputs[i].var */
  mil_op *first, *last;
  int32_t n_ops;
  int32_t n_attrs;
  mil_attr *attrs;
  bool order_dirty; /* op->order values need renumbering */
  mil_program *program;
};

/* One block specialization of a function (MIL.proto
 * Function.block_specializations: opset name -> block). */
typedef struct mil_specialization {
  const char *opset; /* interned, e.g. "CoreML7" */
  mil_block *block;
} mil_specialization;

struct mil_function {
  const char *name;  /* interned */
  const char *opset; /* interned; key of the body specialization */
  int32_t n_inputs;
  mil_var **inputs;
  int32_t n_specs;
  mil_specialization *specs;
  int32_t n_attrs;
  mil_attr *attrs;
  mil_program *program;
};

struct mil_program {
  int64_t version; /* MIL.proto Program.version, 1 */
  const char *doc_string;
  int32_t n_functions;
  mil_function **functions;
  int32_t n_attrs;
  mil_attr *attrs; /* e.g. "buildInfo" */
  struct ir_arena *arena;  /* private */
  struct ir_arena *nodes;  /* private: var and block records */
  struct ir_arena *ops;    /* private: op records (moved by mil_program_compact_ops) */
  int64_t ops_made;        /* private: ops created since the last compaction */
  struct ir_intern *strs;  /* private */
  const mil_allocator *alloc;
  uint64_t next_block_id;  /* for fresh "block<N>" names */
  uint64_t next_symbol_id; /* for fresh "is<N>" symbols */
  /* private: coremltools' Builder.name_count and the names it would have
   * given (mil_program_name_count_next, mil_program_name_intended) */
  struct ir_builder_names *builder_names;
  int64_t n_ops;           /* private: ops reachable from the functions (mil_program_count_ops) */
  struct ir_typecount *typecounts; /* private: the same by op type */
  struct ir_bigheap *big;  /* private: large value buffers (src/core/bigval.c) */
  struct ir_typetab *types; /* private: the shared tensor type records (src/core/type.c) */
  /* Some op output may be marked '*' (MIL_MARK_VALUE) without its value:
   * set by whatever makes one (the text parser, type inference, clone),
   * cleared by the passes' value filling once none is left. Code that sets
   * var->mark by hand must set it too. */
  bool marks_pending;
  struct ir_mappings *mappings; /* private: weight-file mappings its values view (src/core/bigval.c) */
  void *user;              /* free for embedders */
  /* private: capacity of the functions array while it is the one
   * mil_function_new grew (geometric growth: memory linear in the number
   * of functions); code that replaces `functions` needs not update it */
  mil_function **fn_grown;
  int32_t cap_functions;
};

/* ---------- program ---------- */

/* New empty program (version 1). alloc may be NULL for the default
 * allocator. Returns NULL when out of memory. */
MIL_API mil_program *mil_program_new(const mil_allocator *alloc);
/* Frees the program and everything it owns. NULL is allowed. */
MIL_API void mil_program_free(mil_program *p);
/* Deep copy into a new program (views stay views). NULL on out of memory. */
MIL_API mil_program *mil_program_clone(const mil_program *p);
/* Function by name or NULL. */
MIL_API mil_function *mil_program_find_function(const mil_program *p, const char *name);
/* Deep-copies function `src` (of any program, dst's own included) into dst
 * as function `name` (NULL: src's name), appended after dst's functions.
 * Types and strings are re-interned in dst; tensor values that view a
 * weight file stay views of the same bytes (nothing is copied: the caller
 * keeps the file mapped while dst uses them), other values are copied.
 * Returns the new function, or NULL when dst already has a function of that
 * name or memory ran out (dst may then hold unreachable arena garbage, but
 * no partial function). Used by the model utilities (mil/utils.h). */
MIL_API mil_function *mil_program_copy_function(mil_program *dst, const mil_function *src, const char *name);
/* Allocates n zeroed bytes from the program's arena (freed with the program). */
MIL_API void *mil_program_alloc(mil_program *p, size_t n);
/* The index coremltools' Builder._get_free_name gives its next name with
 * the prefix `key` ("<prefix>_<index>"): how many names with that prefix
 * were asked of p before (each call counts one). The count lives in p: it
 * starts at 0 for a program just read or built, as ct.convert starts with
 * Builder.name_count cleared (coremltools/converters/mil/converter.py,
 * _reset_conversion_state), and it never looks at the names p holds.
 * mil_program_clone copies the counts. key must be interned in p (any
 * string naming the prefix; equal keys share a count). Returns -1 when out
 * of memory (the count is then unchanged). */
MIL_API int64_t mil_program_name_count_next(mil_program *p, const char *key);
/* Sets every count back to 0, as for a program just read from a model
 * file: what a program saved and loaded again between two coremltools
 * compression calls starts from (`mil compress` with W8A8 runs
 * linear_quantize_activations' and linear_quantize_weights' stages in one
 * process). The names p holds are kept. NULL is allowed. */
MIL_API void mil_program_name_counts_reset(mil_program *p);
/* Sets the counts as if p had been built by coremltools' builder in the
 * running process (PyMIL's mb.program, whose print is the MIL text form):
 * for every op, var, block input and function input name "<prefix>_<k>"
 * (k a run of decimal digits after the last '_'), the count of prefix
 * becomes at least k + 1, so the next name the builder would give is not
 * one the program already holds. The golden pass corpus shows both
 * behaviours of coremltools: a pass applied to a program built in the
 * same process continues its counts (greater_equal_1 after
 * greater_equal_0), and ct.convert / a model loaded from disk starts from
 * 0 (108_transpose_x_0_1). mil_parse_program calls this; a program read
 * from a model protobuf keeps its counts at 0. Returns false on out of
 * memory (the counts may then be partly set). */
MIL_API bool mil_program_name_counts_seed(mil_program *p);
/* The name coremltools' builder gives can repeat one the program holds;
 * libmil then gives a free name instead (`given`, e.g. "const_40_1") and
 * records the one coremltools gave (`intended`, "const_40"), so that
 * common::dedup_op_and_var_names can settle every repeat as coremltools'
 * pass does, in program order. Both strings must be interned in p.
 * mil_program_name_intended_set returns false on out of memory;
 * mil_program_name_intended returns the name recorded for `given`, or
 * `given` itself; mil_program_name_intended_any tells whether any is
 * recorded; mil_program_name_intended_clear forgets them all (once the
 * dedup has run). mil_program_clone copies them. */
MIL_API bool mil_program_name_intended_set(mil_program *p, const char *given, const char *intended);
MIL_API const char *mil_program_name_intended(const mil_program *p, const char *given);
MIL_API bool mil_program_name_intended_any(const mil_program *p);
MIL_API void mil_program_name_intended_clear(mil_program *p);
/* Interns a string (pointer-equal for equal content). len may be (size_t)-1 for NUL-terminated. */
MIL_API const char *mil_program_intern(mil_program *p, const char *s, size_t len);
/* The interned copy of s when some name/string equal to s exists in the
 * program, else NULL (nothing is added). len as for mil_program_intern. */
MIL_API const char *mil_program_find_string(const mil_program *p, const char *s, size_t len);
/* mil_program_intern that also tells whether the string is new to the
 * program (*added): a name never interned before names nothing yet, which
 * spares a pass making many fresh names a lookup in its own name set.
 * NULL on out of memory. */
MIL_API const char *mil_program_intern_new(mil_program *p, const char *s, size_t len, bool *added);
/* Loads into the cache the slot of the interning table where s (len bytes,
 * or (size_t)-1) is or would go; changes nothing. For a pass about to
 * intern many names in a large program (each lookup a cache miss), a few
 * names ahead. */
MIL_API void mil_program_intern_prefetch(const mil_program *p, const char *s, size_t len);
/* Sets (or replaces) a program attribute. */
MIL_API mil_status mil_program_set_attr(mil_program *p, const char *name, const mil_value *v);
/* Sets (or replaces) attribute `name` of function f (the value is not
 * copied: it must live in f's program). Function attributes carry what
 * coremltools keeps in conversion-time Function fields: "output_types"
 * (update_output_dtypes), "channel_last_image_inputs"
 * (image_input_preprocess), "image_inputs" ... (mil_backend::
 * insert_image_preprocessing_ops). MIL_ERR_NOMEM on allocation failure. */
MIL_API mil_status mil_function_set_attr(mil_function *f, const char *name, const mil_value *v);
/* Attribute `name` of f, or NULL. */
MIL_API const mil_value *mil_function_get_attr(const mil_function *f, const char *name);
/* Total number of ops in all functions, nested blocks included. O(1): the
 * program keeps the count as ops are placed in and detached from blocks
 * that belong to a function. */
MIL_API int64_t mil_program_count_ops(const mil_program *p);
/* Number of ops of the given type (e.g. "conv") in all functions, nested
 * blocks included; O(1), kept like mil_program_count_ops. -1 when the
 * per-type table could not be allocated (treat as "maybe present"). */
MIL_API int64_t mil_program_count_op_type(const mil_program *p, const char *type);
/* Frees the bytes of large values (16 KiB and more) that nothing in the
 * program refers to any more: no var's value, literal argument or
 * attribute of an op, block, function or the program. Values the caller
 * still holds that are not reachable from p must not be used afterwards.
 * With only_if_worthwhile, does nothing unless at least 64 MiB and a
 * quarter of the held bytes were allocated since the last collection, or
 * ops holding 32 MiB of them were detached (mil_pipeline_run calls it so
 * after every pass). Returns the bytes freed.
 * Walks the whole program: O(ops). */
MIL_API size_t mil_program_collect_garbage(mil_program *p, bool only_if_worthwhile);
/* Gives the heap memory the C library holds free back to the system
 * (glibc: malloc_trim; elsewhere nothing). Loading a model frees its
 * decoded protobuf tree in the middle of the heap, which would otherwise
 * stay resident; mil_model_load and mil_pipeline_run call this. */
MIL_API void mil_release_free_memory(void);
/* Registers a read-only file mapping [base, base + len) that values of p
 * view (the model loader registers each weight file). drop(ud) is called
 * when p is freed (the loader passes a reference on the weight file, so the
 * mapping lives as long as the program). MIL_ERR_NOMEM on failure (drop is
 * then called at once). */
MIL_API mil_status mil_program_add_mapping(mil_program *p, const void *base, size_t len, void (*drop)(void *ud),
                                           void *ud);
/* Drops the resident pages of every registered mapping from the process's
 * memory (they are read back from the file when touched again): reading
 * a few bytes of many weights maps in whole neighbourhoods of them. Does
 * nothing when the mappings total less than 256 MiB. mil_pipeline_run
 * calls it after every pass. */
MIL_API void mil_program_release_mappings(mil_program *p);
/* Whether p's weight-file mappings total less than 64 MiB (and at least one
 * is registered): their pages then stay resident once read, and
 * mil_program_release_value_pages does nothing (giving them back only to
 * fault them in again for the next reader costs more than it saves). */
MIL_API bool mil_program_keeps_weight_pages(const mil_program *p);
/* After reading bytes [offset, offset + nbytes) of a file-mapped value:
 * nothing when mil_program_keeps_weight_pages(p); else
 * drops its whole pages (mil_value_release_range) and, for large weight
 * files (256 MiB and more registered), every 64 MiB read the whole
 * mappings, since a read maps in more than the bytes it reads. p is
 * const in spirit: only its release bookkeeping changes. */
MIL_API void mil_program_release_value_pages(const mil_program *p, const mil_value *v, size_t offset, size_t nbytes);
/* Moves every op record into a fresh block of memory in program order
 * (each block's ops in sequence, nested blocks after their op), so that
 * walks over the ops read consecutive memory again after passes have added
 * many ops. Every mil_op pointer the caller holds becomes invalid (vars,
 * blocks and values stay where they are); op->aux is cleared. O(ops).
 * MIL_ERR_NOMEM leaves the program unchanged. The _if_worthwhile form does
 * it only when at least a quarter of the ops were created since the last
 * compaction (mil_pipeline_run calls it between passes). */
MIL_API mil_status mil_program_compact_ops(mil_program *p);
MIL_API mil_status mil_program_compact_ops_if_worthwhile(mil_program *p);
/* Recounts the ops by walking every function (O(ops)); needed only after
 * editing p->functions directly (dropping or replacing a function). */
MIL_API void mil_program_recount_ops(mil_program *p);

/* ---------- types (arena-owned, immutable) ----------
 * Tensor and scalar types are shared: equal arguments give the same record
 * (compare with mil_type_equal all the same; types of other programs are
 * never shared). */

/* Deepest nesting of blocks (a cond or while_loop block inside another's)
 * libmil reads, writes and runs: the text parser, the protobuf reader and
 * writer and the interpreter share it, so whatever libmil writes it reads
 * back. A function body is depth 0. */
#define MIL_MAX_BLOCK_DEPTH 64

/* The largest tensor libmil represents: at most MIL_TENSOR_MAX_ELEMENTS
 * elements and MIL_TENSOR_MAX_BYTES bytes of storage (2^48 each, 256 TiB;
 * far above any Core ML model, far below where int64 sizes overflow). */
#define MIL_TENSOR_MAX_ELEMENTS ((int64_t)1 << 48)
#define MIL_TENSOR_MAX_BYTES ((int64_t)1 << 48)

/* The size rule of every tensor type: the product of the known dims (the
 * element count; symbolic dims left out) and its storage size in bytes for
 * dtype dt must fit in int64 and stay within MIL_TENSOR_MAX_ELEMENTS and
 * MIL_TENSOR_MAX_BYTES.
 * Returns true when the shape obeys it; otherwise false with the reason
 * ("2^90 elements (1073741824 x 1073741824 x 1073741824) exceed ...") in
 * why[0..n) (why may be NULL). rank <= 0 always obeys. */
MIL_API bool mil_tensor_size_ok(mil_dtype dt, int32_t rank, const mil_dim *dims, char *why, size_t n);

/* Tensor type. dims may be NULL when rank <= 0 (rank -1 = unknown rank).
 * NULL when the shape breaks mil_tensor_size_ok (check it first for the
 * reason) or memory runs out. */
MIL_API const mil_type *mil_type_tensor(mil_program *p, mil_dtype dt, int32_t rank, const mil_dim *dims);
/* Tensor type from constant sizes (NULL as for mil_type_tensor). */
MIL_API const mil_type *mil_type_tensor_shape(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape);
MIL_API const mil_type *mil_type_scalar(mil_program *p, mil_dtype dt);
MIL_API const mil_type *mil_type_list(mil_program *p, const mil_type *elem, mil_dim length);
MIL_API const mil_type *mil_type_tuple(mil_program *p, int32_t n, const mil_type *const *elems);
MIL_API const mil_type *mil_type_dict(mil_program *p, const mil_type *key, const mil_type *value);
MIL_API const mil_type *mil_type_state(mil_program *p, const mil_type *wrapped);
MIL_API const mil_type *mil_type_unknown(mil_program *p);
/* Copies a type (possibly from another program) into p. */
MIL_API const mil_type *mil_type_import(mil_program *p, const mil_type *t);
/* A fresh symbolic dim "is<N>" unique within the program. */
MIL_API mil_dim mil_dim_new_symbol(mil_program *p);

/* ---------- functions and blocks ---------- */

/* Appends a function with an empty body block for `opset` (e.g. "CoreML7").
 * NULL on out of memory or a duplicate name. */
MIL_API mil_function *mil_function_new(mil_program *p, const char *name, const char *opset);
/* The body block (the specialization for f->opset). */
MIL_API mil_block *mil_function_body(const mil_function *f);
/* Adds a further block specialization (proto block_specializations entry). */
MIL_API mil_block *mil_function_add_specialization(mil_function *f, const char *opset);
/* Appends a function input var. */
MIL_API mil_var *mil_function_add_input(mil_function *f, const char *name, const mil_type *type);

/* The one rule on function input and output names, which the text and
 * protobuf readers, mil_program_verify and common::dedup_op_and_var_names
 * all apply: two different vars among f's inputs and the outputs of body
 * (f's body block or another of its specializations; NULL: inputs only)
 * may not share a name. The same var listed twice is fine. Any other
 * repeated op or var name is allowed (the pass renames it). This mirrors
 * coremltools' dedup_op_and_var_names, which keeps every function input
 * and output name (they are the model's interface) and raises "Var names
 * ... is used both as function's input and output" when it cannot.
 * Returns true when the rule holds; otherwise false, with *at (may be
 * NULL) the index of the second var of the clash (k < f->n_inputs: input
 * k, else output k - f->n_inputs of body) and the reason ("input 0 and
 * output 0 of function 'main' are two different vars named 'x': ...") in
 * why[0..n) (why may be NULL). */
MIL_API bool mil_function_io_names_ok(const mil_function *f, const mil_block *body, int32_t *at, char *why, size_t n);

/* A new detached nested block (attach with mil_op_add_block). */
MIL_API mil_block *mil_block_new(mil_program *p, const char *name);
/* Appends a block input var (while_loop bodies). */
MIL_API mil_var *mil_block_add_input(mil_block *b, const char *name, const mil_type *type);
/* Replaces the block's outputs (maintains use lists). */
MIL_API mil_status mil_block_set_outputs(mil_block *b, int32_t n, mil_var *const *vars);
/* Replaces output slot i. */
MIL_API void mil_block_set_output(mil_block *b, int32_t i, mil_var *v);
/* Appends op at the end of b / inserts it before or after `anchor` (which
 * must be in a block). The op must be detached. O(1). */
MIL_API void mil_block_append(mil_block *b, mil_op *op);
MIL_API void mil_block_insert_before(mil_op *anchor, mil_op *op);
MIL_API void mil_block_insert_after(mil_op *anchor, mil_op *op);
/* The program that owns b. */
MIL_API mil_program *mil_block_program(const mil_block *b);
/* The innermost op enclosing b's parent chain at the top level of `outer`,
 * or NULL; i.e. whether b is nested (at any depth) inside `outer`. */
MIL_API bool mil_block_is_inside(const mil_block *b, const mil_block *outer);

/* ---------- ops ---------- */

/* A new detached op of `type` named `name` (both copied/interned). */
MIL_API mil_op *mil_op_new(mil_program *p, const char *type, const char *name);
/* Appends input `name` bound to one var (is_tuple false). Returns the input. */
MIL_API mil_input *mil_op_add_input(mil_op *op, const char *name, mil_var *v);
/* Appends input `name` bound to n vars (is_tuple true). */
MIL_API mil_input *mil_op_add_input_tuple(mil_op *op, const char *name, int32_t n, mil_var *const *vars);
/* Appends input `name` bound to a literal value. */
MIL_API mil_input *mil_op_add_input_value(mil_op *op, const char *name, const mil_value *v);
/* Appends an input with n empty arg slots to be filled by mil_arg_set_var / value. */
MIL_API mil_input *mil_op_add_input_slots(mil_op *op, const char *name, int32_t n, bool is_tuple);
MIL_API void mil_arg_set_var(mil_op *op, mil_arg *a, mil_var *v);
/* Input by name or NULL; its first var (or NULL). */
MIL_API mil_input *mil_op_find_input(const mil_op *op, const char *name);
MIL_API mil_var *mil_op_input_var(const mil_op *op, const char *name);
/* Removes input `name` (dropping its uses); no-op when absent. */
MIL_API void mil_op_remove_input(mil_op *op, const char *name);
/* Removes binding j of input `name` (e.g. one var of a tuple input),
 * keeping the order of the others. No-op when absent. */
MIL_API void mil_op_remove_arg(mil_op *op, const char *name, int32_t j);
/* Removes output i of op, which must have no uses (MIL_ERR_INVALID
 * otherwise); later outputs shift down and their out_index follows. */
MIL_API mil_status mil_op_remove_output(mil_op *op, int32_t i);
/* Removes block input i, which must have no uses (MIL_ERR_INVALID otherwise). */
MIL_API mil_status mil_block_remove_input(mil_block *b, int32_t i);
/* Rebinds input `name` to v (single binding), adding the input if absent. */
MIL_API void mil_op_set_input(mil_op *op, const char *name, mil_var *v);
/* Appends an output var. */
MIL_API mil_var *mil_op_add_output(mil_op *op, const char *name, const mil_type *type);
/* Attaches a detached nested block. */
MIL_API void mil_op_add_block(mil_op *op, mil_block *b);
/* Sets (or replaces) attribute `name`. */
MIL_API void mil_op_set_attr(mil_op *op, const char *name, const mil_value *v);
MIL_API const mil_value *mil_op_get_attr(const mil_op *op, const char *name);
/* Unlinks op from its block and drops all its operand uses (nested blocks'
 * uses too). Its outputs must have no remaining uses outside the op itself;
 * otherwise returns MIL_ERR_INVALID and changes nothing. */
MIL_API mil_status mil_op_remove(mil_op *op);
/* Unlinks op from its block without touching uses (for moving it). */
MIL_API void mil_op_detach(mil_op *op);
/* True when a and b are in the same block and a comes first. Amortized O(1). */
MIL_API bool mil_op_is_before(const mil_op *a, const mil_op *b);
MIL_API mil_program *mil_op_program(const mil_op *op);

/* Builds a const op named `name` with output var `name` holding v.
 * The op is detached. */
MIL_API mil_op *mil_const_new(mil_program *p, const char *name, const mil_value *v);
static inline bool mil_op_is_const(const mil_op *op) { return op && op->type && op->type[0] == 'c' && op->type[1] == 'o' && op->type[2] == 'n' && op->type[3] == 's' && op->type[4] == 't' && op->type[5] == 0; }

/* ---------- vars ---------- */

/* Redirects every use of `old` (op operands and block outputs) to `new_var`.
 * O(number of uses). */
MIL_API void mil_var_replace_all_uses(mil_var *old, mil_var *new_var);
/* Like mil_var_replace_all_uses, but only uses by ops that come after `after`
 * in the same block (and anything nested in them), and block outputs of that
 * block and enclosing-level nested blocks after it. */
MIL_API void mil_var_replace_uses_after(mil_var *old, mil_var *new_var, const mil_op *after);
static inline int32_t mil_var_n_uses(const mil_var *v) { return v->n_uses; }
static inline bool mil_var_is_const(const mil_var *v) { return v->val != NULL; }
/* True when some block lists v among its outputs. */
MIL_API bool mil_var_is_block_output(const mil_var *v);
/* Sets the known value (and the '*' mark); NULL clears both. */
MIL_API void mil_var_set_value(mil_var *v, const mil_value *val);

/* ---------- iteration ---------- */

/* Calls fn(op, ud) for every op of b, nested blocks included (pre-order:
 * an op before the ops of its nested blocks). Safe against removal of the
 * visited op. Stops early and returns the first non-zero result. */
typedef int (*mil_op_visit_fn)(mil_op *op, void *ud);
MIL_API int mil_block_walk(mil_block *b, mil_op_visit_fn fn, void *ud);
MIL_API int mil_program_walk(mil_program *p, mil_op_visit_fn fn, void *ud);

/* ---------- verification ---------- */

/* Structural verifier: SSA (each name defined once per scope), definitions
 * before uses, nested-block scoping, block outputs defined, use lists
 * consistent, the function body specialization present, outputs consistent
 * across specializations. Names that are not MIL identifiers
 * ([A-Za-z_][A-Za-z0-9_@]*) are warnings. Messages read
 * "function 'main': op 'conv_3' (conv): input 'x' uses %a before its definition".
 * Returns MIL_OK when there are no errors, MIL_ERR_INVALID otherwise. */
MIL_API mil_status mil_program_verify(const mil_program *p, mil_diag *d);

#ifdef __cplusplus
}
#endif
#endif

/* Helpers shared by the fusion passes (conv / linear weight folding,
 * activation and elementwise pattern fusions): coremltools' per-block
 * "fuse until nothing changes" driver, numpy-style float rounding for
 * folded weights, and building ops that copy another op's inputs.
 *
 * Mirrors the loop shape every pass of coremltools'
 * passes/defs/optimize_{conv,linear,activation,elementwise_binary}.py uses:
 *
 *   for f in prog.functions.values():
 *       block_changed = True
 *       while block_changed:
 *           block_changed = self._fuse_block(f)
 *
 * where _fuse_block walks a snapshot of the block's ops, skips ops removed
 * meanwhile, first fuses every nested block of an op to its own fixed
 * point, and then tries the pattern at the op. The sweeps here (in
 * fuse_walk.c) keep that order but only snapshot the ops a pass can
 * rewrite at, found by comparing op->type with interned strings, so a
 * sweep costs one load of each op plus the pattern checks at those.
 */
#ifndef MIL_FUSE_UTIL_INTERNAL_H
#define MIL_FUSE_UTIL_INTERNAL_H

#include "passes/pass_internal.h"

/* The state a fusion callback gets: the program, a lazily built name set,
 * the constexpr tracking of Var.can_be_replaced_by_var, and the pass name
 * for messages. Zero-initialize, set p / d / pass, free with
 * pass_fuse_ctx_free.
 *
 * lazy_names defers collecting the name set until a fresh name's first
 * candidate "<prefix>_0" is a string the program already holds (a string
 * it never interned names nothing), keeping the names the set would have
 * received meanwhile in `noted` (from the first op built on, when it
 * would have been collected: names_due); the names handed out are the
 * same. A fresh name "<prefix>_<k>" is found without the set as long as
 * the names before it were noted and it is a string the program never
 * interned. A
 * pass may set it when it names and builds ops only with pass_fuse_new_op
 * / pass_fuse_const / pass_fuse_finish and removes ops only with
 * pass_fuse_replace_and_remove (or pass_fuse_rollback for ops it built). */
typedef struct pass_fuse_ctx {
  mil_program *p;
  mil_diag *d;
  const char *pass; /* "fuse_conv_bias" (for messages) */
  pass_names *names;
  pass_nonrep *nonrep;
  void *ud; /* the pass's own state */
  bool lazy_names;
  const char **noted; /* interned names taken since the run started (lazy_names, set not built) */
  int32_t n_noted, cap_noted;
  pass_ptrset noted_set;  /* the same names, for lookups */
  bool names_due;         /* an op was built: the set would have been collected */
  int8_t constexpr_state; /* 0 not known, 1 the program holds no constexpr_* op, 2 it may */
} pass_fuse_ctx;

void pass_fuse_ctx_free(pass_fuse_ctx *c);
/* The name set / constexpr tracking, built on first use. NULL on out of
 * memory (an error is recorded in c->d). */
pass_names *pass_fuse_names(pass_fuse_ctx *c);
pass_nonrep *pass_fuse_nonrep(pass_fuse_ctx *c);
/* pass_nonrep_has(pass_fuse_nonrep(c), v) without building the tracking
 * while the program can hold no constexpr_* op (every set is empty then):
 * 1 or 0, -(status) on out of memory (recorded in c->d). */
int pass_fuse_nonrep_has(pass_fuse_ctx *c, const mil_var *v);

/* A pattern callback: tries the pattern rooted at op (an op without nested
 * blocks unless the driver was asked to visit those too). Returns 1 when it
 * rewrote, 0 when not, -(mil_status) on error (recorded in c->d). */
typedef int (*pass_fuse_fn)(pass_fuse_ctx *c, mil_op *op);

/* Runs fn over every function body and specialization of c->p the way
 * coremltools' fusion passes do (see the top of this file). repeat=false
 * makes a single sweep per block (passes without the while loop); nested
 * blocks are then visited once too. visit_block_ops=true also offers ops
 * that own nested blocks to fn. Adds the rewrites to st->changes. Errors:
 * those of fn, MIL_ERR_UNSUPPORTED for nesting deeper than PASS_MAX_DEPTH,
 * MIL_ERR_NOMEM. Each sweep is linear in the block size; sweeps repeat
 * while they rewrite (at most 100000 per block, a guard against a pattern
 * that keeps re-creating itself). */
mil_status pass_fuse_run(pass_fuse_ctx *c, pass_fuse_fn fn, bool repeat, bool visit_block_ops, mil_pass_stats *st);
/* The same offering fn only the ops whose type is one of `types`
 * (NULL-terminated; NULL = every op). Exactly pass_fuse_run's
 * result when fn returns 0 without side effects at the other ops; cheaper
 * since the sweeps compare op->type with the program's interned strings
 * and only snapshot the ops offered (and those owning nested blocks).
 * `required` (NULL-terminated or NULL) lists types fn cannot rewrite
 * without (e.g. every op type of its pattern): a sweep starting while one
 * of them has no op does nothing. Returns at once when the program holds
 * no op of the offered types or misses a required one. */
mil_status pass_fuse_run_types(pass_fuse_ctx *c, pass_fuse_fn fn, bool repeat, bool visit_block_ops,
                               const char *const *types, const char *const *required, mil_pass_stats *st);

/* The same sweeps for any pass state: fn(ud, op) returns rewrites (> 0), 0,
 * or -(status) after recording the error. */
typedef int (*pass_walk_fn)(void *ud, mil_op *op);
typedef enum pass_walk_nested {
  PASS_WALK_NESTED_SKIP,    /* nested blocks are not visited */
  PASS_WALK_NESTED_ONCE,    /* one sweep of each nested block as its op is reached */
  PASS_WALK_NESTED_FIXPOINT /* nested blocks swept until a sweep rewrites nothing */
} pass_walk_nested;
typedef struct pass_walk_spec {
  const char *pass;         /* for messages */
  const char *const *types; /* offered op types as for pass_fuse_run_types */
  bool repeat;              /* function bodies swept until a sweep rewrites nothing */
  pass_walk_nested nested;
  bool visit_block_ops; /* ops owning nested blocks are offered too (after their blocks) */
  const char *const *required; /* as for pass_fuse_run_types */
} pass_walk_spec;
/* pass_fuse_run_types for other states (pass_fuse_run is repeat /
 * FIXPOINT or !repeat / ONCE; tensor_pass_internal.h's pass_t_run and
 * pass_build's pass_bld_walk are the other combinations with
 * visit_block_ops). Adds the rewrites to *changes. */
mil_status pass_walk_run(mil_program *p, mil_diag *d, const pass_walk_spec *s, pass_walk_fn fn, void *ud,
                         int64_t *changes);

/* ---------- uses ---------- */

/* True when v is among b's outputs (coremltools' `v in block.outputs`). */
bool pass_fuse_is_output_of(const mil_var *v, const mil_block *b);
/* coremltools' _check_child_op_type: op has one output, bound exactly once
 * by an op (block outputs not counted), and that op has type `type`.
 * Returns the child or NULL. */
mil_op *pass_fuse_child_of_type(const mil_op *op, const char *type);
/* The var bound to input `name` of op (first binding), or NULL. */
static inline mil_var *pass_fuse_in(const mil_op *op, const char *name) { return mil_op_input_var(op, name); }
/* v's value, or NULL (the '.val' of coremltools' Var). */
static inline const mil_value *pass_fuse_val(const mil_var *v) { return v ? v->val : NULL; }
/* Rank of v's tensor type, or -1 when unknown / not a tensor. */
int32_t pass_fuse_rank(const mil_var *v);

/* ---------- numpy-style arithmetic on float elements ---------- */

/* x rounded to dtype dt as numpy stores it (fp16 / bf16 / fp32 round to
 * nearest even; fp64 and every other dtype: x unchanged). Computing a
 * binary operation or a square root on fp16/fp32 operands in double and
 * rounding the result with this gives numpy's result bit for bit. */
double pass_np_round(double x, mil_dtype dt);
/* The float dtype numpy gives an operation on arrays/numpy scalars of
 * float dtypes a and b (the wider one; a non-float operand counts as
 * fp64, as numpy's int -> float64 promotion). */
mil_dtype pass_np_promote(mil_dtype a, mil_dtype b);
/* True for the dtypes numpy arithmetic covers here (fp16, fp32, fp64). */
bool pass_np_is_float(mil_dtype dt);

/* A new tensor value of dtype dt with v's shape (or `shape` when non-NULL)
 * and its scalar flag, elements from vals (double, rounded with
 * mil_value_set_f64). NULL on out of memory. */
mil_value *pass_fuse_value_from(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool is_scalar,
                                const double *vals, int64_t n);
/* The elements of a numeric tensor value as doubles (malloc'ed; free()).
 * NULL on out of memory or when v is not a numeric tensor. */
double *pass_fuse_values(const mil_value *v);

/* A numpy array (or numpy / Python scalar) of float elements held as
 * doubles: just enough of numpy for weight folding. Elements are kept
 * rounded to dt. */
#define PASS_NP_MAX_RANK 16
typedef struct pass_np {
  mil_dtype dt;   /* fp16, fp32 or fp64 (ints are read as fp64 values with their dtype kept) */
  bool is_scalar; /* a numpy scalar (value of a (Scalar) var), not an ndarray */
  bool weak;      /* a Python number (from .tolist()): takes the other operand's dtype */
  int32_t rank;
  int64_t shape[PASS_NP_MAX_RANK];
  int64_t n;
  double *v; /* malloc'ed, n elements (at least one slot) */
} pass_np;

/* Reads a numeric tensor value (not bool, string or complex). false when v
 * is not one, its rank exceeds PASS_NP_MAX_RANK, or out of memory (*nomem
 * set then; nomem may be NULL). */
bool pass_np_from_value(pass_np *a, const mil_value *v, bool *nomem);
/* An array of dtype dt and shape (rank dims) filled with x. false on out
 * of memory. */
bool pass_np_full(pass_np *a, mil_dtype dt, int32_t rank, const int64_t *shape, double x);
void pass_np_free(pass_np *a);
/* np.squeeze: drops every dimension of size 1. */
void pass_np_squeeze(pass_np *a);
/* The dtype of a binary arithmetic result (NEP 50: a weak operand takes
 * the other's dtype; otherwise pass_np_promote; int with int stays the
 * left dtype). */
mil_dtype pass_np_result_dtype(const pass_np *a, const pass_np *b);
/* out = a <op> b with numpy broadcasting, op one of + - * /. Returns 1, 0
 * when the shapes do not broadcast, -1 on out of memory. out must not alias
 * a or b. */
int pass_np_binary(pass_np *out, const pass_np *a, const pass_np *b, char op);
/* A tensor value of dtype dt (elements rounded to it) with a's shape. NULL
 * on out of memory. */
mil_value *pass_np_to_value(mil_program *p, const pass_np *a, mil_dtype dt);
/* True when shapes are equal. */
bool pass_np_same_shape(const pass_np *a, const pass_np *b);

/* ---------- weight arithmetic at memory speed (fuse_weight.c) ---------- */

/* How the elements of a weight (row-major) map to the output channels a
 * fusion scales them by: n_runs runs of `run` consecutive elements, run r
 * belonging to one channel. For a conv weight (Cout, Cin/groups, *K) the
 * channel is the first index (run r = channel r); for a conv_transpose
 * weight (Cin, Cout/groups, *K) it is the row of coremltools' transpose to
 * (Cout/groups, Cin, *K) reshaped (plainly) to (Cout, Cin/groups, *K):
 * the K elements at (a, b) belong to channel b * groups + a / (Cin/groups). */
typedef struct pass_wrows {
  int64_t n;      /* elements */
  int64_t cout;   /* channels */
  int64_t run;    /* elements per run */
  int64_t n_runs; /* n / run (0 when n is 0) */
  bool deconv;
  int64_t bdim, groups, cpg; /* conv_transpose: Cout/groups, groups, Cin/groups */
} pass_wrows;
/* The layout of a conv (deconv false) or conv_transpose weight of static
 * type t (rank >= 3). false when the rank is below 3, a dim is unknown,
 * groups <= 0, or (conv_transpose) Cin is not divisible by groups. */
bool pass_wrows_conv(const mil_type *t, bool deconv, int64_t groups, pass_wrows *L);
/* One run of all n elements (a scalar factor). */
void pass_wrows_all(int64_t n, pass_wrows *L);

/* Whether w is a weight the fusions compute on (what pass_np_from_value
 * reads): a numeric tensor value (not bool, string or complex) of rank 0 to
 * PASS_NP_MAX_RANK. */
bool pass_weight_numeric(const mil_value *w);
/* numpy's `(w * f[channel]).astype(w.dtype)` for every element of weight
 * w (a numeric tensor value with L->n elements): each product computed in
 * dtype dt (fp16, fp32 or fp64: numpy's promotion of w's dtype with the
 * factor's) and rounded to w's dtype. f holds L->cout factors, each
 * already a value of dtype dt. The result is a new value of w's dtype and
 * shape (fp64 weights give fp32, as mb.const stores them). For fp32 and
 * fp16 weights it is a deferred value (mil_value_new_deferred_scale): O(1)
 * now, the vector loops run when it is read; other dtypes are computed
 * element by element. NULL on out of memory, or when w is not a numeric
 * tensor of L->n elements. */
mil_value *pass_weight_scale(mil_program *p, const mil_value *w, const pass_wrows *L, const double *f, mil_dtype dt);
/* numpy's -w as a new value (sign bits flipped for fp32 / fp16; fp64
 * gives fp32). NULL on out of memory or when w is not numeric. */
mil_value *pass_weight_negate(mil_program *p, const mil_value *w);
/* The value a new const for weight w holds when w is passed on unchanged:
 * w itself (values are immutable, so the const shares it: no copy), or
 * for fp64 its fp32 rounding. NULL on out of memory or when w is not
 * numeric. */
const mil_value *pass_weight_as_const(mil_program *p, const mil_value *w);

/* ---------- coremltools' generic pattern matcher ---------- */

/* A pattern in the form of coremltools'
 * experimental/passes/generic_pass_infrastructure.py: a program with one
 * root var, described by the child-op lists of its root var and of every
 * op's (single) output. children[] list pattern op indices, one entry per
 * binding, in the order the pattern program created them. An op without
 * children is the final op. */
#define PASS_PAT_MAX_OPS 16
#define PASS_PAT_MAX_CHILDREN 4
#define PASS_PAT_MAX_SET 64
typedef struct pass_pat_op {
  const char *name; /* attribute name in the pattern ("mul_1") */
  const char *type; /* op type */
  int n_children;
  int children[PASS_PAT_MAX_CHILDREN];
} pass_pat_op;
typedef struct pass_pattern {
  int n_ops;
  const pass_pat_op *ops;
  int n_root;
  int root[PASS_PAT_MAX_CHILDREN];
} pass_pattern;
/* What a detection captured (coremltools' Pattern object). */
typedef struct pass_pat_match {
  mil_var *root;
  mil_block *block;
  mil_op *op[PASS_PAT_MAX_OPS]; /* per pattern op, the program op recorded last */
  mil_op *final;
  mil_op *set[PASS_PAT_MAX_SET]; /* op_set (every program op recorded) */
  int n_set;
  bool overflow;
} pass_pat_match;
/* A pattern prepared for one program: its op types as the program's
 * interned strings, the distinct types of the root's children (the only
 * ops _detect_pattern can succeed at, as each consumes the root) and the
 * distinct types of the pattern, NULL-terminated, for pass_fuse_run_types'
 * offered and required types. */
typedef struct pass_pat_prep {
  const pass_pattern *pat;
  const char *type[PASS_PAT_MAX_OPS];
  const char *root_types[PASS_PAT_MAX_CHILDREN + 1];
  const char *all_types[PASS_PAT_MAX_OPS + 1];
} pass_pat_prep;
/* Fills pp; false when some op type of the pattern has no op in p (the
 * pattern cannot match, so a sweep cannot rewrite anything). */
bool pass_pat_prepare(pass_pat_prep *pp, const pass_pattern *pat, mil_program *p);
/* The run of a pattern pass: fills marked values, then for each of the n
 * patterns in turn (skipping those whose op types are absent) sweeps the
 * program until fn rewrites nothing (pass_fuse_run_types, nested blocks
 * visited, lazy naming), with c.ud pointing at the prepared pattern. */
mil_status pass_pat_run(mil_program *p, mil_diag *d, const char *pass, const pass_pattern *const *patterns, int n,
                        pass_fuse_fn fn, mil_pass_stats *st);
/* coremltools' _detect_pattern(op): tries each input var of op (flattened,
 * in input order) as the root and returns true with m filled for the first
 * one whose child structure matches the pattern and whose non-final ops
 * feed no output of op's block. Matched ops must all lie in op's block. */
bool pass_pat_detect(const pass_pattern *pat, mil_op *op, pass_pat_match *m);
/* The same with the pattern prepared once per run (pass_pat_prepare). */
bool pass_pat_detect_prep(const pass_pat_prep *pp, mil_op *op, pass_pat_match *m);

/* ---------- building ops ---------- */

/* A new op of `type` named `name` inserted before anchor (name NULL: a
 * fresh "<type>_<k>", as coremltools' builder names an op built without a
 * name). The name is recorded in the name set. NULL on out of memory. */
mil_op *pass_fuse_new_op(pass_fuse_ctx *c, mil_op *anchor, const char *type, const char *name);
/* Binds on dst every input of src except those named in skip (n_skip
 * names), in src's order, with the same bindings (vars, tuples, literal
 * values). */
void pass_fuse_copy_inputs(mil_op *dst, const mil_op *src, const char *const *skip, int n_skip);
/* A const holding v before anchor, named "<op_name>_<input>_<k>" (what the
 * builder names a const it makes for a Python value given to input `input`
 * of op `op_name`), or "const_<k>" when input is NULL (mb.const without a
 * name). NULL on out of memory (recorded). */
mil_var *pass_fuse_const(pass_fuse_ctx *c, mil_op *anchor, const char *op_name, const char *input,
                         const mil_value *v);
/* A rank-1 int32 tensor value holding v[0..n-1] (a Python tuple of ints
 * given to the builder). NULL on out of memory. */
mil_value *pass_fuse_ints(mil_program *p, int32_t n, const int64_t *v);
/* Finishes a built op (defaults, input order, inference; pass_finish_op),
 * records its output names, and notes it in the constexpr tracking.
 * Returns MIL_OK, or the inference status: MIL_ERR_NOMEM is recorded in
 * c->d as an error; other failures (an op that does not type-check) are
 * recorded as a warning so the caller can roll back and leave the pattern
 * alone. */
mil_status pass_fuse_finish(pass_fuse_ctx *c, mil_op *op);

/* Everything inserted before `anchor` since `mark` (= anchor->prev when the
 * building started, NULL at the block start) is removed again, last first
 * (a failed rewrite leaves no trace). */
void pass_fuse_rollback(mil_op *anchor, mil_op *mark);

/* Ends a one-op rewrite: finishes m (built before op since mark, as for
 * pass_fuse_rollback) and, when it infers op's output type, replaces op's
 * output by m's and removes op (returns 1); otherwise, or when the
 * replacement is refused, rolls everything back (returns 0). -(status) on
 * out of memory. */
int pass_fuse_replace_one(pass_fuse_ctx *c, mil_op *op, mil_op *m, mil_op *mark);

/* Folds conv -> child into one op: consts for the new weight and bias
 * values (named "<name>_weight" / "<name>_bias" when name_consts, else
 * fresh names), then an op of conv's type named `name` with them and
 * conv's other inputs, all before conv. When it infers child's output type
 * it replaces child's output and removes conv and child (returns 1);
 * otherwise, or when refused, everything is rolled back (0). -(status) on
 * out of memory. */
int pass_fuse_conv_replace(pass_fuse_ctx *c, mil_op *conv, mil_op *child, const char *name, bool name_consts,
                           mil_value *wv, mil_value *bv);

/* coremltools' Block.try_replace_uses_of_var_after_op followed by
 * remove_ops: when old may be replaced by new_var (constexpr rule), its
 * uses after anchor go to new_var and the ops are removed; returns 1. When
 * the replacement is refused returns 0 and changes nothing. -(status) on
 * error. */
int pass_fuse_replace_and_remove(pass_fuse_ctx *c, mil_op *anchor, mil_var *old, mil_var *new_var,
                                 mil_op *const *remove, int32_t n_remove);

/* The shared tail of the gelu fusions: gelu(x=root, mode=<mode const
 * "<out>_mode_0">) named after the output of ops[n-1], inserted before
 * `before`, replaces that output (uses after ops[n-1]) and ops[0..n-1] are
 * removed. Returns 1, 0 when refused (nothing changed), -(status). */
int pass_fuse_gelu(pass_fuse_ctx *c, mil_var *root, const char *mode, mil_op *before, mil_op *const *ops, int n);

#endif

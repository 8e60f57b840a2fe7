/* Internal table of contents of src/ops: the inference context and the
 * helpers every op family uses. One file per coremltools defs file
 * (conv.c, elementwise_binary.c, ...); each exports one table
 *   const mil_op_def op_defs_<family>[]; const size_t op_defs_<family>_count;
 * listed in families.def. */
#ifndef MIL_OPS_INTERNAL_H
#define MIL_OPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "mil/ops.h"

#if defined(__GNUC__)
#define OP_HIDDEN __attribute__((visibility("hidden")))
#define OP_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define OP_HIDDEN
#define OP_ALWAYS_INLINE inline
#endif

#define OP_MAX_RANK 64

/* Most spec inputs of a variant the binding map below covers (variants
 * with more are checked and read by name). */
#define OP_MAX_SPEC 64

struct op_tmp_pool;

struct mil_infer_ctx {
  mil_op *op;
  const mil_op_def *def;
  mil_program *prog;
  int opset;            /* spec version of the enclosing function */
  const char *func;     /* enclosing function's name (for messages) */
  mil_diag *diag;
  int32_t n_out;        /* number of outputs to produce (op->n_outputs, or def->n_outputs) */
  const mil_type **out; /* out[i]: inferred type of output i (infer fills) */
  const mil_value **val;/* val[i]: folded value of output i (fold fills; may stay NULL) */
  mil_mark *mark;       /* mark[i]: MIL_MARK_SYMBOLIC for symbolic values (e.g. shape of is0) */
  int tnext;
  /* The binding map, set by the inference driver's input checks: when
   * `mapped`, every input of op is named like some spec input and in_of[j]
   * is the first input of op named like spec input j (NULL when none). A
   * zeroed context has no map. */
  bool mapped;
  struct op_tmp_pool *pool; /* scratch blocks for op_tmp_alloc, or NULL */
  mil_input *in_of[OP_MAX_SPEC];
  char tbuf[4][256];    /* ring of buffers for op_tstr */
};

/* Equal C strings. Inline: the names compared here are a few characters
 * long, shorter than the setup of a library strcmp. */
static inline bool op_str_eq(const char *a, const char *b) {
  if (a == b) return true;
  for (;; a++, b++) {
    if (*a != *b) return false;
    if (!*a) return true;
  }
}

/* Declares a family table: in conv.c, OP_FAMILY(conv) = { {...}, ... }; */
#define OP_FAMILY_DECL(fam)                          \
  extern const mil_op_def op_defs_##fam[];           \
  extern const size_t op_defs_##fam##_count;
#define OP_FAMILY_COUNT(fam) const size_t op_defs_##fam##_count = sizeof op_defs_##fam / sizeof op_defs_##fam[0]

/* Convenience for input specs:
 *   IN_T("x", MIL_DTS_FLOAT, "T")                 tensor input with type var T
 *   IN_TC("axes", MIL_DTS_INT32, NULL, OPT, "None")  const tensor, optional */
#define IN_SPEC(nm, kinds, dts, tv, flags, dflt) {nm, kinds, dts, tv, flags, dflt}

/* ---- inputs ---- */
/* First var bound to input `name`, or NULL when absent/literal. */
OP_HIDDEN mil_var *op_in(const mil_infer_ctx *c, const char *name);
/* The mil_input, or NULL. */
OP_HIDDEN mil_input *op_input(const mil_infer_ctx *c, const char *name);
OP_HIDDEN bool op_has(const mil_infer_ctx *c, const char *name);
/* Known value of input `name` (const var value or literal binding), or NULL. */
OP_HIDDEN const mil_value *op_val(const mil_infer_ctx *c, const char *name);
/* Type of input `name` (NULL when absent). */
OP_HIDDEN const mil_type *op_type(const mil_infer_ctx *c, const char *name);
/* Known scalar/1-element value as int / double / bool / string; `dflt` when
 * absent or unknown. */
OP_HIDDEN int64_t op_int(const mil_infer_ctx *c, const char *name, int64_t dflt);
OP_HIDDEN double op_f64(const mil_infer_ctx *c, const char *name, double dflt);
OP_HIDDEN bool op_bool(const mil_infer_ctx *c, const char *name, bool dflt);
OP_HIDDEN const char *op_str(const mil_infer_ctx *c, const char *name, const char *dflt);
/* Known int vector value of input `name` into out[max]; returns the count,
 * or -1 when unknown / absent / longer than max. */
OP_HIDDEN int op_ints(const mil_infer_ctx *c, const char *name, int64_t *out, int max);

/* True when v's value is known at compile time or computed only from
 * consts / constexpr ops (coremltools' Var.is_descendant_of_const). */
OP_HIDDEN bool op_is_const_descendant(const mil_var *v);

/* ---- errors ---- */
/* Records "function 'f': op 'n' (type): <msg>" and returns MIL_ERR_TYPE. */
OP_HIDDEN mil_status op_fail(mil_infer_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A type as text for messages (ring buffer in c, valid for 4 calls). */
OP_HIDDEN const char *op_tstr(mil_infer_ctx *c, const mil_type *t);

/* ---- building types ---- */
OP_HIDDEN mil_dim op_dim(int64_t size);
/* A fresh symbolic dim (coremltools' get_new_symbol). */
OP_HIDDEN mil_dim op_dim_sym(mil_infer_ctx *c);
OP_HIDDEN const mil_type *op_tensor(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const mil_dim *dims);
/* A tensor of unknown rank as coremltools types it: rank 1 with one fresh
 * variadic symbol, printed "(*is7, fp32)" (program.py
 * get_new_variadic_symbol: "*is" and the counter fresh symbols share). */
OP_HIDDEN const mil_type *op_tensor_variadic(mil_infer_ctx *c, mil_dtype dt);
OP_HIDDEN const mil_type *op_scalar(mil_infer_ctx *c, mil_dtype dt);
/* Same shape as t with another dtype (scalar stays scalar). */
OP_HIDDEN const mil_type *op_with_dtype(mil_infer_ctx *c, const mil_type *t, mil_dtype dt);
/* Sets output i's type. */
static inline void op_set_out(mil_infer_ctx *c, int i, const mil_type *t) { c->out[i] = t; }
/* Numpy-style broadcast of two tensor types' shapes; MIL_ERR_TYPE with a
 * message when incompatible. Symbolic dims broadcast like coremltools
 * (a symbol against 1 -> the symbol; two different symbols -> a fresh one). */
OP_HIDDEN mil_status op_broadcast(mil_infer_ctx *c, const mil_type *a, const mil_type *b, mil_dim *out, int32_t *rank);
/* Rank of a tensor type (0 for scalars), -1 for unknown rank. */
static inline int32_t op_rank(const mil_type *t) { return t ? t->rank : -1; }
/* Normalizes a possibly negative axis for a rank; false when out of range. */
OP_HIDDEN bool op_axis(int64_t axis, int32_t rank, int64_t *out);

/* ---- folding ---- */
/* A new value for output i of the given dtype and constant shape (scalar
 * when rank 0 and the output type is a scalar). Bytes zeroed. */
OP_HIDDEN mil_value *op_new_value(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar);
/* A value with the output type out[i] (which must be static). */
OP_HIDDEN mil_value *op_new_out_value(mil_infer_ctx *c, int i);
/* True when every listed input (NULL-terminated names) that is present has a known value. */
OP_HIDDEN bool op_all_known(const mil_infer_ctx *c, ...);

#endif

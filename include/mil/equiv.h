/* libmil: deciding whether two programs are the same program.
 *
 * Implements ../shared/spec/mil-text.md section 3:
 *
 * Equivalent: there is a one-to-one mapping between the ops of the two
 * programs that preserves each op's type, the binding of every input (to the
 * mapped var, or to a const of equal value: a const operand compares by
 * value, so differently named equal consts match), its output types and its
 * nested blocks; and the functions have the same names, opsets, input names
 * and types, and output names. Other names and the order of independent ops
 * are free. Dead ops count (a dead const must exist in both). Floating
 * point values compare within a relative tolerance of 1e-6 for fp32/fp64 and
 * one ulp for fp16 (and bf16 / fp8); ints, bools and strings exactly.
 * Symbolic dimension names are free too, as long as they correspond one to
 * one.
 *
 * Identical: equivalent, plus the same op order in every block and the same
 * op and var names, except that a run of digits right after '_' is not
 * compared (coremltools numbers new ops from a process-wide counter:
 * "cast_4" and "cast_1" are the same name).
 *
 * Used by the golden-case runner (tests/unit/test_golden.c) and `mil diff`.
 */
#ifndef MIL_EQUIV_H
#define MIL_EQUIV_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mil_equiv_options {
  double rel_tol;     /* fp32 / fp64 relative tolerance; 0 = 1e-6 */
  int fp16_ulps;      /* fp16 / bf16 / fp8 distance in units in the last place; 0 = 1 */
  bool identical;     /* also require identical for MIL_OK */
  const char *name_a; /* how messages call the programs; NULL = "A" / "B" */
  const char *name_b;
} mil_equiv_options;

typedef struct mil_equiv_result {
  bool equivalent;
  bool identical;            /* false whenever not equivalent */
  char diff[1024];           /* first difference found; "" when equivalent */
  char identical_diff[1024]; /* first reason it is not identical; "" when identical */
} mil_equiv_result;

/* Compares a and b. opt may be NULL (defaults); res may be NULL.
 * The first difference names the function, the op (name and type) on each
 * side, the input or output that differs and what each side has, e.g.
 *   function 'main': op 'add_1' (add) in A vs op 'add_7' (add) in B: input 'y':
 *   A binds const %c [fp32 1.0], B binds const %k [fp32 2.0]
 * Runs in time about linear in the size of the programs (plus n log n for
 * matching dead ops). Neither program is modified.
 * Returns MIL_OK when equivalent (and identical, when opt->identical);
 * MIL_ERR_INVALID otherwise, with the difference recorded in d (an error)
 * and res; MIL_ERR_NOMEM. */
MIL_API mil_status mil_program_compare(const mil_program *a, const mil_program *b, const mil_equiv_options *opt,
                                       mil_equiv_result *res, mil_diag *d);

/* Compares two values (any kind) with the tolerances of opt (NULL =
 * defaults): same kind, dtype and shape, elements equal within tolerance. */
MIL_API bool mil_value_close(const mil_value *a, const mil_value *b, const mil_equiv_options *opt);

/* The identical-name rule above: true when a and b are equal once every run
 * of digits that follows '_' is ignored. */
MIL_API bool mil_names_match_modulo_counters(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif

/* The verify-each observer (mil_pass_verifier_observer): after every pass
 * of a pipeline run, the structural verifier, and the registry's
 * validation when the program passed it before the run. coremltools runs
 * its program validation after each pass in its tests; `mil opt
 * --verify-each` and the golden-case runner install this observer. It
 * reports through the diagnostics and prints nothing. */
#include "mil/ops.h"
#include "mil/passes.h"

static void verify_before(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass,
                          mil_program *p, int64_t ops) {
  (void)pl, (void)n, (void)pass, (void)ops;
  if (index != 0) return;
  /* validation against the op registry is only meaningful after a pass when
   * the program passed it before the pipeline started */
  mil_pass_verifier *v = ud;
  mil_diag tmp = {0};
  v->validate = mil_program_validate(p, &tmp) == MIL_OK;
  mil_diag_clear(&tmp);
}

static mil_status verify_after(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p,
                               mil_diag *d) {
  mil_pass_verifier *v = ud;
  mil_status vs = mil_program_verify(p, d);
  if (vs == MIL_OK && v->validate) vs = mil_program_validate(p, d);
  if (vs != MIL_OK)
    return mil_diag_error(d, MIL_ERR_INVALID, "the program is invalid after pass '%s' (#%d of pipeline '%s')",
                          r->pass, r->index, mil_pipeline_name(pl));
  return MIL_OK;
}

mil_pass_observer mil_pass_verifier_observer(mil_pass_verifier *v) {
  mil_pass_observer o = {verify_before, verify_after, v};
  return o;
}

/* Fixture programs and passes shared by the pass-manager and golden-runner
 * tests (not registered; each test registers what it needs). */
#ifndef MIL_TEST_PASS_FIXTURES_H
#define MIL_TEST_PASS_FIXTURES_H

#include "mil/mil.h"
#include "mil/passes.h"

static const char *k_chain = "main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n"
                             "  block0() {\n"
                             "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
                             "    %r0: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r0\")\n"
                             "    %s0: (2, 3, fp32)(Tensor) = sigmoid(x=%r0, name=\"s0\")\n"
                             "    %r1: (2, 3, fp32)(Tensor) = relu(x=%r0, name=\"r1\")\n"
                             "    %r2: (2, 3, fp32)(Tensor) = relu(x=%r1, name=\"r2\")\n"
                             "    %r3: (2, 3, fp32)(Tensor) = relu(x=%r2, name=\"r3\")\n"
                             "  } -> (%r3)\n"
                             "}\n";

/* ---------- fixture passes ---------- */

/* Dead-code elimination as coremltools does it: per block, backwards, an op
 * none of whose outputs is used goes (coreml_update_state stays); nested
 * blocks of live ops are cleaned when their op is reached. */
static int64_t dce_block(mil_block *b, int depth) {
  int64_t n = 0;
  for (mil_op *op = b->last, *prev; op; op = prev) {
    prev = op->prev;
    bool used = strcmp(op->type, "coreml_update_state") == 0;
    for (int32_t i = 0; i < op->n_outputs && !used; i++) used = op->outputs[i]->n_uses > 0;
    if (!used) {
      if (mil_op_remove(op) == MIL_OK) n++;
      continue;
    }
    if (depth < 64)
      for (int32_t i = 0; i < op->n_blocks; i++) n += dce_block(op->blocks[i], depth + 1);
  }
  return n;
}

static mil_status run_dce(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  for (int32_t i = 0; i < p->n_functions; i++)
    for (int32_t s = 0; s < p->functions[i]->n_specs; s++) st->changes += dce_block(p->functions[i]->specs[s].block, 0);
  return MIL_OK;
}
static const mil_pass_def k_fixture_dce = {"fixture::dead_code_elimination", "test DCE", NULL, 0, run_dce, NULL};

static mil_status run_noop(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  return MIL_OK;
}
static const mil_pass_def k_fixture_noop = {"fixture::noop", "does nothing", NULL, 0, run_noop, NULL};

/* Records the options it ran with. */
static int64_t g_seen_threshold;
static int g_mark_runs;
static const mil_pass_option_def k_mark_opts[] = {
    {"threshold", MIL_POPT_INT, "7", true, false, 0, 0, "a number"},
    {"types", MIL_POPT_STRING_LIST, "", false, false, 0, 0, "op types"},
};
static mil_status run_mark(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  g_mark_runs++;
  g_seen_threshold = mil_pass_opt_int(o, "threshold");
  return MIL_OK;
}
static const mil_pass_def k_fixture_mark = {"fixture::mark", "records options", k_mark_opts, 2, run_mark, NULL};

#endif

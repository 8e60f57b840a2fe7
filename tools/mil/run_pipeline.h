/* `mil run` on a Pipeline model (make_pipeline, mil/utils.h): the stages run
 * in order, each fed the pipeline inputs and the outputs of the stages
 * before it (run_pipeline.c). */
#ifndef MIL_CLI_RUN_PIPELINE_H
#define MIL_CLI_RUN_PIPELINE_H

#include "mil/model.h"
#include "run_common.h"

typedef struct cli_pipe {
  mil_model **stages;
  int32_t n;
  mil_interp **ips;   /* the stages run so far (all but the last) */
  cli_tensor **kept;  /* their inputs */
} cli_pipe;

/* Loads the pipeline at path and runs every stage but the last. */
mil_status cli_pipeline_run_prefix(const char *path, const cli_input_arg *ins, int n_ins, uint64_t *random_state,
                                   uint64_t seed, uint64_t max_value_bytes, cli_pipe *p, mil_diag *d);
/* Sets the inputs of ip (the last stage): outputs and inputs of earlier
 * stages by name, then the --input files naming its other inputs, then
 * random values when random_state is set. */
mil_status cli_pipeline_feed(cli_pipe *p, mil_interp *ip, const cli_input_arg *ins, int n_ins, uint64_t *random_state,
                             cli_tensor *kept, mil_diag *d);
void cli_pipeline_free(cli_pipe *p);

#endif

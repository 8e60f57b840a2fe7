/* Internal table of contents of the conversion steps (mil/convert.h):
 * convert.c (the composition and its pass pipeline), fp16_sample.c (the
 * fp16 check with sample inputs). */
#ifndef MIL_CONVERT_INTERNAL_H
#define MIL_CONVERT_INTERNAL_H

#include "build/build.h"
#include "mil/convert.h"

/* Names of op outputs whose ops add_fp16_cast leaves in fp32 (beyond the
 * importer's MIL_ONNX_KEEP_FP32_ATTR marks), interned in program p; the
 * selector finds the names of a clone's ops in p by string. */
typedef struct convert_keep {
  mil_program *p;
  pass_ptrset names;
} convert_keep;
/* Adds name (interned into keep->p); false on out of memory. */
bool convert_keep_add(convert_keep *keep, const char *name);

/* Runs o's pipeline on p: without add_fp16_cast / add_int16_cast when fp32
 * is true; else with add_fp16_cast's op_selector leaving in fp32 the ops
 * the importer marked, the readers of their int32 results through a cast,
 * and the ops named in keep (NULL: none). Errors: those of
 * mil_pipeline_new and the passes. */
mil_status convert_run_pipeline(mil_program *p, const mil_convert_options *o, bool fp32, const convert_keep *keep,
                                mil_diag *d);

/* The fp16 check of o->samples (fp16_sample.c): runs p (before the
 * pipeline) through the fp32 and the fp16 pipelines on the samples with
 * the interpreter and adds to keep the ops whose fp16 results overflow or
 * are off by more than the tolerance, each reported as a warning in d.
 * Errors: MIL_ERR_INVALID (a sample for no input, an input without a
 * sample, a sample dtype that does not fit the input), MIL_ERR_UNSUPPORTED
 * (the values of one run beyond what the check holds), those of the
 * pipelines and of the interpreter's runs, MIL_ERR_NOMEM. */
mil_status convert_fp16_sample(mil_model *m, const mil_convert_options *o, convert_keep *keep, mil_diag *d);

#endif

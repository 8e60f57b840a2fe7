/* libmil — activation calibration for linear_quantize_activations: run
 * samples through the interpreter and keep each activation's range. The
 * ranges feed compression::linear_quantize_activations' activation_stats
 * option (mil compress --calibration-data, Python
 * libmil.optimize.coreml.experimental.linear_quantize_activations).
 * A model utility (src/utils/calibrate.c): it uses the interpreter and the
 * .npy reader, which the compression kernels and passes do not. */
#ifndef MIL_CALIBRATE_H
#define MIL_CALIBRATE_H

#include <stdint.h>

#include "mil/interp.h"
#include "mil/ir.h"
#include "mil/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collects, over calibration samples, the range (min, max) of every
 * candidate activation of a program's main function (its first function
 * when there is no "main"): each input given in a sample, and each tensor
 * output (fp16, fp32, fp64, int32) of every non-const op of the body block
 * the interpreter runs, except the function's outputs. Only two numbers
 * per tensor are kept; a sample's intermediate values are seen once, while
 * the interpreter computes them (mil_interp_set_observer). NaN elements
 * are left out of a range.
 *
 * Mirrors coremltools/optimize/coreml/experimental/_post_training_quantization.py
 * (_get_activation_calibration_stats, _adjust_concat_surrounding_activation_stats)
 * and _model_debugger.py (ModelDebugger.step), with libmil's interpreter in
 * place of Core ML's predict. */
typedef struct mil_calibrator mil_calibrator;

/* A calibrator for p (which must outlive it; see mil_interp_new for the
 * ownership of weights). Errors: those of mil_interp_new, MIL_ERR_NOMEM.
 * Free with mil_calibrator_free. */
MIL_API mil_status mil_calibrator_new(const mil_program *p, mil_calibrator **out, mil_diag *d);
MIL_API void mil_calibrator_free(mil_calibrator *c);
/* Runs one sample: n tensors, tensors[i] for the input names[i]. names (or
 * names[i]) may be NULL when the function has a single input (coremltools'
 * `None` key). Errors: MIL_ERR_INVALID (an unnamed array for a
 * multi-input model), those of mil_interp_set_input and mil_interp_run
 * (an input not given is reported as not set). */
MIL_API mil_status mil_calibrator_add_sample(mil_calibrator *c, int32_t n, const char *const *names,
                                             const mil_tensor *tensors, mil_diag *d);
/* Runs every sample of a calibration folder: one subfolder per sample
 * (taken in name order), holding one <input name>.npy per input of the
 * function. Errors: MIL_ERR_IO (a folder cannot be read), MIL_ERR_INVALID
 * (no sample folder; a sample missing an input), MIL_ERR_NOT_FOUND (a
 * .npy named after no input), those of mil_npy_read and
 * mil_calibrator_add_sample (with a note naming the sample folder). */
MIL_API mil_status mil_calibrator_add_dir(mil_calibrator *c, const char *dir, mil_diag *d);
/* Samples run so far. */
MIL_API int64_t mil_calibrator_n_samples(const mil_calibrator *c);
/* The ranges, after the concat merge, as the activation_stats option of
 * compression::linear_quantize_activations takes them: a JSON object
 * {"<var>": {"rmin": x, "rmax": y, "dtype": "fp16"}, ...} (numbers
 * round-trip exactly). Tensors that only ever held NaN are left out.
 * malloc'ed; NULL on out of memory. The merge is applied to c's ranges. */
MIL_API char *mil_calibrator_stats_json(mil_calibrator *c);

#ifdef __cplusplus
}
#endif

#endif

/* `mil run` output of classifiers: the class label (a string or int64
 * scalar) and the probability dictionary of classify (run_dict.c). */
#ifndef MIL_CLI_RUN_DICT_H
#define MIL_CLI_RUN_DICT_H

#include <stdbool.h>

#include "mil/interp.h"

/* True when output i of ip's last run is a label (string tensor, or
 * classify's int64 label) or a dictionary: then it is printed ("name: \"dog\" (string label)" /
 * "name: dict of 3 (string -> fp64), highest: \"dog\" 0.7, ...") and, when
 * json_path is not NULL, written there as JSON (the label as a string or
 * number, the dictionary as an object whose keys are the labels), through a
 * temporary sibling renamed into place; *st is MIL_OK or the write error
 * (recorded in d). False for ordinary tensor outputs (nothing done). */
bool cli_classifier_output(const mil_interp *ip, int32_t i, const char *json_path, mil_status *st, mil_diag *d);

#endif

/* mil convert's model-interface options (convert_iface.c). */
#ifndef MIL_CLI_CONVERT_IFACE_H
#define MIL_CLI_CONVERT_IFACE_H

#include <stdbool.h>

#include "mil/input_types.h"
#include "mil/onnx.h"

typedef struct convert_iface convert_iface;

convert_iface *convert_iface_new(void);
void convert_iface_free(convert_iface *ci);
/* Consumes argv[*i] (and its value, advancing *i) when it is an interface
 * option: 1; 0 when it is not one; -CLI_USAGE or -CLI_FAIL after an error was printed. */
int convert_iface_parse(convert_iface *ci, int argc, char **argv, int *i);
/* Whether any interface option was given. */
bool convert_iface_used(const convert_iface *ci);
/* The interface the options describe; the input shapes go to o (the
 * importer makes flexible dims symbolic). Valid while ci lives. */
const mil_model_interface *convert_iface_build(convert_iface *ci, mil_onnx_options *o);
/* import (no pipeline) -> mil_interface_prepare -> o's pipeline ->
 * mil_interface_finish; *out NULL on failure. */
mil_status convert_iface_run(const char *in, const mil_onnx_options *o, const mil_model_interface *mi, mil_model **out,
                             mil_diag *d);

#endif

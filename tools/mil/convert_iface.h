/* mil convert's model-interface options (convert_iface.c). */
#ifndef MIL_CLI_CONVERT_IFACE_H
#define MIL_CLI_CONVERT_IFACE_H

#include <stdbool.h>

#include "mil/input_types.h"

typedef struct convert_iface convert_iface;

convert_iface *convert_iface_new(void);
void convert_iface_free(convert_iface *ci);
/* Consumes argv[*i] (and its value, advancing *i) when it is an interface
 * option: 1; 0 when it is not one; -CLI_USAGE or -CLI_FAIL after an error was printed. */
int convert_iface_parse(convert_iface *ci, int argc, char **argv, int *i);
/* Whether any interface option was given. */
bool convert_iface_used(const convert_iface *ci);
/* The interface the options describe (for mil_convert_options.interface;
 * valid while ci lives). */
const mil_model_interface *convert_iface_build(convert_iface *ci);

#endif

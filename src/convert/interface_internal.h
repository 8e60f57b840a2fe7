/* Internal table of contents of the model interface (mil/input_types.h):
 * interface.c (prepare / finish), interface_classify.c (the classify op),
 * interface_desc.c (the description). */
#ifndef MIL_CONVERT_INTERFACE_INTERNAL_H
#define MIL_CONVERT_INTERFACE_INTERNAL_H

#include "mil/input_types.h"
#include "build/build.h"
#include "mil/onnx.h"

/* The function an interface applies to: "main", or the only function. */
mil_function *iface_main(mil_program *p);
/* f's input named `name`, or NULL. */
mil_var *iface_input(mil_function *f, const char *name);
/* The input type mi gives for input `name`, or NULL. */
const mil_input_type *iface_input_type(const mil_model_interface *mi, const char *name);

/* coremltools' _add_classify_op on function f: the classify op appended
 * to its body, its two outputs first among the block outputs; *label and
 * *probs get their (interned) names. Errors: MIL_ERR_INVALID (no
 * probabilities var, no labels, a label count that differs from the
 * probabilities), MIL_ERR_TYPE, MIL_ERR_NOMEM. */
mil_status iface_add_classifier(mil_program *p, mil_function *f, const mil_classifier_config *cc, const char **label,
                                const char **probs, mil_diag *d);

/* The description of f's features as mi gives them (images, flexible
 * shapes), metadata and feature descriptions; the model's description is
 * in line with the program when called. */
mil_status iface_describe(mil_model *m, mil_function *f, const mil_model_interface *mi, mil_diag *d);

/* The importer's input shapes: the explicit ones, then one per input type
 * with a shape (fixed dims as given, RangeDims and dims that differ among
 * EnumeratedShapes as -1: symbolic). */
typedef struct iface_shapes {
  int32_t n;
  mil_onnx_input_shape *shapes;
  int64_t *dims;
} iface_shapes;
mil_status iface_import_shapes(const mil_model_interface *mi, int32_t n_given, const mil_onnx_input_shape *given,
                               iface_shapes *out);
void iface_shapes_free(iface_shapes *s);
/* Whether some input type of mi (may be NULL) gives a shape. */
bool iface_has_shapes(const mil_model_interface *mi);

#endif

/* The rule on the names of a function's inputs and outputs, shared by the
 * text and protobuf readers, mil_program_verify and the pass
 * common::dedup_op_and_var_names. */
#include <stdio.h>
#include <string.h>

#include "core/core_internal.h"

static const mil_var *io_var(const mil_function *f, const mil_block *body, int32_t k) {
  return k < f->n_inputs ? f->inputs[k] : body->outputs[k - f->n_inputs].var;
}

static void describe(const mil_function *f, int32_t k, char *buf, size_t n) {
  if (k < f->n_inputs)
    snprintf(buf, n, "input %d", (int)k);
  else
    snprintf(buf, n, "output %d", (int)(k - f->n_inputs));
}

bool mil_function_io_names_ok(const mil_function *f, const mil_block *body, int32_t *at, char *why, size_t n) {
  if (at) *at = -1;
  if (why && n) why[0] = 0;
  if (!f) return true;
  int32_t total = f->n_inputs + (body ? body->n_outputs : 0);
  ir_ptrmap owner; /* interned name -> index of its first var + 1 */
  ir_ptrmap_init(&owner);
  bool ok = true;
  for (int32_t k = 0; k < total && ok; k++) {
    const mil_var *v = io_var(f, body, k);
    if (!v || !v->name) continue;
    intptr_t first = (intptr_t)ir_ptrmap_get(&owner, v->name);
    if (!first) {
      if (!ir_ptrmap_put(&owner, v->name, (void *)(intptr_t)(k + 1))) break; /* out of memory: no verdict */
      continue;
    }
    if (io_var(f, body, (int32_t)first - 1) == v) continue; /* the same var listed again */
    ok = false;
    if (at) *at = k;
    if (why && n) {
      char a[40], b[40];
      describe(f, (int32_t)first - 1, a, sizeof a);
      describe(f, k, b, sizeof b);
      snprintf(why, n,
               "%s and %s of function '%s' are two different vars named '%s': a function's inputs and outputs "
               "need distinct names (coremltools' dedup_op_and_var_names may rename neither and refuses the "
               "program)",
               a, b, f->name ? f->name : "?", v->name);
    }
  }
  ir_ptrmap_free(&owner);
  return ok;
}

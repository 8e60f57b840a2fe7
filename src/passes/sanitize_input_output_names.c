/* common::sanitize_input_output_names — make the names of the main
 * function's inputs and outputs valid identifiers ([A-Za-z_][A-Za-z0-9_]*)
 * that Core ML accepts, leaving every other name alone.
 *
 *   main(%x/0: (2, 3, fp32)(Tensor), %state: (2, 3, fp16)(State)) {
 *     block0() {
 *       %relu/1: (2, 3, fp32)(Tensor) = relu(x=%x/0, name="relu/1")
 *       %out/1: (2, 3, fp32)(Tensor) = add(x=%relu/1, y=%relu/1, name="out/1")
 *     } -> (%out/1)
 *   }
 *
 * becomes
 *
 *   main(%x_0: (2, 3, fp32)(Tensor), %state_workaround: (2, 3, fp16)(State)) {
 *     block0() {
 *       %relu/1: (2, 3, fp32)(Tensor) = relu(x=%x_0, name="relu/1")
 *       %out_1: (2, 3, fp32)(Tensor) = add(x=%relu/1, y=%relu/1, name="out/1")
 *     } -> (%out_1)
 *   }
 *
 * Rules (coremltools' NameSanitizer with prefix "var_"): every character
 * outside [A-Za-z0-9_] becomes '_'; a name that then starts with a digit
 * gets the prefix "var_"; a MIL keyword or dtype name ("state",
 * "fp16", "tensor", ...) gets "_workaround" appended; a changed name that
 * collides with a name seen before gets "_0" appended, then "_1", ...
 * (cumulatively, "x_0_1", as coremltools does). Inputs are handled first,
 * then the op outputs that are function outputs, in op order. Only the
 * function named "main" is touched.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/preprocess.py
 * (sanitize_input_output_names, NameSanitizer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "sanitize_input_output_names"

static const char *const k_reserved[] = {"any",   "bool",  "program", "func",  "tensor", "list",   "dict",
                                         "tuple", "true",  "false",   "string", "bf16",  "fp16",   "fp32",
                                         "fp64",  "int8",  "int16",   "int32", "int64",  "uint8",  "uint16",
                                         "uint32", "uint64", "state", NULL};

typedef struct sanitizer {
  mil_program *p;
  pass_ptrset seen; /* interned names */
} sanitizer;

static bool is_word(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* NameSanitizer.sanitize_name; returns the interned new name, NULL on out
 * of memory. */
static const char *sanitize(sanitizer *s, const char *name) {
  size_t len = strlen(name);
  /* each UTF-8 character (a Python code point) outside the set becomes one
   * '_'; prefix, suffixes and the uniquifying counters need room */
  size_t cap = len + 64;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  size_t n = 4; /* room for the prefix */
  for (size_t i = 0; i < len;) {
    unsigned char ch = (unsigned char)name[i];
    if (is_word(ch)) {
      buf[n++] = (char)ch;
      i++;
      continue;
    }
    buf[n++] = '_';
    i++;
    if (ch >= 0xC0)
      while (i < len && ((unsigned char)name[i] & 0xC0) == 0x80) i++;
  }
  buf[n] = 0;
  /* after the replacement only a leading digit needs the prefix */
  size_t start = 4;
  if (n > 4 && buf[4] >= '0' && buf[4] <= '9') {
    memcpy(buf, "var_", 4);
    start = 0;
  }
  memmove(buf, buf + start, n - start + 1);
  n -= start;
  for (const char *const *r = k_reserved; *r; r++)
    if (strcmp(buf, *r) == 0) {
      memcpy(buf + n, "_workaround", 12);
      n += 11;
      break;
    }
  const char *out = mil_program_intern(s->p, buf, n);
  if (out && strcmp(out, name) != 0 && pass_ptrset_has(&s->seen, out)) {
    /* "_0", then "_1" appended to that, and so on */
    char *acc = NULL;
    size_t alen = n;
    acc = malloc(alen + 1);
    if (!acc) {
      free(buf);
      return NULL;
    }
    memcpy(acc, buf, n + 1);
    for (unsigned long idx = 0;; idx++) {
      char num[32];
      int k = snprintf(num, sizeof num, "_%lu", idx);
      char *grown = realloc(acc, alen + (size_t)k + 1);
      if (!grown) {
        free(acc);
        free(buf);
        return NULL;
      }
      acc = grown;
      memcpy(acc + alen, num, (size_t)k + 1);
      alen += (size_t)k;
      out = mil_program_intern(s->p, acc, alen);
      if (!out || !pass_ptrset_has(&s->seen, out)) break;
    }
    free(acc);
  }
  free(buf);
  if (out && !pass_ptrset_add(&s->seen, out)) return NULL;
  return out;
}

/* The index of v among its op's outputs. */
static int32_t out_pos(const mil_var *v) {
  for (int32_t i = 0; i < v->op->n_outputs; i++)
    if (v->op->outputs[i] == v) return i;
  return v->op->n_outputs;
}

/* Orders op outputs as a walk over the ops meets them: by op, then by
 * output index. */
static int cmp_op_order(const void *x, const void *y) {
  const mil_var *a = *(mil_var *const *)x, *c = *(mil_var *const *)y;
  if (a->op == c->op) return out_pos(a) < out_pos(c) ? -1 : 1;
  return mil_op_is_before(a->op, c->op) ? -1 : 1;
}

/* The outputs of ops of b that are outputs of b, each once, in op order
 * (what a walk over b's ops, keeping the outputs found among b's outputs,
 * meets), into outs (room for b->n_outputs). Found from b's outputs, so
 * the ops of b are not walked. Returns the count. */
static int32_t body_outputs(mil_block *b, mil_var **outs) {
  int32_t n = 0;
  for (int32_t k = 0; b && k < b->n_outputs; k++) {
    mil_var *v = b->outputs[k].var;
    if (!v || !v->op || v->op->block != b) continue;
    bool dup = false;
    for (int32_t i = 0; i < n && !dup; i++) dup = outs[i] == v;
    if (!dup) outs[n++] = v;
  }
  if (n > 1) qsort(outs, (size_t)n, sizeof *outs, cmp_op_order);
  return n;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_function *f = mil_program_find_function(p, "main");
  if (!f) return MIL_OK;
  sanitizer s = {p, {0}};
  int64_t changes = 0;
  for (int32_t i = 0; i < f->n_inputs; i++) {
    mil_var *v = f->inputs[i];
    const char *nn = sanitize(&s, v->name);
    if (!nn) goto oom;
    if (nn != v->name) {
      v->name = nn;
      changes++;
    }
  }
  mil_block *b = mil_function_body(f);
  mil_var **outs = b && b->n_outputs > 0 ? malloc((size_t)b->n_outputs * sizeof *outs) : NULL;
  if (b && b->n_outputs > 0 && !outs) goto oom;
  int32_t n = body_outputs(b, outs);
  for (int32_t i = 0; i < n; i++) {
    mil_var *v = outs[i];
    const char *nn = sanitize(&s, v->name);
    if (!nn) {
      free(outs);
      goto oom;
    }
    if (nn != v->name) {
      v->name = nn;
      changes++;
    }
  }
  free(outs);
  pass_ptrset_free(&s.seen);
  if (stats) stats->changes += changes;
  return MIL_OK;
oom:
  pass_ptrset_free(&s.seen);
  return mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
}

const mil_pass_def pass_def_sanitize_input_output_names = {
    "common::" PASS, "make function input and output names valid identifiers", NULL, 0, run, NULL};

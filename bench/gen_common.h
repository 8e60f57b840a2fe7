/* What the benchmark's program generators (bench/gen_*.c) share: building
 * a program op by op with the C builder API the way coremltools' PyTorch
 * frontend emits it (every literal a const op, optional inputs
 * materialized as the builder does), distinct fp32 weights as views into
 * one pseudo-random pattern, and writing the result as an .mlpackage.
 * Header-only: each generator is its own executable. */
#ifndef MIL_BENCH_GEN_COMMON_H
#define MIL_BENCH_GEN_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "mil/ops.h"

typedef struct gen {
  mil_program *p;
  mil_block *b;
  mil_diag *d;
  mil_status st; /* first failure; later calls do nothing */
  uint64_t next_id;
  const float *pattern; /* weights: pseudo-random values in [-0.02, 0.02) */
  size_t pattern_n;
  const float *positive; /* batch_norm variances and gammas: values in [0.5, 1.5) */
  size_t positive_n;
  uint64_t n_weights;
  uint64_t weight_bytes;
} gen;

static inline double gen_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline const char *gen_fresh(gen *g, char *buf, size_t n, const char *hint) {
  snprintf(buf, n, "%s_%llu", hint, (unsigned long long)g->next_id++);
  return buf;
}

static inline mil_var *gen_const(gen *g, const char *name, mil_value *v) {
  if (g->st != MIL_OK) return NULL;
  if (!v) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building const '%s'", name);
    return NULL;
  }
  mil_op *c = mil_const_new(g->p, name, v);
  if (!c) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building const '%s'", name);
    return NULL;
  }
  mil_block_append(g->b, c);
  return c->outputs[0];
}

static inline mil_var *gen_f32(gen *g, const char *hint, double x) {
  char nm[64];
  return gen_const(g, gen_fresh(g, nm, sizeof nm, hint), mil_value_new_scalar_f64(g->p, MIL_DT_FP32, x));
}

static inline mil_var *gen_bool(gen *g, const char *hint, bool x) {
  char nm[64];
  return gen_const(g, gen_fresh(g, nm, sizeof nm, hint), mil_value_new_bool(g->p, x));
}

static inline mil_var *gen_i32(gen *g, const char *hint, bool scalar, int n, const int32_t *vals) {
  char nm[64];
  int64_t shape = n;
  mil_value *v = scalar ? mil_value_new_scalar_i64(g->p, MIL_DT_INT32, vals[0])
                        : mil_value_new_tensor(g->p, MIL_DT_INT32, 1, &shape, false, vals);
  return gen_const(g, gen_fresh(g, nm, sizeof nm, hint), v);
}

static inline mil_var *gen_str(gen *g, const char *hint, const char *s) {
  char nm[64];
  return gen_const(g, gen_fresh(g, nm, sizeof nm, hint), mil_value_new_string(g->p, s));
}

/* A distinct fp32 weight: a view into a pattern at its own offset.
 * Offsets k*1009 mod (n - numel) are distinct for every k below that
 * modulus (1009 is prime), and different offsets into a pseudo-random
 * stream give different bytes. `positive` takes the [0.5, 1.5) pattern. */
static inline mil_var *gen_weight_from(gen *g, const char *name, int rank, const int64_t *shape, bool positive) {
  if (g->st != MIL_OK) return NULL;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  const float *base = positive ? g->positive : g->pattern;
  size_t pn = positive ? g->positive_n : g->pattern_n;
  if ((size_t)numel >= pn) {
    g->st = mil_diag_error(g->d, MIL_ERR_INVALID, "weight '%s' larger than the pattern", name);
    return NULL;
  }
  size_t span = pn - (size_t)numel;
  size_t off = (size_t)((g->n_weights * 1009u) % span);
  g->n_weights++;
  g->weight_bytes += (uint64_t)numel * 4u;
  mil_value *v = mil_value_new_view(g->p, MIL_DT_FP32, rank, shape, base + off, (size_t)numel * sizeof(float));
  return gen_const(g, name, v);
}

static inline mil_var *gen_weight(gen *g, const char *name, int rank, const int64_t *shape) {
  return gen_weight_from(g, name, rank, shape, false);
}

/* Appends op `type` with the given inputs (NULL-terminated name/var pairs),
 * materializes its default inputs as the builder does, and infers its
 * output type. */
static inline mil_var *gen_op(gen *g, const char *type, const char *hint, ...) {
  if (g->st != MIL_OK) return NULL;
  char nm[64];
  gen_fresh(g, nm, sizeof nm, hint);
  mil_op *o = mil_op_new(g->p, type, nm);
  if (!o) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building op '%s'", nm);
    return NULL;
  }
  va_list ap;
  va_start(ap, hint);
  for (const char *in = va_arg(ap, const char *); in; in = va_arg(ap, const char *)) {
    mil_var *v = va_arg(ap, mil_var *);
    if (!v) {
      va_end(ap);
      g->st = mil_diag_error(g->d, MIL_ERR_INVALID, "op '%s': input '%s' missing", nm, in);
      return NULL;
    }
    mil_op_add_input(o, in, v);
  }
  va_end(ap);
  mil_var *out = mil_op_add_output(o, nm, mil_type_unknown(g->p));
  mil_block_append(g->b, o);
  mil_status st = mil_op_add_defaults(o, g->d);
  if (st == MIL_OK) st = mil_op_infer(o, g->d);
  if (st != MIL_OK) {
    g->st = st;
    return NULL;
  }
  return out;
}

/* n pseudo-random floats mid + scale * [-0.5, 0.5) (xorshift64 from
 * seed). malloc'ed; NULL on out of memory. */
static inline float *gen_pattern(size_t n, float scale, float mid, uint64_t seed) {
  float *p = malloc(n * sizeof *p);
  if (!p) return NULL;
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    p[i] = (float)((double)(st >> 40) / (double)(1u << 24) - 0.5) * scale + mid;
  }
  return p;
}

/* Starts g on a new program with one function "main" (CoreML6) whose
 * input x has shape (rank dims), fp32, weights drawn from the given
 * patterns (positive may be NULL when no weight needs it); errors go to d.
 * Returns x, or NULL on out of memory (or a NULL pattern). */
static inline mil_var *gen_start(gen *g, mil_diag *d, const float *pattern, size_t pattern_n, const float *positive,
                                 size_t positive_n, int rank, const int64_t *shape) {
  memset(g, 0, sizeof *g);
  g->d = d;
  g->pattern = pattern;
  g->pattern_n = pattern_n;
  g->positive = positive;
  g->positive_n = positive_n;
  g->p = pattern ? mil_program_new(NULL) : NULL;
  mil_function *f = g->p ? mil_function_new(g->p, "main", "CoreML6") : NULL;
  if (!f) return NULL;
  g->b = mil_function_body(f);
  return mil_function_add_input(f, "x", mil_type_tensor_shape(g->p, MIL_DT_FP32, rank, shape));
}

/* Sets the block's outputs, optionally validates, and writes the program
 * as an .mlpackage at path. Takes the program (freed). Returns the status
 * (an error is in g->d). */
static inline mil_status gen_finish(gen *g, mil_var *out, bool validate, const char *path, double *save_s) {
  if (g->st == MIL_OK) g->st = mil_block_set_outputs(g->b, 1, &out);
  if (g->st == MIL_OK && validate) g->st = mil_program_validate(g->p, g->d);
  mil_model *m = NULL;
  if (g->st == MIL_OK) g->st = mil_model_from_program(g->p, 0, &m, g->d);
  else mil_program_free(g->p);
  g->p = NULL;
  double t1 = gen_now();
  if (g->st == MIL_OK) g->st = mil_model_save(m, path, g->d);
  if (save_s) *save_s = gen_now() - t1;
  mil_model_free(m);
  return g->st;
}

#endif

/* Kernels of the random ops (coremltools ops/defs/iOS15/random.py):
 * random_uniform (low + (high - low) u), random_normal (mean + stddev z,
 * Box-Muller), random_bernoulli (1 when u < prob) and random_categorical
 * (`size` class indices per row of x, drawn from softmax(x) in "logits"
 * mode or from x normalized to sum 1 in "probs" mode).
 *
 * Determinism: each op draws from its own xoshiro256** generator whose
 * 256-bit state is filled by splitmix64 from a 64-bit seed: the op's
 * `seed` input when it is >= 0, else the interpreter's seed
 * (mil_interp_set_seed) mixed with a 64-bit FNV-1a hash of the op's name.
 * u is the top 24 bits of a draw scaled to [0, 1). The same program, seeds
 * and inputs give the same values on every run and platform; they are not
 * the numbers Core ML or numpy would draw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(rng *g) {
  uint64_t *s = g->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* Uniform in [0, 1). */
static float uniform(rng *g) { return (float)(next(g) >> 40) * (1.0f / 16777216.0f); }

static void seed_rng(interp_run *r, mil_infer_ctx *c, rng *g) {
  int64_t seed = op_int(c, "seed", -1);
  uint64_t x;
  if (seed >= 0) {
    x = (uint64_t)seed;
  } else {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *p = c->op->name ? c->op->name : ""; *p; p++) h = (h ^ (uint8_t)*p) * UINT64_C(0x100000001b3);
    x = r->seed ^ h;
  }
  for (int i = 0; i < 4; i++) g->s[i] = splitmix64(&x);
}

typedef enum dist { D_UNIFORM, D_NORMAL, D_BERNOULLI } dist;

static mil_status distribution(interp_run *r, mil_infer_ctx *c, dist k) {
  float a = 0, b = 1;
  if (k == D_UNIFORM) a = (float)op_f64(c, "low", 0.0), b = (float)op_f64(c, "high", 1.0);
  if (k == D_NORMAL) a = (float)op_f64(c, "mean", 0.0), b = (float)op_f64(c, "stddev", 1.0);
  if (k == D_BERNOULLI) a = (float)op_f64(c, "prob", 0.5);
  interp_fout o;
  float *y = interp_fout_begin(r, c, 0, &o);
  if (!y) return mil_type_is_static(c->out[0]) ? interp_nomem(c) : INTERP_DECLINE;
  rng g;
  seed_rng(r, c, &g);
  int64_t n = o.v->numel;
  for (int64_t i = 0; i < n; i++) {
    if (k == D_UNIFORM) {
      y[i] = a + (b - a) * uniform(&g);
    } else if (k == D_BERNOULLI) {
      y[i] = uniform(&g) < a ? 1.0f : 0.0f;
    } else {
      float u1 = uniform(&g), u2 = uniform(&g);
      double rad = sqrt(-2.0 * log(1.0 - (double)u1)), th = 2.0 * M_PI * (double)u2;
      y[i] = a + b * (float)(rad * cos(th));
      if (i + 1 < n) y[++i] = a + b * (float)(rad * sin(th));
    }
  }
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_random_uniform(interp_run *r, mil_infer_ctx *c) { return distribution(r, c, D_UNIFORM); }
static mil_status k_random_normal(interp_run *r, mil_infer_ctx *c) { return distribution(r, c, D_NORMAL); }
static mil_status k_random_bernoulli(interp_run *r, mil_infer_ctx *c) { return distribution(r, c, D_BERNOULLI); }

static mil_status k_random_categorical(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x || x->type->rank < 1) return INTERP_DECLINE;
  int64_t k = x->type->dims[x->type->rank - 1].size, rows = k ? x->numel / k : 0, size = op_int(c, "size", 1);
  bool logits = strcmp(op_str(c, "mode", "logits"), "logits") == 0;
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  double *cdf = malloc((size_t)(k ? k : 1) * sizeof *cdf);
  interp_fout o;
  float *y = xf && cdf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!y || o.v->numel != rows * size) {
    if (y) interp_fout_abort(&o);
    free(tx), free(cdf);
    return y ? INTERP_DECLINE : interp_nomem(c);
  }
  rng g;
  seed_rng(r, c, &g);
  for (int64_t rw = 0; rw < rows; rw++) {
    const float *p = xf + rw * k;
    float mx = -INFINITY;
    for (int64_t j = 0; j < k; j++) mx = p[j] > mx ? p[j] : mx;
    double acc = 0;
    for (int64_t j = 0; j < k; j++) cdf[j] = acc += logits ? exp((double)p[j] - mx) : (p[j] > 0 ? p[j] : 0);
    for (int64_t s = 0; s < size; s++) {
      double u = uniform(&g) * acc;
      int64_t j = 0;
      while (j + 1 < k && cdf[j] <= u) j++;
      y[rw * size + s] = (float)j;
    }
  }
  free(tx), free(cdf);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

const interp_kernel interp_kernels_random[] = {
    {"random_bernoulli", k_random_bernoulli, 0},
    {"random_categorical", k_random_categorical, 0},
    {"random_normal", k_random_normal, 0},
    {"random_uniform", k_random_uniform, 0},
};
INTERP_FAMILY_COUNT(random);

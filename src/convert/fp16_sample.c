/* The fp16 check of a conversion with sample inputs (mil_convert_options
 * samples; `mil convert --sample NAME=FILE`, libmil.convert(sample_data=)).
 * coremltools' fp16 conversion (add_fp16_cast) computes every op in fp16,
 * where a square or a sum of int16-scale audio overflows 65504 and the
 * model returns inf / NaN. With samples, the program is run twice with the
 * interpreter, through the fp32 and the fp16 pipelines, every fp32 value
 * of the main block made an output ("probes", compared by name:
 * add_fp16_cast casts an op's result back to fp32 under the op's output
 * name). An op whose fp16 result is inf / NaN where fp32 is finite, or off
 * by more than the tolerance times the largest fp32 magnitude of that
 * value, is kept in fp32 through add_fp16_cast's op_selector (coremltools'
 * FP16ComputePrecision(op_selector=...)); the first such ops along each
 * path are taken (and at once those whose inputs are beyond fp16's range),
 * then the fp16 run is repeated until it is clean or no op is left to keep.
 * Values inside an If's branches or a Loop's body cannot be outputs: when
 * such an op's result is off, every op of its blocks stays fp32. Each kept
 * op is reported with its reason as a warning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert_internal.h"
#include "mil/interp.h"
#include "mil/onnx.h"

#define MAX_ROUNDS 8
#define MAX_PROBE_BYTES 4e9

/* One probed value: a float op output of main's body in the imported
 * program p0 (names interned in p0). */
typedef struct probe {
  const char *name;
  const mil_op *op;
  int32_t *parents; /* probe indices of the op's inputs */
  int32_t n_parents;
  double big;       /* largest |fp32 value| */
  bool bad, kept, was_kept;
  bool overflow;    /* fp16 inf / NaN where fp32 is finite */
  double err;       /* max |fp16 - fp32| */
} probe;

static bool is_probe_var(const mil_var *v) {
  return v && mil_type_is_tensor(v->type) && v->type->dtype == MIL_DT_FP32 && v->type->rank >= 0;
}

/* The float op outputs of b (consts excluded), in order. */
static int32_t collect(const mil_block *b, probe *pr, int32_t cap) {
  int32_t n = 0;
  for (const mil_op *op = b->first; op; op = op->next) {
    if (mil_op_is_const(op)) continue;
    for (int32_t i = 0; i < op->n_outputs; i++)
      if (is_probe_var(op->outputs[i])) {
        if (pr && n < cap) {
          pr[n].name = op->outputs[i]->name;
          pr[n].op = op;
        }
        n++;
      }
  }
  return n;
}

/* A clone of p0 whose main body also returns every probe var (its original
 * outputs first). */
static mil_program *probe_program(const mil_program *p0) {
  mil_program *p = mil_program_clone(p0);
  mil_function *f = p ? mil_program_find_function(p, "main") : NULL;
  if (!f) {
    mil_program_free(p);
    return NULL;
  }
  mil_block *b = mil_function_body(f);
  int32_t n = collect(b, NULL, 0);
  mil_var **outs = malloc((size_t)(b->n_outputs + n + 1) * sizeof *outs);
  if (!outs) {
    mil_program_free(p);
    return NULL;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < b->n_outputs; i++) outs[k++] = b->outputs[i].var;
  for (const mil_op *op = b->first; op; op = op->next) {
    if (mil_op_is_const(op)) continue;
    for (int32_t i = 0; i < op->n_outputs; i++) {
      mil_var *v = op->outputs[i];
      bool listed = false;
      for (int32_t j = 0; j < b->n_outputs && !listed; j++) listed = b->outputs[j].var == v;
      if (is_probe_var(v) && !listed) outs[k++] = v;
    }
  }
  mil_status st = mil_block_set_outputs(b, k, outs);
  free(outs);
  if (st != MIL_OK) {
    mil_program_free(p);
    return NULL;
  }
  return p;
}

/* The samples as the interpreter's inputs: each named input (an ONNX name
 * the import renamed is accepted), in its declared dtype. */
typedef struct sample_in {
  char *name;       /* the program's input name (malloc'd) */
  mil_tensor value; /* value.data malloc'd when converted, else the sample's */
  void *owned;
} sample_in;

/* Converts sample s (fp32 or int32) to dtype dt into *in; false when the
 * values do not fit (message in d). */
static mil_status sample_to(sample_in *in, const mil_convert_sample *s, mil_dtype dt, mil_diag *d) {
  in->value = s->value;
  if (s->value.dtype == dt) return MIL_OK;
  bool from_f = s->value.dtype == MIL_DT_FP32, from_i = s->value.dtype == MIL_DT_INT32;
  size_t es = dt == MIL_DT_FP16 ? 2 : dt == MIL_DT_BOOL || dt == MIL_DT_INT8 || dt == MIL_DT_UINT8 ? 1 : 4;
  bool to_ok = dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_INT32 || es == 1;
  if ((!from_f && !from_i) || !to_ok || (from_f && dt != MIL_DT_FP16))
    return mil_diag_error(d, MIL_ERR_INVALID, "--sample %s: a %s array does not fit input '%s' (%s)", s->name,
                          mil_dtype_name(s->value.dtype), in->name, mil_dtype_name(dt));
  int64_t n = s->value.numel;
  in->owned = malloc((size_t)(n ? n : 1) * es);
  if (!in->owned) return mil_diag_error(d, MIL_ERR_NOMEM, "--sample: out of memory");
  for (int64_t i = 0; i < n; i++) {
    if (dt == MIL_DT_FP16) {
      ((uint16_t *)in->owned)[i] = mil_fp32_to_fp16(((const float *)s->value.data)[i]);
      continue;
    }
    int32_t x = ((const int32_t *)s->value.data)[i];
    bool fits = dt == MIL_DT_BOOL ? (x == 0 || x == 1) : dt == MIL_DT_INT8 ? (x >= -128 && x <= 127)
              : dt == MIL_DT_UINT8 ? (x >= 0 && x <= 255) : dt == MIL_DT_FP32 ? (x >= -(1 << 24) && x <= (1 << 24)) : true;
    if (!fits)
      return mil_diag_error(d, MIL_ERR_INVALID, "--sample %s: element %lld is %d, which input '%s' (%s) cannot hold",
                            s->name, (long long)i, (int)x, in->name, mil_dtype_name(dt));
    if (dt == MIL_DT_FP32) ((float *)in->owned)[i] = (float)x;
    else if (es == 1) ((uint8_t *)in->owned)[i] = (uint8_t)x;
    else ((int32_t *)in->owned)[i] = x;
  }
  in->value.dtype = dt;
  in->value.data = in->owned;
  in->value.nbytes = (size_t)n * es;
  return MIL_OK;
}

static void samples_free(sample_in *in, int32_t n) {
  for (int32_t i = 0; in && i < n; i++) free(in[i].name), free(in[i].owned);
  free(in);
}

/* Resolves o's samples against f's inputs: every input needs one. */
static mil_status samples_resolve(mil_model *m, const mil_function *f, const mil_convert_options *o, sample_in **out,
                                  mil_diag *d) {
  sample_in *in = calloc((size_t)o->n_samples, sizeof *in);
  if (!in) return mil_diag_error(d, MIL_ERR_NOMEM, "--sample: out of memory");
  *out = in;
  for (int32_t i = 0; i < o->n_samples; i++) {
    const char *given = o->samples[i].name ? o->samples[i].name : "";
    char *renamed = mil_onnx_model_name(m, false, given);
    in[i].name = renamed ? renamed : strdup(given);
    if (!in[i].name) return mil_diag_error(d, MIL_ERR_NOMEM, "--sample: out of memory");
    const mil_var *v = NULL;
    for (int32_t k = 0; k < f->n_inputs && !v; k++)
      if (!strcmp(f->inputs[k]->name, in[i].name)) v = f->inputs[k];
    if (!v) return mil_diag_error(d, MIL_ERR_INVALID, "--sample %s: the model has no input of that name", given);
    if (!mil_type_is_tensor(v->type))
      return mil_diag_error(d, MIL_ERR_INVALID, "--sample %s: input '%s' is not a tensor", given, in[i].name);
    mil_status st = sample_to(&in[i], &o->samples[i], v->type->dtype, d);
    if (st != MIL_OK) return st;
  }
  for (int32_t k = 0; k < f->n_inputs; k++) {
    bool given = false;
    for (int32_t i = 0; i < o->n_samples && !given; i++) given = !strcmp(in[i].name, f->inputs[k]->name);
    if (!given)
      return mil_diag_error(d, MIL_ERR_INVALID, "--sample: input '%s' has no sample (the fp16 check runs the model: "
                            "every input needs one)", f->inputs[k]->name);
  }
  return MIL_OK;
}

/* Runs the probe program through the pipeline (fp32 or fp16 with keep) and
 * the interpreter on the samples; the interpreter (owning its program
 * clone) in *ip, the pipelined program in *pp. */
static mil_status run_probe(const mil_program *p0, const mil_convert_options *o, bool fp32, const convert_keep *keep,
                            const sample_in *in, mil_program **pp, mil_interp **ip, mil_diag *d) {
  *ip = NULL;
  *pp = probe_program(p0);
  if (!*pp) return mil_diag_error(d, MIL_ERR_NOMEM, "--sample: out of memory");
  mil_status st = convert_run_pipeline(*pp, o, fp32, keep, d);
  if (st == MIL_OK) st = mil_interp_new(*pp, "main", ip, d);
  for (int32_t i = 0; st == MIL_OK && i < o->n_samples; i++) st = mil_interp_set_input(*ip, in[i].name, &in[i].value, d);
  if (st == MIL_OK) st = mil_interp_run(*ip, NULL, d);
  return st;
}

/* Compares the fp16 run with the fp32 one; marks pr[i].bad. */
static int32_t compare(probe *pr, int32_t n, const mil_interp *i32, const mil_interp *i16, double tol) {
  int32_t bad = 0;
  for (int32_t i = 0; i < n; i++) {
    const mil_tensor *a = mil_interp_output(i32, pr[i].name), *b = mil_interp_output(i16, pr[i].name);
    pr[i].bad = pr[i].overflow = false;
    pr[i].err = 0;
    pr[i].big = 0;
    if (!a || !b || a->numel != b->numel || a->dtype != MIL_DT_FP32 || b->dtype != MIL_DT_FP32) continue;
    const float *x = a->data, *y = b->data;
    for (int64_t k = 0; k < a->numel; k++) {
      if (!isfinite(x[k])) continue;
      if (!isfinite(y[k])) pr[i].overflow = true;
      else pr[i].err = fmax(pr[i].err, fabs((double)x[k] - y[k]));
      pr[i].big = fmax(pr[i].big, fabs((double)x[k]));
    }
    pr[i].bad = pr[i].overflow || pr[i].err > tol * fmax(pr[i].big, 1e-30);
    bad += pr[i].bad;
  }
  return bad;
}

/* The probe indices of each probe op's inputs. */
static bool link_parents(mil_program *p, probe *pr, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    const mil_op *op = pr[i].op;
    int32_t cnt = 0;
    for (int32_t k = 0; k < op->n_inputs; k++) cnt += op->inputs[k].n_args;
    pr[i].parents = mil_program_alloc(p, (size_t)(cnt ? cnt : 1) * sizeof *pr[i].parents);
    if (!pr[i].parents) return false;
    for (int32_t k = 0; k < op->n_inputs; k++)
      for (int32_t a = 0; a < op->inputs[k].n_args; a++) {
        const mil_var *v = op->inputs[k].args[a].use.var;
        if (!v || !v->op || mil_op_is_const(v->op)) continue;
        /* probes are in op order: the producer comes before i */
        for (int32_t j = i - 1; j >= 0; j--)
          if (pr[j].name == v->name) {
            pr[i].parents[pr[i].n_parents++] = j;
            break;
          }
      }
  }
  return true;
}

/* Every op output inside op's nested blocks (an If's branches, a Loop's
 * body), which the probes cannot see: kept whole when the op's result is
 * off. */
static bool keep_nested(convert_keep *keep, const mil_op *op, int32_t *count) {
  for (int32_t k = 0; k < op->n_blocks; k++)
    for (const mil_op *in = op->blocks[k]->first; in; in = in->next) {
      for (int32_t i = 0; i < in->n_outputs; i++)
        if (!convert_keep_add(keep, in->outputs[i]->name)) return false;
      (*count)++;
      if (!keep_nested(keep, in, count)) return false;
    }
  return true;
}

mil_status convert_fp16_sample(mil_model *m, const mil_convert_options *o, convert_keep *keep, mil_diag *d) {
  mil_program *p0 = mil_model_program(m);
  mil_function *f = mil_program_find_function(p0, "main");
  if (!f) return mil_diag_error(d, MIL_ERR_INVALID, "--sample: the program has no function 'main' to run");
  sample_in *in = NULL;
  mil_status st0 = samples_resolve(m, f, o, &in, d);
  if (st0 != MIL_OK) {
    samples_free(in, o->n_samples);
    return st0;
  }
  mil_block *b = mil_function_body(f);
  int32_t n = collect(b, NULL, 0);
  probe *pr = calloc((size_t)(n ? n : 1), sizeof *pr);
  if (!pr || !link_parents(p0, pr, collect(b, pr, n))) {
    free(pr);
    samples_free(in, o->n_samples);
    return mil_diag_error(d, MIL_ERR_NOMEM, "--sample: out of memory");
  }
  /* every probe stays alive through a run: refuse what would not fit */
  double bytes = 0;
  for (int32_t i = 0; i < n; i++) {
    const mil_var *v = pr[i].op->outputs[0];
    for (int32_t k = 0; k < pr[i].op->n_outputs; k++)
      if (pr[i].op->outputs[k]->name == pr[i].name) v = pr[i].op->outputs[k];
    int64_t ne = mil_type_numel(v->type);
    bytes += ne > 0 ? (double)ne * 4 : 0;
  }
  if (bytes > MAX_PROBE_BYTES) {
    free(pr);
    samples_free(in, o->n_samples);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED,
                          "--sample: the program's values take %.1f GB for one run, more than the %.0f GB the "
                          "check keeps at once (every value is compared); use smaller input shapes for the sample",
                          bytes / 1e9, MAX_PROBE_BYTES / 1e9);
  }
  double tol = o->sample_tolerance > 0 ? o->sample_tolerance : MIL_CONVERT_SAMPLE_TOLERANCE;
  mil_program *p32 = NULL, *p16 = NULL;
  mil_interp *i32 = NULL, *i16 = NULL;
  mil_status st = run_probe(p0, o, true, keep, in, &p32, &i32, d);
  int32_t kept = 0;
  for (int round = 0; st == MIL_OK && round < MAX_ROUNDS; round++) {
    st = run_probe(p0, o, false, keep, in, &p16, &i16, d);
    if (st != MIL_OK) break;
    int32_t bad = compare(pr, n, i32, i16, tol), added = 0;
    mil_interp_free(i16);
    mil_program_free(p16);
    i16 = NULL;
    p16 = NULL;
    if (!bad) break;
    /* decided on the state the round started from */
    for (int32_t i = 0; i < n; i++) pr[i].was_kept = pr[i].kept;
    for (int32_t i = 0; i < n; i++) {
      if (!pr[i].bad) continue;
      bool root = true, wide_in = false;
      for (int32_t k = 0; k < pr[i].n_parents; k++) {
        const probe *q = &pr[pr[i].parents[k]];
        if (q->bad && !q->was_kept) root = false;
        if (q->big > 65504.0) wide_in = true;
      }
      /* a kept op still off: its producers' fp16 results feed it */
      if (pr[i].was_kept) {
        for (int32_t k = 0; k < pr[i].n_parents; k++) {
          probe *q = &pr[pr[i].parents[k]];
          if (!q->kept && q->op != pr[i].op) {
            q->kept = true;
            added++;
            if (!convert_keep_add(keep, q->name)) st = MIL_ERR_NOMEM;
            mil_diag_add(d, MIL_SEV_WARNING, "op '%s' (%s) stays fp32 (--sample): it feeds op '%s', which stays "
                         "fp32 and is still off in fp16", q->op->name, q->op->type, pr[i].op->name);
          }
        }
        continue;
      }
      if (!root && !wide_in) continue;
      pr[i].kept = true;
      added++;
      if (!convert_keep_add(keep, pr[i].name)) st = MIL_ERR_NOMEM;
      /* another output of the same op said it already */
      bool said = false;
      for (int32_t j = 0; j < i && !said; j++) said = pr[j].op == pr[i].op && pr[j].kept;
      if (said) continue;
      int32_t inner = 0;
      if (pr[i].op->n_blocks && !keep_nested(keep, pr[i].op, &inner)) st = MIL_ERR_NOMEM;
      if (pr[i].overflow)
        mil_diag_add(d, MIL_SEV_WARNING, "op '%s' (%s) stays fp32 (--sample): in fp16 it gives inf/NaN where fp32 "
                     "is finite (largest |value| %.4g; fp16's largest is 65504)", pr[i].op->name,
                     pr[i].op->type, pr[i].big);
      else
        mil_diag_add(d, MIL_SEV_WARNING, "op '%s' (%s) stays fp32 (--sample): in fp16 it is off by %.3g, more "
                     "than %g of its largest |value| %.4g", pr[i].op->name, pr[i].op->type, pr[i].err, tol,
                     pr[i].big);
      if (inner)
        mil_diag_add(d, MIL_SEV_WARNING, "so do the %d ops inside op '%s' (%s): the values of its blocks are not "
                     "checked one by one", (int)inner, pr[i].op->name, pr[i].op->type);
    }
    kept += added;
    if (!added) break;
  }
  mil_interp_free(i32);
  mil_program_free(p32);
  mil_program_free(p16);
  free(pr);
  samples_free(in, o->n_samples);
  if (st == MIL_OK && !kept)
    mil_diag_add(d, MIL_SEV_NOTE, "--sample: every op computes in fp16 within %g of fp32", tol);
  return st;
}

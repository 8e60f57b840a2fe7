/* The ONNX importer: ModelProto -> MIL program -> mil_model.
 *
 * Reads the file, unpacks it with protobuf-c (ONNX's onnx.proto as Debian's
 * libonnx-dev ships it), makes the function "main" from the graph's inputs
 * and outputs, converts initializers to consts and nodes through the
 * converter table (import_registry.c). It runs no pass pipeline: that is
 * the conversion's step (src/convert/). Subgraphs (If / Loop bodies) are converted by the
 * control-flow converters through onnx_convert_nodes with a nested scope. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "onnx/import/import_internal.h"
#include "onnx/tensor/onnx_tensor_internal.h"
#include "onnx/import/ops_quant_internal.h"

/* ---------- name scopes ---------- */

struct onnx_scope {
  onnx_scope *parent;
  const char **keys; /* interned ONNX names */
  mil_var **vals;
  size_t cap, n;
};

static size_t hptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static bool scope_grow(onnx_scope *s) {
  size_t nc = s->cap ? s->cap * 2 : 64;
  const char **nk = calloc(nc, sizeof *nk);
  mil_var **nv = calloc(nc, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return false;
  }
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->keys[i]) continue;
    size_t j = hptr(s->keys[i]) & (nc - 1);
    while (nk[j]) j = (j + 1) & (nc - 1);
    nk[j] = s->keys[i];
    nv[j] = s->vals[i];
  }
  free(s->keys);
  free(s->vals);
  s->keys = nk;
  s->vals = nv;
  s->cap = nc;
  return true;
}

static mil_status scope_put(onnx_scope *s, const char *k, mil_var *v) {
  if ((s->n + 1) * 2 > s->cap && !scope_grow(s)) return MIL_ERR_NOMEM;
  size_t j = hptr(k) & (s->cap - 1);
  while (s->keys[j] && s->keys[j] != k) j = (j + 1) & (s->cap - 1);
  if (!s->keys[j]) s->n++;
  s->keys[j] = k;
  s->vals[j] = v;
  return MIL_OK;
}

static mil_var *scope_get(const onnx_scope *s, const char *k) {
  if (!s->cap) return NULL;
  size_t j = hptr(k) & (s->cap - 1);
  while (s->keys[j]) {
    if (s->keys[j] == k) return s->vals[j];
    j = (j + 1) & (s->cap - 1);
  }
  return NULL;
}

mil_status onnx_bind(onnx_ctx *c, const char *name, mil_var *v) {
  const char *k = mil_program_intern(c->p, name, (size_t)-1);
  if (!k) return MIL_ERR_NOMEM;
  return scope_put(c->scope, k, v);
}

mil_status onnx_bind_new(onnx_ctx *c, const char *name, mil_var *v) {
  const char *k = mil_program_intern(c->p, name, (size_t)-1);
  if (!k) return MIL_ERR_NOMEM;
  mil_var *had = scope_get(c->scope, k);
  if (had && had != v)
    return mil_diag_error(c->d, MIL_ERR_INVALID,
                          "%s: value '%s' is defined twice in one graph (ONNX graphs are in SSA form)%s%s%s", c->path,
                          name, c->node ? ": again by node '" : "", c->node ? c->node->name : "", c->node ? "'" : "");
  return scope_put(c->scope, k, v);
}

/* Sequences: ONNX name -> onnx_seq (stored as the value). */
onnx_seq *onnx_seq_lookup(onnx_ctx *c, const char *name) {
  const char *k = mil_program_find_string(c->p, name, (size_t)-1);
  return k && c->seqs ? (onnx_seq *)(void *)scope_get(c->seqs, k) : NULL;
}

mil_status onnx_seq_bind(onnx_ctx *c, const char *name, onnx_seq *s) {
  const char *k = mil_program_intern(c->p, name, (size_t)-1);
  if (!k) return MIL_ERR_NOMEM;
  if (!c->seqs && !(c->seqs = calloc(1, sizeof *c->seqs))) return MIL_ERR_NOMEM;
  return scope_put(c->seqs, k, (mil_var *)(void *)s);
}

/* The sanitized name memo: ONNX name -> MIL name (stored as the value). */
const char *onnx_san_get(onnx_ctx *c, const char *k) {
  return c->san ? (const char *)(void *)scope_get(c->san, k) : NULL;
}

mil_status onnx_san_put(onnx_ctx *c, const char *k, const char *v) {
  if (!c->san && !(c->san = calloc(1, sizeof *c->san))) return MIL_ERR_NOMEM;
  return scope_put(c->san, k, (mil_var *)(void *)v);
}

mil_var *onnx_lookup(onnx_ctx *c, const char *name) {
  const char *k = mil_program_find_string(c->p, name, (size_t)-1);
  if (!k) return NULL;
  for (onnx_scope *s = c->scope; s; s = s->parent) {
    mil_var *v = scope_get(s, k);
    if (v) return v;
  }
  return NULL;
}

mil_status onnx_scope_push(onnx_ctx *c) {
  onnx_scope *s = calloc(1, sizeof *s);
  if (!s) return MIL_ERR_NOMEM;
  s->parent = c->scope;
  c->scope = s;
  return MIL_OK;
}

void onnx_scope_pop(onnx_ctx *c) {
  onnx_scope *s = c->scope;
  if (!s) return;
  c->scope = s->parent;
  free(s->keys);
  free(s->vals);
  free(s);
}

/* ---------- messages ---------- */

mil_status onnx_fail(onnx_ctx *c, mil_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const onnx_node *n = c->node;
  if (n)
    mil_diag_error(c->d, st, "%s: node '%s' (%s, domain %s, opset %d): %s", c->path, n->name, n->op_type,
                   n->domain[0] ? n->domain : "ai.onnx", n->opset, msg);
  else
    mil_diag_error(c->d, st, "%s: %s", c->path, msg);
  return st;
}

/* ---------- converting nodes ---------- */

static int domain_opset(onnx_ctx *c, const char *domain) {
  const Onnx__ModelProto *m = c->model;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
    if (strcmp(d, "ai.onnx") == 0) d = "";
    if (strcmp(d, domain) == 0) return (int)m->opset_import[i]->version;
  }
  return -1;
}

const onnx_op_entry *onnx_registry_find(const char *op_type, const char *domain, int opset, const onnx_op_entry **any);

/* Nodes whose MIL ops compute integer arithmetic in fp32 (exact there,
 * not in fp16: products of uint8 operands reach 255 * 255 * K) and
 * DynamicQuantizeLinear (ONNX's rounding of x / scale in fp32): their ops
 * get the MIL_ONNX_KEEP_FP32_ATTR mark, which mil_convert's add_fp16_cast
 * op_selector reads (and removes after the pipeline). */
static bool keeps_fp32(const onnx_node *n) {
  static const char *const k_ops[] = {"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul",
                                      "DynamicQuantizeLinear", NULL};
  if (n->domain[0]) return false;
  for (const char *const *k = k_ops; *k; k++)
    if (!strcmp(n->op_type, *k)) return true;
  return false;
}

static mil_status convert_node(onnx_ctx *c, const Onnx__NodeProto *np) {
  onnx_node n;
  memset(&n, 0, sizeof n);
  n.proto = np;
  n.op_type = np->op_type ? np->op_type : "";
  n.domain = np->domain ? np->domain : "";
  if (strcmp(n.domain, "ai.onnx") == 0) n.domain = "";
  n.name = np->name && np->name[0] ? np->name : (np->n_output && np->output[0] ? np->output[0] : n.op_type);
  n.opset = n.domain[0] ? domain_opset(c, n.domain) : c->opset;
  n.n_in = (int32_t)np->n_input;
  n.n_out = (int32_t)np->n_output;
  c->node = &n;
  if (n.opset < 0)
    return onnx_fail(c, MIL_ERR_INVALID, "the model imports no opset for domain '%s' (opset_import has no entry)",
                     n.domain[0] ? n.domain : "ai.onnx");
  const onnx_op_entry *any = NULL;
  const onnx_op_entry *e = onnx_registry_find(n.op_type, n.domain, n.opset, &any);
  if (!e) {
    if (any)
      return onnx_fail(c, MIL_ERR_UNSUPPORTED,
                       "libmil converts %s only for opsets %d..%d (its semantics changed at a later version)",
                       n.op_type, any->since, any->until ? any->until : MIL_ONNX_OPSET_KNOWN);
    return onnx_fail(c, MIL_ERR_UNSUPPORTED, "no converter for op_type '%s' in domain '%s'", n.op_type,
                     n.domain[0] ? n.domain : "ai.onnx");
  }
  n.entry = e;
  mil_var *ins[64];
  mil_var **in = n.n_in <= 64 ? ins : calloc((size_t)n.n_in, sizeof *in);
  if (!in) return MIL_ERR_NOMEM;
  n.in = in;
  mil_status st = MIL_OK;
  /* every ONNX operator has at least one output (an optional one may be unnamed) */
  if (n.n_out < 1) st = onnx_fail(c, MIL_ERR_INVALID, "the node has no outputs");
  for (int32_t i = 0; st == MIL_OK && i < n.n_in; i++) {
    const char *nm = np->input[i];
    in[i] = NULL;
    if (!nm || !nm[0]) continue;
    in[i] = onnx_lookup(c, nm);
    if (!in[i] && onnx_seq_lookup(c, nm)) continue; /* a sequence: onnx_in_seq */
    if (!in[i]) {
      st = onnx_fail(c, MIL_ERR_INVALID, "input %d '%s' is not defined before the node", (int)i, nm);
      break;
    }
    /* the converters read dims: every input is a tensor of known rank */
    if (!mil_type_is_tensor(in[i]->type) || in[i]->type->rank < 0) {
      st = onnx_fail(c, MIL_ERR_UNSUPPORTED, "input %d '%s' is not a tensor of known rank", (int)i, nm);
      break;
    }
  }
  mil_op *before = c->blk ? c->blk->last : NULL;
  if (st == MIL_OK) {
    size_t errs = c->d ? c->d->n_errors : 0;
    st = e->fn(c, &n);
    if (st != MIL_OK && c->d && c->d->n_errors == errs)
      onnx_fail(c, st, "conversion failed (%s)", mil_status_str(st));
    else if (st != MIL_OK && c->d && c->d->n_errors > errs && !strstr(c->d->msgs[c->d->count - 1].text, "node '"))
      onnx_fail(c, st, "conversion to %s failed (see above)", e->mil_ops ? e->mil_ops : "MIL");
  }
  if (st == MIL_OK)
    for (int32_t i = 0; i < n.n_out; i++)
      if (onnx_out_used(&n, i) && !onnx_lookup(c, np->output[i]) && !onnx_seq_lookup(c, np->output[i])) {
        st = onnx_fail(c, MIL_ERR_UNSUPPORTED, "output %d '%s' is not produced by the converter", (int)i,
                       np->output[i]);
        break;
      }
  if (st == MIL_OK && keeps_fp32(&n)) {
    mil_value *mark = mil_value_new_bool(c->p, true);
    if (!mark) st = MIL_ERR_NOMEM;
    for (mil_op *op = before ? before->next : c->blk->first; mark && op; op = op->next)
      mil_op_set_attr(op, MIL_ONNX_KEEP_FP32_ATTR, mark);
  }
  if (in != ins) free(in);
  c->node = NULL;
  return st;
}

mil_status onnx_convert_nodes(onnx_ctx *c, const Onnx__GraphProto *g) {
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *t = g->initializer[i];
    mil_value *v = NULL;
    /* quantized weights keep their dtype (ops_quant_weights.c) */
    bool quantized = onnx_quant_dtype(t->data_type) != MIL_DT_UNUSED && onnx_quantized_only(g, t->name);
    mil_status st = quantized ? onnx_tensor_value_quantized(c, t, &v) : onnx_tensor_value(c, t, &v);
    if (st != MIL_OK) return st;
    mil_op *op = mil_const_new(c->p, onnx_sanitize(c, t->name ? t->name : "const"), v);
    if (!op) return MIL_ERR_NOMEM;
    mil_block_append(c->blk, op);
    (void)pass_ptrset_add(&c->named, op->outputs[0]);
    if ((st = onnx_bind_new(c, t->name ? t->name : "", op->outputs[0])) != MIL_OK) return st;
  }
  size_t *order;
  mil_status st = onnx_graph_order(c, g, &order);
  for (size_t i = 0; st == MIL_OK && i < g->n_node; i++) st = convert_node(c, g->node[order[i]]);
  free(order);
  return st;
}

/* The ONNX element type of value `name` as the main graph declares it (an
 * initializer, input, output or value_info), 0 when unknown. */
int onnx_declared_elem_type(onnx_ctx *c, const char *name) {
  const Onnx__GraphProto *g = c->model ? c->model->graph : NULL;
  if (!g || !name) return 0;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return g->initializer[i]->data_type;
  const Onnx__ValueInfoProto *const *lists[3] = {(const Onnx__ValueInfoProto *const *)g->input,
                                                 (const Onnx__ValueInfoProto *const *)g->output,
                                                 (const Onnx__ValueInfoProto *const *)g->value_info};
  size_t counts[3] = {g->n_input, g->n_output, g->n_value_info};
  for (int l = 0; l < 3; l++)
    for (size_t i = 0; i < counts[l]; i++) {
      const Onnx__ValueInfoProto *vi = lists[l][i];
      if (vi->name && !strcmp(vi->name, name) && vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
          vi->type->tensor_type)
        return vi->type->tensor_type->elem_type;
    }
  return 0;
}

/* ---------- the main graph ---------- */

/* The type of an input given shape fs: dims >= 0 fixed, -1 a fresh
 * symbolic dim (a flexible dim: RangeDim or one that differs among
 * EnumeratedShapes). */
static const mil_type *onnx_input_shape_type(mil_program *p, mil_dtype dt, const mil_onnx_input_shape *fs) {
  mil_dim dims[64];
  if (fs->rank < 0 || fs->rank > 64) return NULL;
  for (int32_t k = 0; k < fs->rank; k++) {
    if (fs->dims[k] >= 0) dims[k] = (mil_dim){.size = fs->dims[k]};
    else dims[k] = mil_dim_new_symbol(p);
  }
  return mil_type_tensor(p, dt, fs->rank, dims);
}

static const mil_onnx_input_shape *fixed_shape(const mil_onnx_options *o, const char *name) {
  for (int32_t i = 0; o && i < o->n_input_shapes; i++)
    if (strcmp(o->input_shapes[i].name, name) == 0) return &o->input_shapes[i];
  return NULL;
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return true;
  return false;
}

static const mil_onnx_input_value *fixed_value(const mil_onnx_options *o, const char *name) {
  for (int32_t i = 0; o && i < o->n_input_values; i++)
    if (o->input_values[i].name && strcmp(o->input_values[i].name, name) == 0) return &o->input_values[i];
  return NULL;
}

static double elem_f64(const mil_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP64: return ((const double *)t->data)[i];
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)t->data)[i];
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  default: return NAN;
  }
}

/* Graph input `name` of type t fixed to value v (--input-value): a const. */
static mil_status bind_value(onnx_ctx *c, const char *name, const mil_type *t, const mil_tensor *v) {
  bool num = v->dtype == MIL_DT_FP64 || v->dtype == MIL_DT_FP32 || v->dtype == MIL_DT_INT64 || v->dtype == MIL_DT_INT32;
  if (!num || !v->data || v->numel < 1)
    return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-value %s: expected numbers", c->path, name);
  int64_t shape[MIL_INTERP_MAX_RANK_ONNX];
  int32_t rank = v->rank;
  if (rank < 0) { /* the declared shape */
    if (t->rank < 0 || t->rank > MIL_INTERP_MAX_RANK_ONNX || !mil_type_is_static(t))
      return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-value %s: the input has no static shape to take", c->path,
                            name);
    rank = t->rank;
    for (int32_t k = 0; k < rank; k++) shape[k] = t->dims[k].size;
  } else {
    if (rank > MIL_INTERP_MAX_RANK_ONNX) return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-value %s: rank %d", c->path, name, (int)rank);
    for (int32_t k = 0; k < rank; k++) shape[k] = v->shape[k];
  }
  int64_t n = 1;
  for (int32_t k = 0; k < rank; k++) n *= shape[k];
  bool fits = n == v->numel && (t->rank < 0 || t->rank == rank);
  for (int32_t k = 0; fits && t->rank >= 0 && k < rank; k++) fits = t->dims[k].size < 0 || t->dims[k].size == shape[k];
  if (!fits)
    return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-value %s: %lld values do not fit the input's shape",
                          c->path, name, (long long)v->numel);
  mil_dtype dt = t->dtype == MIL_DT_BOOL ? MIL_DT_BOOL : t->dtype;
  mil_value *val = rank == 0 ? mil_value_new_scalar_f64(c->p, dt, elem_f64(v, 0))
                             : mil_value_new_tensor(c->p, dt, rank, shape, false, NULL);
  if (!val) return MIL_ERR_NOMEM;
  for (int64_t i = 0; rank > 0 && i < n; i++) mil_value_set_f64(val, i, elem_f64(v, i));
  mil_op *op = mil_const_new(c->p, onnx_sanitize(c, name), val);
  if (!op) return MIL_ERR_NOMEM;
  mil_block_append(c->blk, op);
  (void)pass_ptrset_add(&c->named, op->outputs[0]);
  return onnx_bind_new(c, name, op->outputs[0]);
}

static mil_status add_inputs(onnx_ctx *c, mil_function *f, const Onnx__GraphProto *g, const mil_onnx_options *o) {
  for (int32_t k = 0; o && k < o->n_input_values; k++) {
    bool found = false;
    for (size_t i = 0; i < g->n_input; i++)
      found |= g->input[i]->name && o->input_values[k].name && strcmp(g->input[i]->name, o->input_values[k].name) == 0;
    if (!found) return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-value names '%s', not a graph input", c->path,
                                      o->input_values[k].name ? o->input_values[k].name : "(null)");
  }
  for (int32_t k = 0; o && k < o->n_input_shapes; k++) {
    bool found = false;
    for (size_t i = 0; i < g->n_input; i++)
      found |= g->input[i]->name && strcmp(g->input[i]->name, o->input_shapes[k].name) == 0;
    if (!found) return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-shape names '%s', not a graph input", c->path,
                                      o->input_shapes[k].name);
  }
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    const char *name = vi->name ? vi->name : "";
    if (is_initializer(g, name)) continue; /* an initializer with a default value: a const */
    const mil_type *t = onnx_value_info_type(c, vi);
    if (!t) return MIL_ERR_UNSUPPORTED;
    const mil_onnx_input_value *fv = fixed_value(o, name);
    if (fv) {
      mil_status st = bind_value(c, name, t, &fv->value);
      if (st != MIL_OK) return st;
      continue;
    }
    const mil_onnx_input_shape *fs = fixed_shape(o, name);
    if (fs) {
      if (t->rank >= 0 && t->rank != fs->rank)
        return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-shape %s has rank %d, the model's input has rank %d",
                              c->path, name, (int)fs->rank, (int)t->rank);
      for (int32_t k = 0; t->rank >= 0 && k < fs->rank; k++)
        if (fs->dims[k] >= 0 && t->dims[k].size >= 0 && t->dims[k].size != fs->dims[k])
          return mil_diag_error(c->d, MIL_ERR_INVALID, "%s: --input-shape %s: dim %d is %lld in the model, not %lld",
                                c->path, name, (int)k, (long long)t->dims[k].size, (long long)fs->dims[k]);
      t = onnx_input_shape_type(c->p, t->dtype, fs);
      if (!t) return mil_diag_error(c->d, MIL_ERR_NOMEM, "out of memory");
    }
    if (t->rank < 0)
      return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: graph input '%s' has no shape (give it with --input-shape)",
                            c->path, name);
    /* Core ML has no bool I/O: a bool input is fed as int32 and cast */
    bool is_bool = t->dtype == MIL_DT_BOOL;
    if (is_bool) t = mil_type_tensor(c->p, MIL_DT_INT32, t->rank, t->dims);
    mil_var *v = mil_function_add_input(f, onnx_sanitize(c, name), t);
    if (!v) return MIL_ERR_NOMEM;
    (void)pass_ptrset_add(&c->named, v);
    if (is_bool && !(v = onnx_cast(c, v, MIL_DT_BOOL))) return MIL_ERR_TYPE;
    mil_status st = onnx_bind_new(c, name, v);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

/* Whether MIL name nm is carried by an input of b's function or by one of
 * the outputs vars[0..n) already set. */
static bool name_carried(const mil_block *b, const char *nm, mil_var *const *vars, size_t n) {
  for (int32_t k = 0; b->func && !b->parent && k < b->func->n_inputs; k++)
    if (b->func->inputs[k]->name == nm) return true;
  for (size_t k = 0; k < n; k++)
    if (vars[k]->name == nm) return true;
  return false;
}

/* want, or a fresh name after it when another var carries want. */
static const char *out_name(onnx_ctx *c, const mil_block *b, const char *want, mil_var *const *vars, size_t n,
                            bool taken) {
  if (!taken && !name_carried(b, want, vars, n)) return want;
  pass_names *names = pass_bld_names(&c->bld);
  return names ? pass_names_fresh(names, c->p, want) : NULL;
}

/* The block's outputs: each graph output's var, behind an identity named
 * after the output when the var carries another name (an input, a const,
 * another output). An output listed again is an identity of its first
 * occurrence; a name another output or a function input carries is not
 * given twice (the later one gets a fresh name). */
mil_status onnx_block_outputs(onnx_ctx *c, mil_block *b, const Onnx__ValueInfoProto *const *outs, size_t n,
                              bool rename) {
  mil_var **vars = calloc(n + 1, sizeof *vars), **orig = calloc(n + 1, sizeof *orig);
  mil_status st = vars && orig ? MIL_OK : MIL_ERR_NOMEM;
  for (size_t i = 0; i < n && st == MIL_OK; i++) {
    const char *name = outs[i]->name ? outs[i]->name : "";
    mil_var *v = onnx_lookup(c, name);
    if (!v && onnx_seq_lookup(c, name)) {
      st = mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: graph output '%s' is a sequence (sequences are converted only "
                          "inside a graph)", c->path, name);
      break;
    }
    if (!v) {
      st = mil_diag_error(c->d, MIL_ERR_INVALID, "%s: graph output '%s' is produced by no node", c->path, name);
      break;
    }
    orig[i] = v;
    bool dup = false;
    for (size_t k = 0; k < i && !dup; k++)
      if (orig[k] == v) {
        dup = true;
        v = vars[k]; /* its first occurrence, as that became (an int32 cast of a bool) */
      }
    const char *want = rename ? onnx_sanitize(c, name) : NULL;
    if (rename && !want) {
      st = MIL_ERR_NOMEM;
      break;
    }
    bool named = false; /* v is a cast named here */
    if (rename && !dup && onnx_dtype(v) == MIL_DT_BOOL) {
      /* Core ML has no bool I/O: a bool output is given as int32 */
      mil_block *save = c->blk;
      c->blk = b;
      mil_var *cv = onnx_cast(c, v, MIL_DT_INT32);
      c->blk = save;
      if (!cv) {
        st = MIL_ERR_TYPE;
        break;
      }
      bool gives_up = v->name == want && v->op; /* a node's bool output gives up the name */
      const char *nm = out_name(c, b, want, vars, i, v->name == want && !gives_up);
      if (gives_up) {
        pass_names *names = pass_bld_names(&c->bld);
        v->name = names ? pass_names_fresh(names, c->p, "bool_out") : v->name;
        if (v->op->n_outputs == 1) v->op->name = v->name;
      }
      if (!nm) {
        st = MIL_ERR_NOMEM;
        break;
      }
      cv->name = nm;
      cv->op->name = nm;
      v = cv;
      named = true;
    }
    if (dup || !v->op || mil_op_is_const(v->op) || v->op->block != b ||
        (rename && !named && (v->name != want || name_carried(b, want, vars, i)))) {
      mil_block *save = c->blk;
      c->blk = b;
      mil_var *idv = ONNX_OP(c, "identity", A("x", v));
      c->blk = save;
      if (!idv) {
        st = MIL_ERR_TYPE;
        break;
      }
      if (rename) {
        /* a graph input listed as an output keeps its name: the output
         * gets a fresh one */
        const char *nm = out_name(c, b, want, vars, i, v->name == want);
        if (!nm) {
          st = MIL_ERR_NOMEM;
          break;
        }
        idv->name = nm;
        idv->op->name = nm;
      }
      v = idv;
    }
    vars[i] = v;
  }
  if (st == MIL_OK) st = mil_block_set_outputs(b, (int32_t)n, vars);
  free(vars);
  free(orig);
  return st;
}

/* ---------- renamed inputs and outputs ---------- */

/* Appends s to the growing buffer as a JSON string. */
static bool json_put(char **buf, size_t *len, size_t *cap, const char *s, bool quote) {
  size_t need = *len + strlen(s) * 6 + 4;
  if (need > *cap) {
    size_t nc = *cap ? *cap : 256;
    while (nc < need) nc *= 2;
    char *nb = realloc(*buf, nc);
    if (!nb) return false;
    *buf = nb;
    *cap = nc;
  }
  char *o = *buf + *len;
  if (quote) *o++ = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (!quote) *o++ = (char)*p;
    else if (*p == '"' || *p == '\\') {
      *o++ = '\\';
      *o++ = (char)*p;
    } else if (*p < 0x20)
      o += sprintf(o, "\\u%04x", *p);
    else
      *o++ = (char)*p;
  }
  if (quote) *o++ = '"';
  *o = 0;
  *len = (size_t)(o - *buf);
  return true;
}

/* The main function's inputs and outputs whose MIL name is not the ONNX
 * name (coremltools' NameSanitizer: onnx::Flatten_0 -> onnx__Flatten_0),
 * as the JSON object {"inputs": {MIL: ONNX, ...}, "outputs": {...}} kept
 * for the model's metadata under MIL_ONNX_NAMES_KEY (none when no name
 * changed). */
static mil_status names_metadata(onnx_ctx *c, mil_function *f, const Onnx__GraphProto *g) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  bool ok = json_put(&buf, &len, &cap, "{\"inputs\": {", false), any = false;
  int32_t n = 0;
  for (size_t i = 0; ok && i < g->n_input; i++) {
    const char *name = g->input[i]->name ? g->input[i]->name : "";
    if (is_initializer(g, name)) continue;
    const char *mil = onnx_sanitize(c, name); /* memoized: the input's name, when it is one */
    bool is_input = false;
    for (int32_t k = 0; mil && k < f->n_inputs; k++) is_input |= f->inputs[k]->name == mil;
    if (!is_input || !strcmp(mil, name)) continue;
    ok = json_put(&buf, &len, &cap, n++ ? ", " : "", false) && json_put(&buf, &len, &cap, mil, true) &&
         json_put(&buf, &len, &cap, ": ", false) && json_put(&buf, &len, &cap, name, true);
  }
  any = n > 0;
  n = 0;
  ok = ok && json_put(&buf, &len, &cap, "}, \"outputs\": {", false);
  const mil_block *b = mil_function_body(f);
  for (size_t i = 0; ok && i < g->n_output && (int32_t)i < b->n_outputs; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    const char *mil = b->outputs[i].var->name;
    if (!strcmp(mil, name)) continue;
    ok = json_put(&buf, &len, &cap, n++ ? ", " : "", false) && json_put(&buf, &len, &cap, mil, true) &&
         json_put(&buf, &len, &cap, ": ", false) && json_put(&buf, &len, &cap, name, true);
  }
  any |= n > 0;
  ok = ok && json_put(&buf, &len, &cap, "}}", false);
  if (ok && any) c->names_json = mil_program_intern(c->p, buf, len);
  free(buf);
  return ok && (!any || c->names_json) ? MIL_OK : MIL_ERR_NOMEM;
}

static mil_status convert_model(onnx_ctx *c, const mil_onnx_options *o) {
  const Onnx__ModelProto *m = c->model;
  const Onnx__GraphProto *g = m->graph;
  if (!g) return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: the ModelProto has no graph", c->path);
  c->opset = domain_opset(c, "");
  /* IR version 1..2 models had no opset_import: ai.onnx opset 1. A model
   * importing only other domains (ai.onnx.preview.training, say) needs no
   * ai.onnx opset, as for onnx's checker: c->opset stays -1 and a node of
   * the default domain is refused by convert_node, naming the domain. */
  if (c->opset < 0 && m->n_opset_import == 0) c->opset = 1;
  if (c->opset > MIL_ONNX_OPSET_KNOWN)
    mil_diag_add(c->d, MIL_SEV_WARNING,
                 "%s: ai.onnx opset %d is newer than %d, the newest libmil knows; ops are converted with the "
                 "semantics of their newest known version",
                 c->path, c->opset, MIL_ONNX_OPSET_KNOWN);
  mil_function *f = mil_function_new(c->p, "main", mil_opset_name(c->target));
  if (!f) return MIL_ERR_NOMEM;
  c->blk = mil_function_body(f);
  mil_status st = onnx_scope_push(c);
  if (st != MIL_OK) return st;
  if ((st = onnx_reserve_names(c, g)) != MIL_OK) return st;
  if ((st = add_inputs(c, f, g, o)) != MIL_OK) return st;
  if ((st = onnx_convert_nodes(c, g)) != MIL_OK) return st;
  const Onnx__ValueInfoProto *const *outs = (const Onnx__ValueInfoProto *const *)g->output;
  if ((st = onnx_block_outputs(c, c->blk, outs, g->n_output, true)) != MIL_OK) return st;
  return names_metadata(c, f, g);
}

static void drop_model(void *ud) { onnx__model_proto__free_unpacked(ud, &onnx_sized_allocator); }

/* The options' checks and the unpacked message; *m NULL on failure. */
static mil_status unpack(const void *data, size_t len, const char *name, const mil_onnx_options *o, mil_model **out,
                         Onnx__ModelProto **m, mil_diag *d) {
  *m = NULL;
  if (!out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_onnx_import: out is NULL");
  *out = NULL;
  int target = o->target ? o->target : MIL_IOS15;
  if (target < MIL_IOS15 || target > MIL_IOS18)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: deployment target %d is not iOS15..iOS18", name, target);
  if (!(*m = onnx__model_proto__unpack(&onnx_sized_allocator, len, data)))
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: not a valid ONNX ModelProto (protobuf decoding failed, %zu bytes)",
                          name, len);
  return MIL_OK;
}

/* The program of unpacked model m (taken: freed, or kept by the program). */
/* The value ranges of the graph's integer inputs by their declared ONNX
 * types, for the static fp16 check (*out malloc'd, by MIL input name). */
static mil_status input_ranges(onnx_ctx *c, onnx_input_range **out, int32_t *n) {
  const Onnx__GraphProto *g = c->model->graph;
  size_t n_in = g ? g->n_input : 0;
  *n = 0;
  *out = calloc(n_in + 1, sizeof **out);
  if (!*out) return MIL_ERR_NOMEM;
  for (size_t i = 0; i < n_in; i++) {
    const char *nm = g->input[i]->name ? g->input[i]->name : "";
    double lo, hi;
    switch (onnx_declared_elem_type(c, nm)) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: lo = -128, hi = 127; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: lo = 0, hi = 255; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: lo = -32768, hi = 32767; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: lo = 0, hi = 65535; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: lo = 0, hi = 1; break;
    default: continue;
    }
    const char *k = mil_program_find_string(c->p, nm, (size_t)-1);
    const char *san = k ? onnx_san_get(c, k) : NULL;
    if (san) (*out)[(*n)++] = (onnx_input_range){san, lo, hi};
  }
  return MIL_OK;
}

static mil_status import_model(Onnx__ModelProto *m, const char *name, const char *dir, const mil_onnx_options *o,
                               mil_model **out, mil_diag *d) {
  int target = o->target ? o->target : MIL_IOS15;
  mil_program *p = mil_program_new(NULL);
  if (!p) {
    onnx__model_proto__free_unpacked(m, &onnx_sized_allocator);
    return MIL_ERR_NOMEM;
  }
  onnx_ctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.d = d;
  c.bld.p = p;
  c.bld.d = d;
  c.bld.pass = "onnx import";
  c.target = target;
  c.nms_max_boxes = o->nms_max_boxes;
  c.path = name;
  c.dir = dir ? dir : ".";
  c.model = m;
  mil_status st = convert_model(&c, o);
  onnx_input_range *ranges = NULL;
  int32_t n_ranges = 0;
  if (st == MIL_OK && o->fp16_range_check) st = input_ranges(&c, &ranges, &n_ranges);
  c.model = NULL;
  /* large raw_data initializers are viewed in place (onnx_tensor_value):
   * then the decoded message lives as long as the program; otherwise
   * every value and name was copied or interned and it goes now */
  if (c.views) {
    mil_status ms = mil_program_add_mapping(p, NULL, 0, drop_model, m);
    if (st == MIL_OK) st = ms;
  } else
    onnx__model_proto__free_unpacked(m, &onnx_sized_allocator);
  while (c.scope) onnx_scope_pop(&c);
  if (c.san) {
    c.scope = c.san;
    onnx_scope_pop(&c);
  }
  if (c.seqs) {
    c.scope = c.seqs;
    onnx_scope_pop(&c);
  }
  pass_bld_free(&c.bld);
  pass_ptrset_free(&c.named);
  if (st == MIL_OK && o->fp16_range_check) (void)onnx_static_fp16_check(p, ranges, n_ranges, name, d);
  free(ranges);
  if (st != MIL_OK) {
    mil_program_free(p);
    return st;
  }
  const char *names = c.names_json;
  st = mil_model_from_program(p, target, out, d);
  if (st == MIL_OK && names && (st = mil_model_set_metadata(*out, MIL_ONNX_NAMES_KEY, names)) != MIL_OK) {
    mil_model_free(*out);
    *out = NULL;
  }
  return st;
}

mil_status mil_onnx_import_buffer(const void *data, size_t len, const char *name, const char *dir,
                                  const mil_onnx_options *opts, mil_model **out, mil_diag *d) {
  mil_onnx_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const mil_onnx_options *o = opts ? opts : &dflt;
  if (!name) name = "<onnx buffer>";
  Onnx__ModelProto *m;
  mil_status st = unpack(data, len, name, o, out, &m, d);
  return st == MIL_OK ? import_model(m, name, dir, o, out, d) : st;
}

mil_status mil_onnx_import(const char *path, const mil_onnx_options *opts, mil_model **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!path) return mil_diag_error(d, MIL_ERR_INVALID, "mil_onnx_import: path is NULL");
  size_t len;
  mil_status st;
  const void *map = io_fs_map_regular(path, "ONNX model", &len, &st, d);
  if (!map) return st;
  char *dir = strdup(path);
  if (!dir) {
    if (len) munmap((void *)map, len);
    return MIL_ERR_NOMEM;
  }
  char *slash = strrchr(dir, '/');
  if (slash) slash[slash == dir ? 1 : 0] = 0;
  else strcpy(dir, ".");
  mil_onnx_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const mil_onnx_options *o = opts ? opts : &dflt;
  Onnx__ModelProto *m;
  st = unpack(map, len, path, o, out, &m, d);
  /* protobuf-c copied what it keeps (raw_data included): the file's pages
   * need not stay resident through the conversion */
  if (len) munmap((void *)map, len);
  if (st == MIL_OK) st = import_model(m, path, dir, o, out, d);
  free(dir);
  return st;
}

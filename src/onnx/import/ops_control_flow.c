/* ONNX control flow: If (then_branch / else_branch subgraphs) and Loop
 * (trip count M, condition, loop-carried values), as coremltools' torch
 * frontend builds MIL's cond and while_loop: the subgraphs are converted
 * into the op's nested blocks, seeing the outer values through the name
 * scopes. An If whose condition is known at conversion time is replaced by
 * the nodes of the branch it takes. Loop scan outputs are not converted. */
#include <string.h>

#include "onnx/import/import_internal.h"
#include "build/build.h"

static const Onnx__GraphProto *graph_attr(const onnx_node *n, const char *name) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  return a ? a->g : NULL;
}

/* A scalar view of a one-element tensor (ONNX conditions and counts are
 * often shape [1]). */
static mil_var *scalar(onnx_ctx *c, mil_var *v, mil_dtype dt) {
  if (!v) return NULL;
  v = onnx_cast(c, v, dt);
  if (v && onnx_rank(v) > 0) v = ONNX_OP(c, "reshape", A("x", v), K("shape", onnx_i32s(c, 0, NULL)));
  return v;
}

/* Converts subgraph g into block b (attached to its op already) with a new
 * scope; binds[i] (n_binds of them) are bound to g's inputs first; the
 * block's outputs are g's outputs, after `extra` leading vars. */
static mil_status build_block(onnx_ctx *c, mil_block *b, const Onnx__GraphProto *g, mil_var *const *binds,
                              int32_t n_binds) {
  mil_block *save = c->blk;
  onnx_node *node = c->node;
  c->blk = b;
  mil_status st = onnx_scope_push(c);
  for (int32_t i = 0; st == MIL_OK && i < n_binds && (size_t)i < g->n_input; i++)
    st = onnx_bind(c, g->input[i]->name ? g->input[i]->name : "", binds[i]);
  if (st == MIL_OK) st = onnx_convert_nodes(c, g);
  c->node = node;
  if (st == MIL_OK)
    st = onnx_block_outputs(c, b, (const Onnx__ValueInfoProto *const *)g->output, g->n_output, false);
  onnx_scope_pop(c);
  c->blk = save;
  return st;
}

/* MIL's cond needs its branches' outputs to agree (one dtype and rank,
 * sizes equal or symbolic on either side; coremltools' is_compatible_type):
 * outputs that do not are refused here with both types named (ONNX
 * Runtime picks a branch at run time; a branch output whose size depends
 * on the branch has no MIL type). */
static mil_status check_branches(onnx_ctx *c, mil_block *tb, mil_block *fb) {
  for (int32_t i = 0; i < tb->n_outputs; i++) {
    const mil_type *a = tb->outputs[i].var->type, *b = fb->outputs[i].var->type;
    if (!mil_type_is_tensor(a) || !mil_type_is_tensor(b) || mil_type_equal(a, b)) continue;
    bool ok = a->dtype == b->dtype && a->rank == b->rank;
    for (int32_t k = 0; ok && k < a->rank; k++)
      ok = a->dims[k].size < 0 || b->dims[k].size < 0 || a->dims[k].size == b->dims[k].size;
    if (!ok) {
      char s1[128], s2[128];
      return ONNX_UNSUP(c, "output %d is %s in then_branch but %s in else_branch: MIL's cond needs one dtype, rank "
                        "and size (--input-shape can make a shape-dependent condition known)",
                        (int)i, mil_type_to_string(a, s1, sizeof s1), mil_type_to_string(b, s2, sizeof s2));
    }
  }
  return MIL_OK;
}

static mil_status conv_if(onnx_ctx *c, onnx_node *n) {
  mil_var *pred = onnx_req(c, n, 0);
  const Onnx__GraphProto *tg = graph_attr(n, "then_branch"), *fg = graph_attr(n, "else_branch");
  if (!pred) return MIL_ERR_INVALID;
  if (!tg || !fg) return onnx_fail(c, MIL_ERR_INVALID, "then_branch and else_branch are required");
  if (pred->val && pred->val->numel >= 1) {
    /* known condition: the taken branch's nodes, inline */
    const Onnx__GraphProto *g = mil_value_get_i64(pred->val, 0) ? tg : fg;
    onnx_node *node = c->node;
    mil_status st = onnx_scope_push(c);
    if (st == MIL_OK) st = onnx_convert_nodes(c, g);
    c->node = node;
    mil_var *outs[64];
    if ((size_t)n->n_out > 64 || g->n_output < (size_t)n->n_out) st = onnx_fail(c, MIL_ERR_UNSUPPORTED, "output count");
    for (int32_t i = 0; st == MIL_OK && i < n->n_out; i++)
      if (!(outs[i] = onnx_lookup(c, g->output[i]->name)))
        st = onnx_fail(c, MIL_ERR_INVALID, "branch output '%s' is produced by no node", g->output[i]->name);
    onnx_scope_pop(c);
    for (int32_t i = 0; st == MIL_OK && i < n->n_out; i++) {
      mil_var *v = outs[i];
      /* a value of the outer scope (or one named already) is passed through an identity */
      if (!v->op || v->func_input_of || mil_op_is_const(v->op)) v = ONNX_OP(c, "identity", A("x", v));
      st = onnx_set_out(c, n, i, v);
    }
    return st;
  }
  mil_var *p = scalar(c, pred, MIL_DT_BOOL);
  if (!p) return MIL_ERR_TYPE;
  pass_names *names = pass_bld_names(&c->bld);
  mil_op *op = mil_op_new(c->p, "cond", names ? pass_names_fresh(names, c->p, "cond") : "cond");
  if (!op) return MIL_ERR_NOMEM;
  mil_op_add_input(op, "pred", p);
  mil_block_append(c->blk, op);
  mil_block *tb = mil_block_new(c->p, NULL), *fb = mil_block_new(c->p, NULL);
  if (!tb || !fb) return MIL_ERR_NOMEM;
  mil_op_add_block(op, tb);
  mil_op_add_block(op, fb);
  mil_status st = build_block(c, tb, tg, NULL, 0);
  if (st == MIL_OK) st = build_block(c, fb, fg, NULL, 0);
  if (st != MIL_OK) return st;
  if (tb->n_outputs != fb->n_outputs)
    return onnx_fail(c, MIL_ERR_INVALID, "then_branch returns %d values, else_branch %d", (int)tb->n_outputs,
                     (int)fb->n_outputs);
  if ((st = check_branches(c, tb, fb)) != MIL_OK) return st;
  for (int32_t i = 0; i < tb->n_outputs; i++)
    if (!mil_op_add_output(op, pass_names_fresh(names, c->p, op->name), tb->outputs[i].var->type)) return MIL_ERR_NOMEM;
  if ((st = pass_finish_op(op, c->d)) != MIL_OK) return st;
  for (int32_t i = 0; st == MIL_OK && i < n->n_out && i < op->n_outputs; i++) st = onnx_set_out(c, n, i, op->outputs[i]);
  return st;
}

/* An empty list (make_list, growing) of tensors of the static type et;
 * a scalar's list holds (1,) tensors (make_list's elem_shape is a
 * non-empty tuple), the stacked result squeezed back. */
static mil_var *new_list(onnx_ctx *c, const mil_type *et) {
  int64_t shape[MIL_INTERP_MAX_RANK_ONNX] = {1};
  for (int32_t j = 0; j < et->rank && j < MIL_INTERP_MAX_RANK_ONNX; j++) shape[j] = et->dims[j].size;
  return ONNX_OP(c, "make_list", K("init_length", onnx_i32(c, 0)), K("dynamic_length", onnx_bool(c, true)),
                 K("elem_shape", onnx_i32s(c, et->rank ? et->rank : 1, shape)),
                 K("dtype", onnx_str(c, mil_dtype_name(et->dtype))));
}

/* Loop: while_loop over (i, cond, v..., lists...) with the cond block
 * i < M and cond, the body block the ONNX body plus i + 1; each scan
 * output is a list (make_list) that the body writes at index i
 * (list_write) and list_gather stacks after the loop. */
static mil_status conv_loop(onnx_ctx *c, onnx_node *n) {
  const Onnx__GraphProto *g = graph_attr(n, "body");
  if (!g) return onnx_fail(c, MIL_ERR_INVALID, "the body attribute is required");
  int32_t nv = n->n_in - 2;
  if (nv < 0) nv = 0;
  int32_t ns = (int32_t)g->n_output - 1 - nv;
  if (ns < 0) return onnx_fail(c, MIL_ERR_INVALID, "the body has %d outputs for %d loop-carried values", (int)g->n_output, (int)nv);
  if ((int32_t)g->n_input != nv + 2) return onnx_fail(c, MIL_ERR_INVALID, "the body has %d inputs, expected %d",
                                                      (int)g->n_input, (int)nv + 2);
  mil_var *M = onnx_in(n, 0) ? scalar(c, onnx_in(n, 0), MIL_DT_INT32) : NULL;
  mil_var *cond0 = onnx_in(n, 1) ? scalar(c, onnx_in(n, 1), MIL_DT_BOOL) : onnx_const(c, onnx_bool(c, true));
  mil_var *i0 = onnx_const(c, onnx_i32(c, 0));
  if (!cond0 || !i0 || (onnx_in(n, 0) && !M)) return MIL_ERR_TYPE;
  int32_t nl = nv + 2 + ns; /* loop vars */
  mil_var **vars = mil_program_alloc(c->p, (size_t)nl * sizeof *vars);
  if (!vars) return MIL_ERR_NOMEM;
  vars[0] = i0;
  vars[1] = cond0;
  for (int32_t k = 0; k < nv; k++)
    if (!(vars[2 + k] = onnx_req(c, n, 2 + k))) return MIL_ERR_INVALID;
  bool *scalar_k = mil_program_alloc(c->p, (size_t)(ns ? ns : 1) * sizeof *scalar_k);
  if (!scalar_k) return MIL_ERR_NOMEM;
  /* a scan output's list holds the element type the body declares; one
   * the body declares no type for (as ONNX's function expansions leave
   * them) holds the type of the body's converted value, so its list is
   * made once the body is built */
  for (int32_t k = 0; k < ns; k++) {
    const Onnx__ValueInfoProto *vo = g->output[1 + nv + k];
    if (!vo->type) {
      vars[2 + nv + k] = NULL;
      continue;
    }
    const mil_type *et = onnx_value_info_type(c, vo);
    if (!et || !mil_type_is_static(et)) return ONNX_UNSUP(c, "scan output %d has no static type in the body", (int)k);
    scalar_k[k] = et->rank == 0;
    if (!(vars[2 + nv + k] = new_list(c, et))) return MIL_ERR_TYPE;
  }
  pass_names *names = pass_bld_names(&c->bld);
  mil_op *op = mil_op_new(c->p, "while_loop", pass_names_fresh(names, c->p, "while_loop"));
  if (!op) return MIL_ERR_NOMEM;
  mil_block *cb = mil_block_new(c->p, NULL), *bb = mil_block_new(c->p, NULL);
  if (!cb || !bb) return MIL_ERR_NOMEM;
  mil_op_add_block(op, cb);
  mil_op_add_block(op, bb);
  mil_var **cin = mil_program_alloc(c->p, (size_t)nl * sizeof *cin);
  mil_var **bin = mil_program_alloc(c->p, (size_t)nl * sizeof *bin);
  if (!cin || !bin) return MIL_ERR_NOMEM;
  for (int32_t k = 0; k < nv + 2; k++) {
    cin[k] = mil_block_add_input(cb, pass_names_fresh(names, c->p, "loop_var"), vars[k]->type);
    bin[k] = mil_block_add_input(bb, pass_names_fresh(names, c->p, "loop_var"), vars[k]->type);
    if (!cin[k] || !bin[k]) return MIL_ERR_NOMEM;
  }
  /* cond block */
  mil_block *save = c->blk;
  c->blk = cb;
  mil_var *go = cin[1];
  if (M) go = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "less", A("x", cin[0]), A("y", M))), A("y", go));
  else go = ONNX_OP(c, "identity", A("x", go));
  c->blk = save;
  if (!go) return MIL_ERR_TYPE;
  mil_block_set_outputs(cb, 1, &go);
  /* body block: the ONNX body, then (i + 1, cond_out, v_out...) */
  mil_status st = build_block(c, bb, g, bin, nv + 2);
  if (st != MIL_OK) return st;
  for (int32_t k = 0; k < ns; k++) {
    if (vars[2 + nv + k]) continue;
    const mil_type *et = bb->outputs[1 + nv + k].var->type;
    if (!mil_type_is_tensor(et) || !mil_type_is_static(et))
      return ONNX_UNSUP(c, "scan output %d has no static type in the body", (int)k);
    scalar_k[k] = et->rank == 0;
    if (!(vars[2 + nv + k] = new_list(c, et))) return MIL_ERR_TYPE;
  }
  for (int32_t k = nv + 2; k < nl; k++) {
    cin[k] = mil_block_add_input(cb, pass_names_fresh(names, c->p, "loop_var"), vars[k]->type);
    bin[k] = mil_block_add_input(bb, pass_names_fresh(names, c->p, "loop_var"), vars[k]->type);
    if (!cin[k] || !bin[k]) return MIL_ERR_NOMEM;
  }
  mil_op_add_input_tuple(op, "loop_vars", nl, vars);
  mil_block_append(c->blk, op);
  c->blk = bb;
  mil_var *inext = ONNX_OP(c, "add", A("x", bin[0]), K("y", onnx_i32(c, 1)));
  mil_var *cnext = scalar(c, bb->outputs[0].var, MIL_DT_BOOL);
  mil_var **lnext = mil_program_alloc(c->p, (size_t)(ns ? ns : 1) * sizeof *lnext);
  for (int32_t k = 0; lnext && k < ns; k++) {
    /* the element as the list holds it (the body may have lost its static shape) */
    const mil_type *et = vars[2 + nv + k]->op->outputs[0]->type->elem;
    mil_var *val = bb->outputs[1 + nv + k].var;
    if (et && !mil_type_equal(val->type, et)) {
      int64_t shape[MIL_INTERP_MAX_RANK_ONNX];
      for (int32_t j = 0; j < et->rank && j < MIL_INTERP_MAX_RANK_ONNX; j++) shape[j] = et->dims[j].size;
      val = ONNX_OP(c, "reshape", A("x", val), K("shape", onnx_i32s(c, et->rank, shape)));
    }
    lnext[k] = val ? ONNX_OP(c, "list_write", A("ls", bin[2 + nv + k]), A("index", bin[0]), A("value", val)) : NULL;
  }
  c->blk = save;
  if (!inext || !cnext || !lnext) return MIL_ERR_TYPE;
  mil_var **outs = mil_program_alloc(c->p, (size_t)nl * sizeof *outs);
  if (!outs) return MIL_ERR_NOMEM;
  outs[0] = inext;
  outs[1] = cnext;
  for (int32_t k = 0; k < nv; k++) {
    outs[2 + k] = bb->outputs[1 + k].var;
    const mil_type *want = vars[2 + k]->type, *got = outs[2 + k]->type;
    if (!mil_type_equal(got, want) && mil_type_is_static(want) && got->dtype == want->dtype && got->rank == want->rank) {
      /* the body lost the static shape the value keeps: say it again */
      int64_t shape[MIL_INTERP_MAX_RANK_ONNX];
      for (int32_t j = 0; j < want->rank && j < MIL_INTERP_MAX_RANK_ONNX; j++) shape[j] = want->dims[j].size;
      c->blk = bb;
      outs[2 + k] = ONNX_OP(c, "reshape", A("x", outs[2 + k]), K("shape", onnx_i32s(c, want->rank, shape)));
      c->blk = save;
      if (!outs[2 + k]) return MIL_ERR_TYPE;
    }
    if (!mil_type_equal(outs[2 + k]->type, want))
      return ONNX_UNSUP(c, "loop-carried value %d changes its type across iterations", (int)k);
  }
  for (int32_t k = 0; k < ns; k++)
    if (!(outs[2 + nv + k] = lnext[k])) return MIL_ERR_TYPE;
  mil_block_set_outputs(bb, nl, outs);
  for (int32_t k = 0; k < nl; k++)
    if (!mil_op_add_output(op, pass_names_fresh(names, c->p, op->name), vars[k]->type)) return MIL_ERR_NOMEM;
  if ((st = pass_finish_op(op, c->d)) != MIL_OK) return st;
  for (int32_t k = 0; st == MIL_OK && k < nv && k < n->n_out; k++) st = onnx_set_out(c, n, k, op->outputs[2 + k]);
  if (ns && st == MIL_OK) {
    mil_var *idx = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", op->outputs[0]), K("step", onnx_i32(c, 1)));
    for (int32_t k = 0; st == MIL_OK && k < ns; k++)
    {
      mil_var *r = ONNX_OP(c, "list_gather", A("ls", op->outputs[2 + nv + k]), A("indices", idx));
      if (scalar_k[k]) r = ONNX_OP(c, "squeeze", A("x", r), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
      st = onnx_set_out(c, n, nv + k, r);
    }
  }
  return st;
}

const onnx_op_entry onnx_ops_control_flow[] = {
    {"If", "", 1, 0, conv_if, "cond"},
    {"Loop", "", 1, 0, conv_loop, "while_loop, make_list, list_write, list_gather (squeeze for scalars)"},
    {NULL, NULL, 0, 0, NULL, NULL},
};

/* The MIL text printer: programs in the coremltools form (what
 * print(program) shows) and in the complete form (the .mil format).
 *
 * The layout follows coremltools exactly:
 *   program.py  Program.__str__     "\n" before each function
 *   function.py Function.to_str     "main[CoreML7](%x: ...,\n<pad>%y: ...) {\n" body "}\n"
 *   block.py    Block.indented_str  "  block0(<inputs>) {\n" ops "  } -> (%a, %b)\n"
 *   operation.py indented_str       "<outputs> = op(<k>=<v>, ..., name=\"n\")\n" nested blocks
 *                var_to_str          tuple "(%a, %b)", small const inline, else "%name"
 *   var.py      Var.__str__         "%name: " shape_str type_str
 *
 * For example (complete form; the coremltools form drops the const line and
 * prints y=2.0 instead of y=%c):
 *
 *   main[CoreML7](%x: (1, 3, fp32)(Tensor)) {
 *     block0() {
 *       %c: (fp32)*(Scalar) = const(val=2.0, name="c")
 *       %m: (1, 3, fp32)(Tensor) = mul(x=%x, y=%c, name="m")
 *     } -> (%m)
 *   }
 */
#include <string.h>

#include "io/io_internal.h"

typedef struct printer {
  io_out o;
  bool complete;
  bool blob_refs;
  uint64_t next_block; /* for blocks without a name */
} printer;

static inline void put(io_out *o, const char *s, size_t n) {
  if (!io_out_room(o, n)) return;
  memcpy(o->b->data + o->b->len, s, n);
  o->b->len += n;
}


static inline void spaces(io_out *o, size_t n) {
  if (!io_out_room(o, n)) return;
  memset(o->b->data + o->b->len, ' ', n);
  o->b->len += n;
}

static inline void bput(mil_buf *b, const char *s, size_t n) {
  if (!io_buf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

/* ---------- types (var.py Var.shape_str / type_str, ListVar.shape_str) ---------- */

static void put_dim(mil_buf *b, const mil_dim *d) {
  if (d->variadic) bput(b, "*", 1);
  if (d->size >= 0 && !d->variadic) {
    char tmp[24];
    bput(b, tmp, (size_t)io_fmt_i64(tmp, d->size));
  } else if (d->sym) {
    bput(b, d->sym, strlen(d->sym));
  } else {
    bput(b, "?", 1);
  }
}

/* "(d0, d1, dtype)" / "(d0,dtype)" / "(dtype)": Python's str(shape) with the
 * closing paren replaced by the dtype, so rank 1 keeps the tuple's comma. */
static void put_shape_dtype(mil_buf *b, const mil_type *t) {
  bput(b, "(", 1);
  if (t->rank < 0) {
    static const mil_dim any = {-1, NULL, true};
    put_dim(b, &any);
    bput(b, ",", 1);
  } else {
    for (int32_t i = 0; i < t->rank; i++) {
      if (i) bput(b, ", ", 2);
      if (t->dims) put_dim(b, &t->dims[i]);
      else bput(b, "?", 1);
    }
    if (t->rank == 1) bput(b, ",", 1);
    if (t->rank > 1) bput(b, ", ", 2);
  }
  const char *dn = mil_dtype_name(t->dtype);
  bput(b, dn, strlen(dn));
  bput(b, ")", 1);
}

static void put_list_elem(mil_buf *b, const mil_type *e) {
  if (!e || e->kind == MIL_TYPE_UNKNOWN) {
    bput(b, "unknown", 7);
  } else if (e->kind == MIL_TYPE_TENSOR && e->is_scalar && e->dtype == MIL_DT_STRING) {
    bput(b, "str", 3);
  } else if (e->kind == MIL_TYPE_TENSOR && e->is_scalar && e->dtype == MIL_DT_INT64) {
    bput(b, "int", 3);
  } else if (e->kind == MIL_TYPE_TENSOR) {
    put_shape_dtype(b, e);
  } else if (e->kind == MIL_TYPE_LIST) {
    io_print_type(b, e, MIL_MARK_NONE);
  } else {
    bput(b, "unknown", 7);
  }
}

void io_print_type(mil_buf *b, const mil_type *t, mil_mark mark) {
  static const char marks[3] = {0, '*', '^'};
  char m = mark >= MIL_MARK_NONE && mark <= MIL_MARK_SYMBOLIC ? marks[mark] : 0;
  if (!t) {
    bput(b, "(unknown)(Scalar)", 17);
    return;
  }
  switch (t->kind) {
  case MIL_TYPE_TENSOR:
    put_shape_dtype(b, t);
    if (m) bput(b, &m, 1);
    if (t->is_scalar) bput(b, "(Scalar)", 8);
    else bput(b, "(Tensor)", 8);
    return;
  case MIL_TYPE_STATE:
    if (t->elem && t->elem->kind == MIL_TYPE_TENSOR) put_shape_dtype(b, t->elem);
    else bput(b, "(unknown)", 9);
    if (m) bput(b, &m, 1);
    bput(b, "(State)", 7);
    return;
  case MIL_TYPE_LIST: {
    bput(b, "List[", 5);
    if (t->length.size >= 0) {
      char tmp[24];
      bput(b, tmp, (size_t)io_fmt_i64(tmp, t->length.size));
    } else {
      bput(b, "?", 1);
    }
    bput(b, ", ", 2);
    put_list_elem(b, t->elem);
    bput(b, "](List)", 7);
    return;
  }
  case MIL_TYPE_DICT: bput(b, "(dict)", 6); break;
  case MIL_TYPE_TUPLE: bput(b, "(tuple)", 7); break;
  default: bput(b, "(unknown)", 9); break;
  }
  if (m) bput(b, &m, 1);
  bput(b, "(Scalar)", 8);
}

/* "%name: <type>"; function inputs never carry a marker. */
static void put_var_decl(printer *pr, const mil_var *v, bool with_mark) {
  io_out *o = &pr->o;
  put(o, "%", 1);
  io_print_name(o, v->name ? v->name : "");
  put(o, ": ", 2);
  mil_mark mark = MIL_MARK_NONE;
  if (with_mark) mark = v->val ? MIL_MARK_VALUE : v->mark;
  io_print_type(o->b, v->type, mark);
}

static void put_var_ref(io_out *o, const mil_var *v) {
  put(o, "%", 1);
  io_print_name(o, v && v->name ? v->name : "");
}

/* ---------- ops ---------- */

/* One operand: by name, or inline when coremltools would show it inline. */
static void put_arg(printer *pr, const mil_arg *a, bool in_tuple) {
  if (a->value) {
    io_print_value(&pr->o, a->value, pr->complete);
    return;
  }
  const mil_var *v = a->use.var;
  if (!pr->complete && !in_tuple && v && v->val && v->op && mil_op_is_const(v->op)) {
    const mil_value *val = v->val;
    if (val->kind != MIL_VAL_TENSOR || val->numel <= 10) {
      io_print_value(&pr->o, val, false);
      return;
    }
  }
  put_var_ref(&pr->o, v);
}

static void put_input(printer *pr, const mil_input *in) {
  io_out *o = &pr->o;
  io_print_name(o, in->name ? in->name : "");
  put(o, "=", 1);
  if (in->is_tuple || in->n_args != 1) {
    put(o, "(", 1);
    for (int32_t i = 0; i < in->n_args; i++) {
      if (i) put(o, ", ", 2);
      put_arg(pr, &in->args[i], true);
    }
    put(o, ")", 1);
  } else {
    put_arg(pr, &in->args[0], false);
  }
}

static void print_block(printer *pr, const mil_block *b, size_t indent);

static void print_op(printer *pr, const mil_op *op, size_t indent) {
  io_out *o = &pr->o;
  bool is_const = mil_op_is_const(op);
  if (is_const && !pr->complete) return;
  spaces(o, indent);
  for (int32_t i = 0; i < op->n_outputs; i++) {
    if (i) put(o, ", ", 2);
    put_var_decl(pr, op->outputs[i], true);
  }
  put(o, " = ", 3);
  io_print_name(o, op->type ? op->type : "");
  put(o, "(", 1);
  bool first = true;
  if (is_const && op->n_outputs > 0 && op->outputs[0]->val) {
    const mil_value *val = op->outputs[0]->val;
    put(o, "val=", 4);
    if (pr->blob_refs && val->blob_file) {
      put(o, "@blob(", 6);
      io_print_string(o, val->blob_file, true);
      char tmp[24];
      put(o, ", ", 2);
      put(o, tmp, (size_t)io_fmt_u64(tmp, val->blob_offset));
      put(o, ")", 1);
    } else {
      io_print_value(o, val, true);
    }
    first = false;
  }
  for (int32_t i = 0; i < op->n_inputs; i++) {
    if (!first) put(o, ", ", 2);
    first = false;
    put_input(pr, &op->inputs[i]);
  }
  put(o, ", name=", 7);
  io_print_string(o, op->name ? op->name : "", pr->complete);
  put(o, ")\n", 2);
  for (int32_t i = 0; i < op->n_blocks; i++) print_block(pr, op->blocks[i], indent + 2);
}

/* ---------- blocks, functions, programs ---------- */

static void print_block(printer *pr, const mil_block *b, size_t indent) {
  io_out *o = &pr->o;
  spaces(o, indent);
  if (b->name) {
    io_print_name(o, b->name);
  } else {
    char tmp[32] = "block";
    put(o, tmp, 5 + (size_t)io_fmt_u64(tmp + 5, pr->next_block++));
  }
  put(o, "(", 1);
  for (int32_t i = 0; i < b->n_inputs; i++) {
    if (i) put(o, ", ", 2);
    put_var_decl(pr, b->inputs[i], true);
  }
  put(o, ") {\n", 4);
  for (const mil_op *op = b->first; op; op = op->next) print_op(pr, op, indent + 2);
  spaces(o, indent);
  put(o, "} -> (", 6);
  for (int32_t i = 0; i < b->n_outputs; i++) {
    if (i) put(o, ", ", 2);
    put_var_ref(o, b->outputs[i].var);
  }
  put(o, ")\n", 2);
}

/* Python's len() of a UTF-8 string: code points, not bytes. */
static size_t utf8_len(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

static void print_function(printer *pr, const mil_function *f) {
  io_out *o = &pr->o;
  const char *name = f->name ? f->name : "", *opset = f->opset ? f->opset : "";
  io_print_name(o, name);
  put(o, "[", 1);
  io_print_name(o, opset);
  put(o, "](", 2);
  size_t pad = utf8_len(name) + utf8_len(opset) + 3; /* len("name[opset]") + 1 */
  for (int32_t i = 0; i < f->n_inputs; i++) {
    if (i) {
      put(o, ",\n", 2);
      spaces(o, pad);
    }
    put_var_decl(pr, f->inputs[i], false);
  }
  put(o, ") {\n", 4);
  const mil_block *body = mil_function_body(f);
  if (body) print_block(pr, body, 2);
  put(o, "}\n", 2);
}

static void print_program(printer *pr, const mil_program *p) {
  for (int32_t i = 0; i < p->n_functions; i++) {
    put(&pr->o, "\n", 1);
    print_function(pr, p->functions[i]);
  }
}

static void printer_init(printer *pr, const mil_program *p, const mil_print_options *opt, mil_buf *b, FILE *f) {
  memset(pr, 0, sizeof *pr);
  pr->o.b = b;
  pr->o.f = f;
  pr->complete = opt && opt->form == MIL_PRINT_COMPLETE;
  pr->blob_refs = opt && opt->blob_refs;
  pr->next_block = p->next_block_id;
}

void mil_print_program(const mil_program *p, const mil_print_options *opt, mil_buf *out) {
  if (!p || !out) return;
  printer pr;
  printer_init(&pr, p, opt, out, NULL);
  print_program(&pr, p);
  if (!out->oom && io_buf_reserve(out, 0)) out->data[out->len] = '\0';
}

mil_status mil_print_program_file(const mil_program *p, const mil_print_options *opt, FILE *f) {
  if (!p || !f) return MIL_ERR_INVALID;
  mil_buf b = {0};
  printer pr;
  printer_init(&pr, p, opt, &b, f);
  print_program(&pr, p);
  bool oom = b.oom;
  if (!oom) io_out_drain(&pr.o);
  mil_buf_free(&b);
  if (oom) return MIL_ERR_NOMEM;
  if (pr.o.err || fflush(f) != 0 || ferror(f)) return MIL_ERR_IO;
  return MIL_OK;
}

/* The ONNX importer's internals: the conversion context, node access,
 * op building helpers and the converter table shared by the op family
 * files (src/onnx/ops_<family>.c). */
#ifndef MIL_ONNX_IMPORT_INTERNAL_H
#define MIL_ONNX_IMPORT_INTERNAL_H

#include "mil/onnx.h"
#include "mil/ops.h"
#include "onnx.pb-c.h"
#include "build/build.h"

/* Largest rank the converters handle in fixed-size arrays. */
#define MIL_INTERP_MAX_RANK_ONNX 16

typedef struct onnx_ctx onnx_ctx;

typedef struct onnx_scope onnx_scope;

/* A node being converted: its proto, resolved inputs and opset. */
typedef struct onnx_op_entry onnx_op_entry;
typedef struct onnx_node {
  const Onnx__NodeProto *proto;
  const onnx_op_entry *entry; /* its converter (entry->mil_ops names the MIL op of simple maps) */
  const char *name;    /* node name, or its first output when unnamed */
  const char *op_type;
  const char *domain;  /* "" for ai.onnx */
  int opset;           /* the opset the model imports for the domain */
  int32_t n_in;        /* proto inputs (trailing empty ones included) */
  mil_var **in;        /* NULL for an absent (empty-named) input */
  int32_t n_out;
} onnx_node;

typedef mil_status (*onnx_conv_fn)(onnx_ctx *c, onnx_node *n);

/* One converter: op_type in domain for opsets since..until (until 0 =
 * MIL_ONNX_OPSET_KNOWN). */
struct onnx_op_entry {
  const char *op_type;
  const char *domain; /* "" = ai.onnx */
  int since, until;
  onnx_conv_fn fn;
  const char *mil_ops; /* the MIL ops emitted (for one-op maps: that op's type) */
};

/* Each family file defines `const onnx_op_entry onnx_ops_<family>[]`
 * ending with a {NULL} entry; src/onnx/ops_families.def lists the files. */
#define ONNX_FAMILY(name) extern const onnx_op_entry onnx_ops_##name[];
#include "onnx/import/ops_families.def"
#undef ONNX_FAMILY

struct onnx_ctx {
  mil_program *p;
  mil_diag *d;
  pass_bld bld;         /* fresh names, op building */
  mil_block *blk;       /* where ops are appended */
  onnx_scope *scope;    /* ONNX value name -> var */
  int opset;            /* ai.onnx opset of the model */
  int target;           /* MIL opset version (MIL_IOS15 ...) */
  const char *path;     /* model file, for messages */
  const char *dir;      /* directory for external data */
  const Onnx__ModelProto *model;
  onnx_node *node;      /* the node being converted (messages) */
  pass_ptrset named;    /* vars that carry an ONNX name */
  onnx_scope *san;      /* ONNX name -> sanitized MIL name */
  onnx_scope *seqs;     /* ONNX name -> onnx_seq (sequences known at conversion) */
  bool views;           /* some value views the decoded message's raw_data */
  const char *names_json; /* renamed inputs / outputs (MIL_ONNX_NAMES_KEY), interned; NULL: none */
  struct onnx_clip *clips; /* int64 constants clipped to int32 (arena list; shape inputs refuse them) */
  int64_t nms_max_boxes; /* mil_onnx_options.nms_max_boxes */
};

/* An int64 (or uint64) constant some element of which did not fit the
 * int32 MIL narrows it to, and was clipped (as coremltools does). */
typedef struct onnx_clip {
  const mil_value *v;   /* the int32 value */
  int64_t index;        /* the first clipped element */
  long double orig;     /* its value in the model */
  struct onnx_clip *next;
} onnx_clip;

/* Refuses input i of n when its value is a clipped int64 constant: a shape,
 * count or range bound beyond int32 would otherwise silently become
 * 2^31 - 1 (what = "shape", "repeats", ...). MIL_OK when it is not. */
mil_status onnx_refuse_clipped(onnx_ctx *c, const onnx_node *n, int32_t i, const char *what);

/* ---------- errors ---------- */

/* Records "FILE: node 'NAME' (OP_TYPE, domain D, opset N): <msg>" and
 * returns st. */
mil_status onnx_fail(onnx_ctx *c, mil_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* MIL_ERR_UNSUPPORTED with the message. */
#define ONNX_UNSUP(c, ...) onnx_fail((c), MIL_ERR_UNSUPPORTED, __VA_ARGS__)

/* ---------- attributes ---------- */

const Onnx__AttributeProto *onnx_attr(const onnx_node *n, const char *name);
int64_t onnx_attr_i(const onnx_node *n, const char *name, int64_t dflt);
float onnx_attr_f(const onnx_node *n, const char *name, float dflt);
/* String attribute (NUL-terminated copy in the program arena) or dflt. */
const char *onnx_attr_s(onnx_ctx *c, const onnx_node *n, const char *name, const char *dflt);
/* INTS attribute: count (-1 when absent) and the array. */
int32_t onnx_attr_ints(const onnx_node *n, const char *name, const int64_t **out);
int32_t onnx_attr_floats(const onnx_node *n, const char *name, const float **out);

/* ---------- inputs and outputs ---------- */

/* Input i, or NULL when absent / out of range. */
static inline mil_var *onnx_in(const onnx_node *n, int32_t i) { return i < n->n_in ? n->in[i] : NULL; }
/* Input i, or an error "input i (NAME) is required". */
mil_var *onnx_req(onnx_ctx *c, const onnx_node *n, int32_t i);
/* Binds output i of the node to v (naming v after it when v is fresh). */
mil_status onnx_set_out(onnx_ctx *c, onnx_node *n, int32_t i, mil_var *v);
/* Whether output i is wanted (present and non-empty). */
bool onnx_out_used(const onnx_node *n, int32_t i);

/* The compile-time value of v (const or folded), or NULL. */
static inline const mil_value *onnx_val(const mil_var *v) { return v ? v->val : NULL; }
/* A known int tensor's elements as int64 (n set to count); false when v
 * has no known value. The array is arena memory. */
bool onnx_val_ints(onnx_ctx *c, const mil_var *v, int64_t **out, int32_t *n);
/* Rank of a tensor var (-1 unknown), its dtype. */
int32_t onnx_rank(const mil_var *v);
mil_dtype onnx_dtype(const mil_var *v);

/* ---------- building ---------- */

#define A(nm, v) PASS_BV(nm, v)
#define K(nm, v) PASS_BK(nm, v)
#define AT(nm, vs, cnt) ((pass_barg){.name = (nm), .vars = (vs), .n = (cnt)})

/* Appends an op of `type` with args to the current block, fresh-named
 * after the type; returns its first output, NULL on failure (recorded). */
mil_var *onnx_op(onnx_ctx *c, const char *type, int32_t n, const pass_barg *args);
/* Same returning the op (for multi-output ops). */
mil_op *onnx_op_full(onnx_ctx *c, const char *type, int32_t n, const pass_barg *args);
#define ONNX_OP(c, type, ...) \
  onnx_op((c), (type), (int32_t)(sizeof((pass_barg[]){__VA_ARGS__}) / sizeof(pass_barg)), (pass_barg[]){__VA_ARGS__})

/* Attention's core shared by ONNX Attention and the contrib attention ops
 * (ops_transformer.c): softmax(q k^T * scale + bias) v on BNSH operands,
 * scale < 0 the default 1 / sqrt(H); scaled_dot_product_attention from iOS18
 * with the default scale and no softcap. */
mil_var *onnx_attend(onnx_ctx *c, mil_var *q, mil_var *k, mil_var *v, mil_var *bias, double scale, double softcap);

/* Literal values (program arena). */
mil_value *onnx_i32(onnx_ctx *c, int64_t x);
mil_value *onnx_i32s(onnx_ctx *c, int32_t n, const int64_t *xs);
mil_value *onnx_f32(onnx_ctx *c, double x);
mil_value *onnx_fscalar(onnx_ctx *c, mil_dtype dt, double x); /* scalar of dt */
mil_value *onnx_bool(onnx_ctx *c, bool b);
mil_value *onnx_str(onnx_ctx *c, const char *s);
/* A const op holding v; returns its var. */
mil_var *onnx_const(onnx_ctx *c, const mil_value *v);

/* Common op shortcuts. */
mil_var *onnx_cast(onnx_ctx *c, mil_var *x, mil_dtype dt); /* no-op when already dt */
mil_var *onnx_shape_of(onnx_ctx *c, mil_var *x);
/* B of a binary op aligned to A under the pre-opset-7 broadcast / axis
 * attributes (B itself otherwise). */
mil_var *onnx_legacy_broadcast(onnx_ctx *c, onnx_node *n, mil_var *a, mil_var *b);
/* For axes computed at run time (a rank-1 int var of static length) of a
 * rank-R tensor: an int32 (R) vector, 1 where the position is one of the
 * axes (negative ones count from the end); *pos gets range(R). */
mil_var *onnx_axes_mask(onnx_ctx *c, mil_var *axes, int64_t R, mil_var **pos);
/* Normalizes a possibly negative axis against rank; false when out of range. */
bool onnx_axis(int64_t *axis, int32_t rank);

/* RNN (gates 1), GRU (3) or LSTM (4) unrolled over the time steps with
 * matmul and activations (weights may be computed at run time). */
mil_status onnx_rnn_unrolled(onnx_ctx *c, onnx_node *n, int gates);

/* Resize spelled out with gathers along each resized axis (scales or sizes
 * as vars, one of them NULL), for what MIL's resize ops cannot express. */
mil_status onnx_resize_gather(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *scales, mil_var *sizes, const char *mode,
                              const char *coord, const char *nm);

/* ---------- the tensor bridge ---------- */

/* The MIL dtype an ONNX DataType becomes in the program (int64 -> int32,
 * double -> fp32, other ints -> int32); MIL_DT_UNUSED when unsupported. */
mil_dtype onnx_mil_dtype(int onnx_dt);
/* A TensorProto as a MIL value of dtype onnx_mil_dtype(data_type). */
mil_status onnx_tensor_value(onnx_ctx *c, const Onnx__TensorProto *t, mil_value **out);

/* The ONNX element type the main graph declares for value `name`
 * (initializer, input, output, value_info), 0 when unknown: for ops whose
 * meaning depends on a dtype the importer narrows (uint8 vs int8). */
int onnx_declared_elem_type(onnx_ctx *c, const char *name);

/* ---------- sequences ---------- */

/* An ONNX sequence whose structure is known at conversion time: its
 * tensors, in order (arena memory; never changed once bound). */
typedef struct onnx_seq {
  int32_t n;
  mil_var **items;
  mil_dtype dtype;
} onnx_seq;
onnx_seq *onnx_seq_lookup(onnx_ctx *c, const char *name);
mil_status onnx_seq_bind(onnx_ctx *c, const char *name, onnx_seq *s);

/* ---------- graphs ---------- */

/* Converts the nodes of graph g into the current block, with a new name
 * scope whose parent is the current one (outer values visible). Graph
 * inputs must already be bound by the caller (onnx_bind). */
mil_status onnx_convert_nodes(onnx_ctx *c, const Onnx__GraphProto *g);
/* The order to convert g's nodes in (import_order.c): *order (malloc'd,
 * g->n_node indices) is the file's order with each node's producers moved
 * before it where the file lists them later (a subgraph's references to
 * g's values count as inputs of its node). MIL_ERR_INVALID naming a node
 * on a cycle; MIL_ERR_NOMEM. Both recorded in c->d. */
mil_status onnx_graph_order(onnx_ctx *c, const Onnx__GraphProto *g, size_t **order);
/* A graph input's value range known from its declared ONNX type (int16:
 * -32768..32767); name is the MIL input name (interned). */
typedef struct onnx_input_range {
  const char *name;
  double lo, hi;
} onnx_input_range;
/* The static fp16 check (import_fp16_static.c): warns (in d) about each op
 * of p's main body whose value range, propagated from ins and the consts,
 * goes beyond fp16's 65504 while add_fp16_cast (with mil_convert's
 * selector) would compute it in fp16; returns how many. */
int32_t onnx_static_fp16_check(mil_program *p, const onnx_input_range *ins, int32_t n_ins, const char *path,
                               mil_diag *d);
/* Binds ONNX name to var in the current scope. */
mil_status onnx_bind(onnx_ctx *c, const char *name, mil_var *v);
/* The same for a name the graph defines (an input, an initializer, a node
 * output): MIL_ERR_INVALID, naming the value and the node, when the current
 * scope already binds it to another var (ONNX graphs are in SSA form). */
mil_status onnx_bind_new(onnx_ctx *c, const char *name, mil_var *v);
mil_var *onnx_lookup(onnx_ctx *c, const char *name);
/* Pushes / pops a name scope. */
mil_status onnx_scope_push(onnx_ctx *c);
void onnx_scope_pop(onnx_ctx *c);
const char *onnx_san_get(onnx_ctx *c, const char *interned_onnx_name);
mil_status onnx_san_put(onnx_ctx *c, const char *interned_onnx_name, const char *mil_name);
/* Sets the block outputs to the vars of the ONNX names outs[0..n), through
 * an identity where the var cannot itself be the output (rename: name the
 * outputs after the ONNX names, for the main function). */
mil_status onnx_block_outputs(onnx_ctx *c, mil_block *b, const Onnx__ValueInfoProto *const *outs, size_t n,
                              bool rename);
/* coremltools' NameSanitizer (prefix "var_"), unique in the program. */
const char *onnx_sanitize(onnx_ctx *c, const char *name);
/* Sanitizes every value name of graph g and of its subgraphs (inputs,
 * initializers, node outputs, outputs) before conversion, so that the
 * names the importer makes up (fresh op and var names, a sanitized name's
 * "_k" suffix) never take one of them: each ONNX name keeps its sanitized
 * form, and no MIL name is given twice. MIL_ERR_NOMEM (recorded). */
mil_status onnx_reserve_names(onnx_ctx *c, const Onnx__GraphProto *g);
/* Whether name is an ONNX value name of the model (reserved) or bound. */
bool onnx_name_taken(onnx_ctx *c, const char *name);
/* The MIL type of a ValueInfoProto (dtype narrowed), NULL with an error. */
const mil_type *onnx_value_info_type(onnx_ctx *c, const Onnx__ValueInfoProto *vi);

#endif

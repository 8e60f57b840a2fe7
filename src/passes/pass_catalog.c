/* Every graph pass coremltools registers (PASS_REGISTRY), with a one-line
 * description and its options under coremltools' names, types and defaults.
 *
 * The registry (passes.def) holds the passes libmil implements; this
 * catalog lets pipelines name the others, lets `mil passes` list them, and
 * is what an implemented pass's option declaration is checked against
 * (tests/unit/test_pass_manager.c). Option sources in coremltools:
 * cleanup/const_elimination.py (skip_const_by_size),
 * cleanup/const_deduplication.py (const_threshold), quantization.py
 * (op_selector, skip_ops_by_type), transformer.py (min_seq_length,
 * seq_length_divider), symbol_transform.py
 * (function_name_to_materialization_map, source_function_name),
 * optimize_activation_quantization.py (config, activation_stats) and the
 * compression passes' `config`.
 */
#include <string.h>

#include "mil/passes.h"
#include "passes/pass_internal.h"

#define NO_OPTS NULL, 0
#define OPTS(a) a, (int32_t)(sizeof a / sizeof a[0])
#define P(ns, n, doc, opts) {ns "::" #n, doc, opts, NULL, NULL}

static const mil_pass_option_def o_const_elimination[] = {
    {"skip_const_by_size", MIL_POPT_DOUBLE, NULL, false, false, 0, 0,
     "leave ops whose folded value would have more elements than this unfolded (None: fold everything)"},
};
static const mil_pass_option_def o_const_deduplication[] = {
    {"const_threshold", MIL_POPT_INT, "100", false, false, 0, 0,
     "consts with fewer elements than this are not deduplicated"},
};
static const mil_pass_option_def o_add_fp16_cast[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only ops it accepts are cast (C API only)"},
    {"skip_ops_by_type", MIL_POPT_STRING_LIST, "", false, false, 0, 0,
     "op types left in fp32 (comma-separated, e.g. \"mul,const\")"},
};
static const mil_pass_option_def o_add_int16_cast[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only ops it accepts are cast (C API only)"},
};
static const mil_pass_option_def o_sdpa_sliced_q[] = {
    {"min_seq_length", MIL_POPT_INT, "1280", true, false, 0, 0,
     "only attention whose Q sequence length is at least this is sliced"},
    {"seq_length_divider", MIL_POPT_INT, "16", true, false, 1, 0,
     "Q is processed in chunks of seq_length / seq_length_divider"},
};
static const mil_pass_option_def o_materialize[] = {
    {"function_name_to_materialization_map", MIL_POPT_JSON, NULL, false, false, 0, 0,
     "new function name -> {input name -> fixed shape}"},
    {"source_function_name", MIL_POPT_STRING, "main", false, false, 0, 0, "the function whose shapes get fixed"},
};
static const mil_pass_option_def o_insert_qdq[] = {
    {"config", MIL_POPT_JSON, NULL, false, false, 0, 0, "activation quantization config"},
    {"activation_stats", MIL_POPT_JSON, NULL, false, false, 0, 0, "calibration statistics per var"},
};
static const mil_pass_option_def o_compression_config[] = {
    {"config", MIL_POPT_JSON, NULL, false, false, 0, 0, "compression config (global / per type / per op)"},
    {"joint_compression", MIL_POPT_BOOL, "false", false, false, 0, 0,
     "compress weights that are already compressed (iOS18)"},
    {"fake_compression", MIL_POPT_BOOL, "false", false, false, 0, 0,
     "store the decompressed values in a const instead of a constexpr op"},
};
static const mil_pass_option_def o_weight_decompressor[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only constexpr ops it accepts (C API only)"},
};

static const mil_pass_def k_catalog[] = {
    /* common:: passes, as in coremltools/converters/mil/mil/passes/defs */
    P("common", add_conv_transpose_output_shape, "give conv_transpose an explicit output_shape when it is static",
      NO_OPTS),
    P("common", add_fp16_cast, "run fp32 ops in fp16: cast fp32 inputs to fp16 and results back",
      OPTS(o_add_fp16_cast)),
    P("common", add_int16_cast, "run int32 ops that accept it in int16/uint16, casting around them",
      OPTS(o_add_int16_cast)),
    P("common", canonicalize_inplace_pattern, "reorder slice_update/state patterns into the canonical in-place form",
      NO_OPTS),
    P("common", canonicalize_quantized_lut_pattern, "rewrite dequantize-of-LUT patterns into the canonical order",
      NO_OPTS),
    P("common", cast_optimization, "fuse chains of casts and remove casts that change nothing", NO_OPTS),
    P("common", compose_conv1d, "turn expand_dims -> conv2d -> squeeze into one conv1d", NO_OPTS),
    P("common", concat_to_pixel_shuffle, "recognize interleaving concats as pixel_shuffle", NO_OPTS),
    P("common", const_deduplication, "share one const (or constexpr) among equal ones", OPTS(o_const_deduplication)),
    P("common", const_elimination, "replace ops whose outputs are known at compile time by consts",
      OPTS(o_const_elimination)),
    P("common", dead_code_elimination, "remove ops whose results reach no function output", NO_OPTS),
    P("common", dedup_op_and_var_names, "make op and var names unique within each function", NO_OPTS),
    P("common", dequantize_quantize_pair_elimination, "remove dequantize -> quantize pairs that cancel", NO_OPTS),
    P("common", dequantize_to_constexpr, "turn dequantize of a const into constexpr_affine_dequantize", NO_OPTS),
    P("common", detect_concat_interleave, "recognize concat + reshape + transpose interleaving as concat(interleave)",
      NO_OPTS),
    P("common", distributive_quantized_binary_op_scale_normalization,
      "move a quantized binary op's scale to the other operand", NO_OPTS),
    P("common", divide_to_multiply, "replace division by a const with multiplication by its reciprocal", NO_OPTS),
    P("common", expand_dynamic_linear, "split a linear with a non-const weight or bias into matmul + add", NO_OPTS),
    P("common", expand_high_rank_reshape_and_transpose,
      "rewrite reshape/transpose pairs of rank > 5 with rank <= 5 ops", NO_OPTS),
    P("common", fuse_conv_batchnorm, "fold a batch_norm into the conv before it", NO_OPTS),
    P("common", fuse_conv_bias, "fold an add/sub of a const into the conv bias", NO_OPTS),
    P("common", fuse_conv_scale, "fold a mul/real_div by a const into the conv weight and bias", NO_OPTS),
    P("common", fuse_dilated_conv, "fold space_to_batch -> conv -> batch_to_space into a dilated conv", NO_OPTS),
    P("common", fuse_elementwise_to_batchnorm, "fold mul + add by per-channel consts into batch_norm", NO_OPTS),
    P("common", fuse_gelu_exact, "recognize the erf form of GELU as gelu(mode=EXACT)", NO_OPTS),
    P("common", fuse_gelu_sigmoid_approximation, "recognize x * sigmoid(1.702 x) as gelu(mode=SIGMOID_APPROXIMATION)",
      NO_OPTS),
    P("common", fuse_gelu_tanh_approximation, "recognize the tanh form of GELU as gelu(mode=TANH_APPROXIMATION)",
      NO_OPTS),
    P("common", fuse_layernorm_or_instancenorm, "recognize decomposed layer/instance normalization", NO_OPTS),
    P("common", fuse_leaky_relu, "recognize max(x, alpha * x) as leaky_relu", NO_OPTS),
    P("common", fuse_linear_bias, "fold an add/sub of a const into the linear bias", NO_OPTS),
    P("common", fuse_matmul_weight_bias, "turn matmul by a const + add of a const into linear", NO_OPTS),
    P("common", fuse_onehot_matmul_to_gather, "turn one_hot -> matmul into gather", NO_OPTS),
    P("common", fuse_pad_conv, "fold a constant-mode pad into the conv's padding", NO_OPTS),
    P("common", fuse_prelu, "recognize the decomposed PReLU pattern as prelu", NO_OPTS),
    P("common", fuse_reduce_mean, "turn reduce_sum followed by division by the count into reduce_mean", NO_OPTS),
    P("common", fuse_squeeze_expand_dims, "remove squeeze -> expand_dims pairs that cancel", NO_OPTS),
    P("common", fuse_stack_split, "remove split -> squeeze ... -> stack chains that cancel", NO_OPTS),
    P("common", fuse_transpose_matmul, "fold transposes of the last two axes into matmul's transpose flags",
      NO_OPTS),
    P("common", guard_negative_gather_indices, "wrap possibly negative gather indices into range", NO_OPTS),
    P("common", image_input_preprocess, "make image inputs channel-first with a transpose", NO_OPTS),
    P("common", int_op_canonicalization, "drop dequantize -> op -> quantize around ops that accept ints", NO_OPTS),
    P("common", loop_invariant_elimination, "move loop-invariant loop vars out of while_loop", NO_OPTS),
    P("common", lower_complex_dialect_ops, "rewrite complex-number ops with real-valued ops", NO_OPTS),
    P("common", materialize_symbolic_shape_program, "add functions with the symbolic input shapes fixed",
      OPTS(o_materialize)),
    P("common", merge_affine_dequantize_with_consecutive_ops,
      "fold per-tensor ops on constexpr_affine_dequantize into its parameters", NO_OPTS),
    P("common", merge_consecutive_paddings, "merge two pads of the same mode into one", NO_OPTS),
    P("common", merge_consecutive_relus, "collapse relu -> relu into one relu", NO_OPTS),
    P("common", merge_consecutive_reshapes, "collapse chains of reshapes into one", NO_OPTS),
    P("common", merge_consecutive_transposes, "collapse chains of transposes into one (or none)", NO_OPTS),
    P("common", noop_elimination, "remove ops that return their input unchanged", NO_OPTS),
    P("common", nullify_redundant_quantization_zero_point, "drop zero points that are 0 (or 128 for uint8)",
      NO_OPTS),
    P("common", prefer_state_in_downstream, "let downstream ops read the state instead of a copy", NO_OPTS),
    P("common", prelu_to_lrelu, "turn prelu with one shared alpha into leaky_relu", NO_OPTS),
    P("common", rank0_expand_dims_swap, "move expand_dims of a rank-0 value before an elementwise op", NO_OPTS),
    P("common", reduce_transposes, "push transposes through layout-agnostic ops and cancel them", NO_OPTS),
    P("common", remove_redundant_ops, "remove ops that compute the same thing as an earlier op", NO_OPTS),
    P("common", remove_symbolic_reshape, "replace a symbolic reshape shape by a constant with at most one -1",
      NO_OPTS),
    P("common", reorder_lut_per_channel_scale, "move a per-channel scale after a LUT dequantization", NO_OPTS),
    P("common", replace_stack_reshape, "turn stack followed by reshape into concat", NO_OPTS),
    P("common", sanitize_input_output_names, "make function input and output names valid identifiers", NO_OPTS),
    P("common", scaled_dot_product_attention_sliced_q, "compute long-sequence attention in slices of Q",
      OPTS(o_sdpa_sliced_q)),
    P("common", select_optimization, "simplify select with a constant condition or equal branches", NO_OPTS),
    P("common", topological_reorder, "move casts and other ops to just before their first use", NO_OPTS),
    P("common", update_output_dtypes, "set the function output dtypes the model declares", NO_OPTS),
    P("common", use_reflection_padding, "recognize slice + concat mirroring as reflect padding", NO_OPTS),
    P("common", WeightRandomizer, "replace every const weight by random values of the same type", NO_OPTS),
    /* compression:: */
    P("compression", insert_suffix_quantize_dequantize_pair,
      "add quantize -> dequantize after activation patterns for activation quantization", OPTS(o_insert_qdq)),
    P("compression", linear_quantize_weights, "linearly quantize const weights (int8/uint8/int4/uint4)",
      OPTS(o_compression_config)),
    P("compression", palettize_weights, "palettize const weights (lookup-table compression)",
      OPTS(o_compression_config)),
    P("compression", prune_weights, "sparsify const weights", OPTS(o_compression_config)),
    P("compression", WeightDecompressor, "replace every constexpr op by a const of its decompressed value",
      OPTS(o_weight_decompressor)),
    /* frontend and backend passes named by coremltools' other pipelines */
    P("torch", torch_upsample_to_core_upsample, "map Torch upsample ops to core upsample ops", NO_OPTS),
    P("torch", torch_tensor_assign_to_core, "map Torch tensor assignment to scatter", NO_OPTS),
    P("tensorflow", backfill_make_list_elem_type, "fill in TensorArray element types from their writes", NO_OPTS),
    P("tensorflow", tf_lstm_to_core_lstm, "map TF LSTM blocks to lstm", NO_OPTS),
    P("tensorflow", expand_tf_lstm, "expand TF LSTM cells into elementwise ops", NO_OPTS),
    P("tensorflow2", remove_vacuous_cond, "remove conds whose branches are both identities", NO_OPTS),
    P("mil_backend", adjust_io_to_supported_types, "cast I/O to dtypes the Core ML runtime supports", NO_OPTS),
    P("mil_backend", insert_image_preprocessing_ops, "add scale/bias preprocessing after image inputs", NO_OPTS),
    P("mil_backend", fuse_activation_silu, "recognize x * sigmoid(x) as silu", NO_OPTS),
    P("mil_backend", fuse_pow2_sqrt, "remove pow(x, 2) -> sqrt pairs", NO_OPTS),
    P("mil_backend", decompose_const_base2_pow, "rewrite pow(2, y) as exp(y * log 2)", NO_OPTS),
    P("mil_backend", sanitize_name_strings, "make every op and var name a valid identifier", NO_OPTS),
    P("nn_backend", decompose_conv1d, "express conv1d as expand_dims -> conv2d -> squeeze", NO_OPTS),
    P("nn_backend", commingle_loop_vars, "make while_loop outputs its loop vars", NO_OPTS),
    P("nn_backend", handle_return_inputs_as_outputs, "add identities for inputs returned as outputs", NO_OPTS),
    P("nn_backend", handle_unused_inputs, "add identities consuming unused inputs", NO_OPTS),
    P("nn_backend", alert_return_type_cast, "warn about outputs implicitly cast to fp32", NO_OPTS),
};
#define N_CATALOG (sizeof k_catalog / sizeof k_catalog[0])

size_t pass_catalog_count(void) { return N_CATALOG; }

const mil_pass_def *pass_catalog_at(size_t i) { return i < N_CATALOG ? &k_catalog[i] : NULL; }

const mil_pass_def *pass_catalog_find(const char *name) {
  for (size_t i = 0; i < N_CATALOG; i++)
    if (pass_name_matches(name, k_catalog[i].name)) return &k_catalog[i];
  return NULL;
}

#!/bin/bash
# mil convert on ONNX Runtime's com.microsoft contrib ops (tests/data/onnx_contrib,
# written by its gen.py): GroupQueryAttention / MultiHeadAttention become
# scaled_dot_product_attention for iOS18 and matmul + softmax for iOS15;
# mil run takes the converted model; a refused mask names the node and input
# and exits 1 without writing the output.
MIL="$1"
D="$2/data/onnx_contrib"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

for c in gqa_prefill mha_cross attention_mask2d; do
  "$MIL" convert "$D/$c/model.onnx" "$tmp/$c.mil" --target iOS18 >/dev/null || fail "$c iOS18"
  grep -q "scaled_dot_product_attention(" "$tmp/$c.mil" || fail "$c iOS18 has no scaled_dot_product_attention"
  "$MIL" convert "$D/$c/model.onnx" "$tmp/$c-15.mil" >/dev/null || fail "$c iOS15"
  grep -q "scaled_dot_product_attention(" "$tmp/$c-15.mil" && fail "$c iOS15 uses scaled_dot_product_attention"
  grep -q "softmax(" "$tmp/$c-15.mil" || fail "$c iOS15 has no softmax"
done
# a custom scale keeps the decomposed form on iOS18 too
"$MIL" convert "$D/gqa_local_window/model.onnx" "$tmp/w.mil" --target iOS18 >/dev/null || fail "gqa_local_window"
grep -q "scaled_dot_product_attention(" "$tmp/w.mil" && fail "a custom scale must not use scaled_dot_product_attention"

"$MIL" convert "$D/skip_layer_norm/model.onnx" "$tmp/sln.mlpackage" >/dev/null || fail "skip_layer_norm to mlpackage"
"$MIL" run "$tmp/sln.mlpackage" --input "input=$D/skip_layer_norm/test_data_set_0/input_0.pb" \
  --input "skip=$D/skip_layer_norm/test_data_set_0/input_1.pb" --output-dir "$tmp" >"$tmp/run.txt" 2>&1 || fail "mil run: $(cat "$tmp/run.txt")"
grep -q "^output: (2, 3, 16)" "$tmp/run.txt" || fail "mil run output: $(cat "$tmp/run.txt")"
[ -s "$tmp/output.npy" ] && [ -s "$tmp/input_skip_bias_sum.npy" ] || fail "mil run wrote no .npy outputs"

"$MIL" convert "$D/refuse_mha_qk/model.onnx" "$tmp/r.mlpackage" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a refused mask must exit 1"
grep -q "node 'the_mha' (MultiHeadAttention, domain com.microsoft" "$tmp/err" || fail "message: $(cat "$tmp/err")"
grep -q "input 4 (key_padding_mask)" "$tmp/err" || fail "message lacks the input: $(cat "$tmp/err")"
[ -e "$tmp/r.mlpackage" ] && fail "half-written output"
echo "ok"

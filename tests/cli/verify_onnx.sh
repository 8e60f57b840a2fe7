#!/bin/bash
# `mil verify` with an ONNX side compares against the ONNX graph's own
# semantics (imported in fp32 without the pass pipeline), not against
# libmil's default fp16 conversion: an fp16 conversion shows its real
# (non-zero) error instead of "max abs 0". Uses examples/tinycnn (made by
# examples/make_tinycnn.py; its expected output computed with numpy). Also
# `mil info model.onnx` names the file.
#   bash verify_onnx.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
EX=$2/../examples/tinycnn
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-verify-onnx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
T=$EX/test_data_set_0
"$MIL" convert "$EX/model.onnx" "$tmp/fp16.mlpackage" --quiet || fail "convert fp16"
"$MIL" convert "$EX/model.onnx" "$tmp/fp32.mlpackage" --precision fp32 --quiet || fail "convert fp32"
# the fp16 conversion passes at fp16 tolerances, with its real error
"$MIL" verify "$EX/model.onnx" "$tmp/fp16.mlpackage" --input "image=$T/input_0.pb" >"$tmp/out" 2>"$tmp/err" ||
  fail "fp16 verify: $(cat "$tmp/out" "$tmp/err")"
grep -q '^probs  *PASS  max abs 0  ' "$tmp/out" && fail "fp16 conversion compared with itself: $(cat "$tmp/out")"
grep -Eq '^probs  *PASS  max abs [0-9.e-]+  ' "$tmp/out" || fail "fp16 line: $(cat "$tmp/out")"
grep -q 'rtol 0.01, atol 0.01' "$tmp/out" || fail "fp16 tolerances: $(cat "$tmp/out")"
# the fp32 conversion passes at fp32 tolerances
"$MIL" verify "$EX/model.onnx" "$tmp/fp32.mlpackage" --input "image=$T/input_0.pb" >"$tmp/out" 2>"$tmp/err" ||
  fail "fp32 verify: $(cat "$tmp/out" "$tmp/err")"
grep -q 'PASS: .* (rtol 0.001, atol 0.0001)' "$tmp/out" || fail "fp32 tolerances: $(cat "$tmp/out")"
# and the ONNX side itself matches numpy's expected output at fp32 tolerances
"$MIL" verify "$EX/model.onnx" --input "image=$T/input_0.pb" --reference "probs=$T/output_0.pb" >"$tmp/out" 2>"$tmp/err" ||
  fail "reference verify: $(cat "$tmp/out" "$tmp/err")"
grep -q 'PASS: .* matches the reference (rtol 0.001, atol 0.0001)' "$tmp/out" || fail "reference: $(cat "$tmp/out")"
# a strict tolerance now tells the fp16 conversion from the graph
"$MIL" verify "$EX/model.onnx" "$tmp/fp16.mlpackage" --input "image=$T/input_0.pb" --rtol 0 --atol 1e-7 >"$tmp/out" 2>&1 &&
  fail "fp16 conversion passes at atol 1e-7: $(cat "$tmp/out")"
"$MIL" verify --help | grep -q "graph's own semantics" || fail "--help does not say what an ONNX side means"
# mil info of an ONNX model names it on its model: line (it was empty)
"$MIL" info "$EX/model.onnx" >"$tmp/info" || fail "info"
grep -q "^model: $EX/model.onnx (ONNX" "$tmp/info" || fail "info model line: $(head -1 "$tmp/info")"
"$MIL" info "$EX/model.onnx" --json | grep -q "\"path\":.*\"$EX/model.onnx\"" || fail "info --json path"
echo ok

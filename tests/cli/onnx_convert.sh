#!/bin/bash
# `mil convert` of ONNX models: usage errors (exit 2), clear failures (exit 1,
# nothing written), --list-ops, and the corpus networks into every format
# with --target / --precision / --input-shape (when the corpus is present).
#   bash onnx_convert.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# --- usage -------------------------------------------------------------------
"$MIL" convert --list-ops >"$tmp/ops" || fail "--list-ops"
for op in Conv Gemm LSTM If Loop Resize Attention GroupQueryAttention SkipLayerNormalization FusedMatMul; do
  grep -q "^$op " "$tmp/ops" || fail "--list-ops lacks $op"
done
"$MIL" convert a.onnx b.mlpackage --target iOS14 >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --target must exit 2"
"$MIL" convert a.onnx b.mlpackage --precision fp8 >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --precision must exit 2"
"$MIL" convert a.onnx b.mlpackage --input-shape x=1,a >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --input-shape must exit 2"
"$MIL" convert a.mil b.mlpackage --precision fp32 >/dev/null 2>&1
[ $? -eq 2 ] || fail "ONNX options on a non-ONNX input must exit 2"

# --- failures ----------------------------------------------------------------
"$MIL" convert "$tmp/missing.onnx" "$tmp/out.mlpackage" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "a missing model must exit 1"
grep -q "missing.onnx: cannot open" "$tmp/err" || fail "missing-file message: $(cat "$tmp/err")"
printf '\377\377\377junk' >"$tmp/junk.onnx"
"$MIL" convert "$tmp/junk.onnx" "$tmp/out.mlpackage" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "a malformed model must exit 1"
grep -q "junk.onnx: not a valid ONNX ModelProto" "$tmp/err" || fail "malformed-model message: $(cat "$tmp/err")"
[ -e "$tmp/out.mlpackage" ] && fail "a failed convert left output behind"

# --- the corpus networks ------------------------------------------------------
C=$SHARED/corpus/onnx
if [ ! -d "$C" ]; then
  echo "corpus absent: conversion checks skipped"
  exit 0
fi
"$MIL" convert "$C/squeezenet1_1/opset13_external/model.onnx" "$tmp/sq.mlpackage" || fail "squeezenet (external data)"
"$MIL" info "$tmp/sq.mlpackage" | grep -q "x: fp32 (1, 3, 224, 224)" || fail "squeezenet input in the description"
"$MIL" convert "$C/tinygpt4/opset17/model.onnx" "$tmp/gpt.mlmodel" --precision fp32 --target iOS17 || fail "tinygpt4 .mlmodel"
"$MIL" info "$tmp/gpt.mlmodel" | grep -q "specification version: 8 (iOS17)" || fail "--target iOS17"
"$MIL" info "$tmp/gpt.mlmodel" | grep -q "x: int32 (1, 64)" || fail "int64 input narrowed to int32"
"$MIL" convert "$C/tinyllama4/opset14/model.onnx" "$tmp/llama.mil" --pipeline empty || fail "tinyllama4 .mil"
grep -q "main\[CoreML5\]" "$tmp/llama.mil" || fail ".mil output"
"$MIL" convert "$C/mobilenet_v2/opset13/model.onnx" "$tmp/m.mlpackage" --input-shape x=1,3,224,224 || fail "--input-shape"
"$MIL" convert "$C/mobilenet_v2/opset13/model.onnx" "$tmp/m2.mlpackage" --input-shape y=1 2>"$tmp/err"
[ $? -eq 1 ] || fail "--input-shape of an unknown input must exit 1"
grep -q "'y', not a graph input" "$tmp/err" || fail "unknown --input-shape message: $(cat "$tmp/err")"
"$MIL" verify "$C/tinyllama4/opset14/model.onnx" "$tmp/llama.mil" >/dev/null || fail "mil verify onnx vs converted"
echo "ok"

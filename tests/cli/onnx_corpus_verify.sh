#!/bin/bash
# Every ONNX corpus network (../shared/corpus/onnx/<name>/opsetN/) converted
# with --precision fp32 and fp16: `mil verify` against PyTorch's output
# (test_data_set_0/output_0.pb, --reference) passes with the default
# tolerances of each precision (1e-3/1e-4 fp32, 1e-2 fp16), and the fp16
# conversion against the fp32 one. Exit 77 (skipped) without the corpus.
#   bash onnx_corpus_verify.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
C=$3/corpus/onnx
[ -d "$C" ] || { echo "skipped: no ONNX corpus at $C"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnxv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
n=0
for m in "$C"/*/opset*/model.onnx; do
  d=$(dirname "$m")
  label=${d#"$C"/}
  x=$d/test_data_set_0/input_0.pb
  y=$d/test_data_set_0/output_0.pb
  for p in fp32 fp16; do
    "$MIL" convert "$m" "$tmp/$p.mlpackage" --precision "$p" 2>"$tmp/err" || fail "$label: convert --precision $p: $(cat "$tmp/err")"
    "$MIL" verify "$tmp/$p.mlpackage" --input "$x" --reference "$y" >"$tmp/out" 2>&1 ||
      fail "$label ($p): verify against PyTorch's output: $(cat "$tmp/out")"
  done
  "$MIL" verify "$tmp/fp32.mlpackage" "$tmp/fp16.mlpackage" --input "$x" >"$tmp/out" 2>&1 ||
    fail "$label: fp16 conversion vs fp32: $(cat "$tmp/out")"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no model under $C"
echo "onnx corpus verify: $n models, fp32 and fp16, against PyTorch and each other"

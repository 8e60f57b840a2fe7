#!/bin/bash
# fp16 safety (tests/data/onnx_graphs/fp16_chain.onnx: Pow / ReduceSum beyond
# fp16's range): the default conversion's output is inf and `mil verify`
# fails it with a NaN/inf line; `mil convert --sample` keeps the overflowing
# ops in fp32, names them on stderr, and the output verifies within 1e-3.
#   bash onnx_fp16_sample.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
DATA=$2/data/onnx_graphs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnx-sample.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
X=$DATA/fp16_chain.in0.npy
REF=$DATA/fp16_chain.out0.npy

"$MIL" convert "$DATA/fp16_chain.onnx" "$tmp/plain.mlpackage" 2>"$tmp/err" || fail "plain convert: $(cat "$tmp/err")"
"$MIL" verify "$tmp/plain.mlpackage" --input "x=$X" --reference "y=$REF" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "verify of the overflowing model must fail"
grep -q "^y  *FAIL  1 of 1 elements are NaN/inf where b is finite" "$tmp/out" || fail "no NaN/inf line: $(cat "$tmp/out")"

"$MIL" convert "$DATA/fp16_chain.onnx" "$tmp/s.mlpackage" --sample "x=$X" 2>"$tmp/err" ||
  fail "convert --sample: $(cat "$tmp/err")"
for op in "'sq' (pow)" "'ssum' (reduce_sum)" "'scaled' (mul)"; do
  grep -q "warning: .*op $op stays fp32 (--sample): in fp16 it gives inf/NaN" "$tmp/err" || fail "no line for $op"
done
[ "$(grep -c 'stays fp32' "$tmp/err")" = 3 ] || fail "only the three overflowing ops stay fp32: $(cat "$tmp/err")"
"$MIL" verify "$tmp/s.mlpackage" --input "x=$X" --reference "y=$REF" --rtol 1e-3 --atol 0 >"$tmp/out" 2>&1 ||
  fail "the sampled model must verify within 1e-3: $(cat "$tmp/out")"

# usage: a sample names a file that is not there; a bad tolerance
"$MIL" convert "$DATA/fp16_chain.onnx" "$tmp/e.mlpackage" --sample "x=$tmp/none.npy" >/dev/null 2>&1
[ $? -eq 1 ] || fail "a missing sample file must exit 1"
"$MIL" convert "$DATA/fp16_chain.onnx" "$tmp/e.mlpackage" --sample "x=$X" --sample-tolerance 2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--sample-tolerance 2 must exit 2"
[ ! -e "$tmp/e.mlpackage" ] || fail "nothing is written on failure"
echo "onnx_fp16_sample: OK"

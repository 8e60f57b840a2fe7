#!/bin/bash
# `mil tensor convert X.pb Y.npy` of dtypes numpy lacks: BFLOAT16 is written
# as float32 (exact) with a note, as onnx's numpy_helper.to_array reads it;
# STRING is refused naming the dtype (not "dtype 2").
#   bash tensor_convert_dtypes.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-tdt.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# TensorProto{dims: [3], data_type: BFLOAT16 (16), name: "b", raw_data: 1.0, 2.5, -3.0 as bf16}
printf '\010\003\020\020\102\001b\112\006\200\077\040\100\100\300' >"$tmp/bf.pb"
"$MIL" tensor convert "$tmp/bf.pb" "$tmp/bf.npy" 2>"$tmp/err" || fail "bf16 -> npy: $(cat "$tmp/err")"
grep -q "holds BFLOAT16, which numpy has no dtype for: .*bf.npy is float32" "$tmp/err" || fail "bf16 note: $(cat "$tmp/err")"
"$MIL" tensor "$tmp/bf.npy" >"$tmp/out" 2>&1 || fail "reading bf.npy: $(cat "$tmp/out")"
grep -q "fp32 (<f4)" "$tmp/out" || fail "bf.npy is not float32: $(cat "$tmp/out")"
grep -q "min -3  max 2.5  mean 0.166666" "$tmp/out" || fail "bf.npy values: $(cat "$tmp/out")"
# TensorProto{dims: [2], data_type: STRING (8), string_data: "ab", "c"}
printf '\010\002\020\010\062\002ab\062\001c' >"$tmp/s.pb"
"$MIL" tensor convert "$tmp/s.pb" "$tmp/s.npy" 2>"$tmp/err" && fail "a string tensor cannot be .npy"
grep -q "dtype string has no .npy representation" "$tmp/err" || fail "string message: $(cat "$tmp/err")"
grep -q "dtype 2\b" "$tmp/err" && fail "message names a dtype number: $(cat "$tmp/err")"
[ -e "$tmp/s.npy" ] && fail "s.npy written"
echo "ok"

#!/bin/bash
# `mil run` narrowing an input array to the model's input dtype (int64 /
# uint64 / fp64 -> int32 / fp32) refuses values that do not fit, naming the
# input, the first bad element's index and its value (as `mil tensor
# --narrow` does), instead of wrapping or saturating them silently.
#   bash run_narrow.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-narrow.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
for dt in int32 fp32; do
  cat >"$tmp/$dt.mil" <<MIL
main[CoreML5](%x: (2, 2,$dt)(Tensor)) {
  block0() {
    %y: (2, 2,$dt)(Tensor) = add(x=%x, y=%x, name="y")
  } -> (%y)
}
MIL
done
# npy FILE DESCR BYTES: a (2, 2) .npy array (format 1.0, 64-byte header)
npy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': (2, 2), }"
  while [ $(( (10 + ${#h} + 1) % 64 )) -ne 0 ]; do h="$h "; done
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( ${#h} + 1 )))\\x00"; printf '%s\n' "$h"; printf "$3"; } >"$1"
}
Z='\x00\x00\x00\x00'
# int64 [[2^40, 3e9], [-1, 5]]
npy "$tmp/i64.npy" '<i8' "$Z\x00\x01\x00\x00\x00\x5e\xd0\xb2$Z\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x00\x00$Z"
# int64 [[7, -3], [-1, 5]]: fits
npy "$tmp/i64ok.npy" '<i8' "\x07\x00\x00\x00$Z\xfd\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x00\x00$Z"
# uint64 [[1, 2^63], [0, 5]]
npy "$tmp/u64.npy" '<u8' "\x01\x00\x00\x00$Z$Z\x00\x00\x00\x80$Z$Z\x05\x00\x00\x00$Z"
# fp64 [[1, 2], [NaN, 5]] and [[1, 1e300], [0, 5]]
ONE='\x00\x00\x00\x00\x00\x00\xf0\x3f' TWO='\x00\x00\x00\x00\x00\x00\x00\x40' FIVE='\x00\x00\x00\x00\x00\x00\x14\x40'
npy "$tmp/nan.npy" '<f8' "$ONE$TWO\x00\x00\x00\x00\x00\x00\xf8\x7f$FIVE"
npy "$tmp/big.npy" '<f8' "$ONE\x9c\x75\x00\x88\x3c\xe4\x37\x7e$Z$Z$FIVE"

# refuse: mil run MODEL FILE EXPECTED-MESSAGE-PART
refuse() {
  "$MIL" run "$tmp/$1.mil" --input "x=$tmp/$2.npy" --output-dir "$tmp/out" >"$tmp/stdout" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "$1 <- $2: exit $rc, expected 1: $(cat "$tmp/err")"
  grep -qF -- "$3" "$tmp/err" || fail "$1 <- $2: message lacks '$3': $(cat "$tmp/err")"
  [ -e "$tmp/out/y.npy" ] && fail "$1 <- $2: an output was written"
  return 0
}
refuse int32 i64 "input 'x': element [0, 0] (flat index 0) of $tmp/i64.npy is 1099511627776 (int64), which the input's dtype int32 cannot hold"
refuse int32 u64 "input 'x': element [0, 1] (flat index 1) of $tmp/u64.npy is 9223372036854775808 (uint64)"
refuse int32 nan "element [1, 0] (flat index 2) of $tmp/nan.npy is nan (fp64), which the input's dtype int32 cannot hold"
refuse int32 big "element [0, 1] (flat index 1) of $tmp/big.npy is 1.0000000000000001e+300 (fp64)"
refuse fp32 big "element [0, 1] (flat index 1) of $tmp/big.npy is 1.0000000000000001e+300 (fp64), which the input's dtype fp32 cannot hold (it would become infinite)"

# values that fit are converted (with a note) and computed
"$MIL" run "$tmp/int32.mil" --input "x=$tmp/i64ok.npy" --no-write >"$tmp/stdout" 2>"$tmp/err" || fail "i64ok: $(cat "$tmp/err")"
grep -q '^y: (2, 2) int32  min -6  max 14  mean 4$' "$tmp/stdout" || fail "i64ok: $(cat "$tmp/stdout")"
grep -q "converted .* from int64 to int32" "$tmp/err" || fail "i64ok note: $(cat "$tmp/err")"
# NaN stays NaN in a float input
"$MIL" run "$tmp/fp32.mil" --input "x=$tmp/nan.npy" --no-write >"$tmp/stdout" 2>"$tmp/err" || fail "nan fp32: $(cat "$tmp/err")"
grep -q '^y: (2, 2) fp32  min 2  max 10  mean 5.33333  (1 NaN)$' "$tmp/stdout" || fail "nan fp32: $(cat "$tmp/stdout")"
echo "ok"

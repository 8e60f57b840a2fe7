#!/bin/bash
# ONNX TensorProto files on the command line: `mil tensor`, `mil tensor
# convert` (formats, dialects, encodings), `mil run --input x=FILE.pb
# --output-format pb`, `mil verify --input x=FILE.pb`, exit codes and
# messages. The end-to-end part checks `mil run` against ONNX's own expected
# output from Debian's libonnx-testdata; without that package it reports
# SKIPPED (77) after the self-contained checks.
#   bash onnx_tensor.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnx-tensor.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
TD=${MIL_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}

# --- usage and errors ---------------------------------------------------------
"$MIL" tensor >/dev/null 2>&1
[ $? -eq 2 ] || fail "'mil tensor' without a file must exit 2"
"$MIL" tensor --bogus x.pb >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option must exit 2"
"$MIL" tensor convert a.pb >/dev/null 2>&1
[ $? -eq 2 ] || fail "convert without B must exit 2"
"$MIL" tensor convert a.pb b.pb --dialect auto >/dev/null 2>&1
[ $? -eq 2 ] || fail "writing needs an explicit dialect"
"$MIL" tensor convert a.pb b.pb --encoding external >/dev/null 2>&1
[ $? -eq 2 ] || fail "--encoding external without --external-data must exit 2"
"$MIL" tensor --help | grep -q "usage: mil tensor FILE" || fail "tensor --help"
"$MIL" --help | grep -q "^  tensor " || fail "tensor missing from mil --help"
"$MIL" tensor "$tmp/missing.pb" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "a missing file must exit 1"
grep -q "^mil: error: .*missing.pb: cannot open" "$tmp/err" || fail "missing-file message: $(cat "$tmp/err")"
# a TensorProto whose data_type (field 2) has the wrong wire type
printf '\x08\x02\x12\x01\x01' >"$tmp/wire.pb"
"$MIL" tensor "$tmp/wire.pb" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "a malformed .pb must exit 1"
grep -q "wire.pb: byte 2: .*data_type.*wire type" "$tmp/err" || fail "wire-type message: $(cat "$tmp/err")"
# dims [2] of FLOAT with 4 bytes of raw_data
printf '\x08\x02\x10\x01\x4a\x04\x00\x00\x80\x3f' >"$tmp/short.pb"
"$MIL" tensor "$tmp/short.pb" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "dims x dtype != data length must exit 1"
grep -q "raw_data holds 4 bytes, but dims say 2 elements of FLOAT (8 bytes)" "$tmp/err" ||
  fail "length message: $(cat "$tmp/err")"
# the same, with 8 bytes: 1.0 and -2.0
printf '\x08\x02\x10\x01\x42\x01\x76\x4a\x08\x00\x00\x80\x3f\x00\x00\x00\xc0' >"$tmp/v.pb"
"$MIL" tensor "$tmp/v.pb" >"$tmp/out" || fail "mil tensor v.pb"
grep -q "^name: *v$" "$tmp/out" || fail "name: $(cat "$tmp/out")"
grep -q "^dtype: *FLOAT (MIL fp32)" "$tmp/out" || fail "dtype: $(cat "$tmp/out")"
grep -q "^shape: *(2,)  2 elements" "$tmp/out" || fail "shape: $(cat "$tmp/out")"
grep -q "^encoding: *raw_data" "$tmp/out" || fail "encoding: $(cat "$tmp/out")"
grep -q "^dialect: *onnx" "$tmp/out" || fail "dialect: $(cat "$tmp/out")"
grep -q "^min -2  max 1  mean -0.5" "$tmp/out" || fail "stats: $(cat "$tmp/out")"

# --- conversions between formats, dialects and encodings --------------------
"$MIL" tensor convert "$tmp/v.pb" "$tmp/v.npy" || fail "pb -> npy"
"$MIL" tensor "$tmp/v.npy" | grep -q "^min -2  max 1" || fail "npy stats"
"$MIL" tensor convert "$tmp/v.npy" "$tmp/v2.pb" --encoding typed || fail "npy -> typed pb"
"$MIL" tensor "$tmp/v2.pb" >"$tmp/out" || fail "read typed pb"
grep -q "^encoding: *typed" "$tmp/out" || fail "typed encoding: $(cat "$tmp/out")"
grep -q "^name: *v$" "$tmp/out" || fail "name from the file name: $(cat "$tmp/out")"
"$MIL" tensor convert "$tmp/v2.pb" "$tmp/v3.pb" --dialect nd4j --encoding external --external-data v3.bin ||
  fail "pb -> nd4j external"
[ "$(stat -c %s "$tmp/v3.bin")" = 8 ] || fail "external data file"
"$MIL" tensor "$tmp/v3.pb" | grep -q "^encoding: *external" || fail "external encoding"
"$MIL" tensor convert "$tmp/v3.pb" "$tmp/v3.npy" || fail "external -> npy"
cmp -s "$tmp/v.npy" "$tmp/v3.npy" || fail "values changed through typed / nd4j / external"
"$MIL" tensor convert "$tmp/v.pb" "$tmp/h.pb" --dialect nd4j --encoding nd4j 2>"$tmp/err"
[ $? -eq 1 ] || fail "half_val/bool_val of a FLOAT tensor must exit 1"
grep -q "FLOAT16 (half_val) and BOOL (bool_val) only" "$tmp/err" || fail "nd4j fields message: $(cat "$tmp/err")"
[ -e "$tmp/h.pb" ] && fail "a failed convert must not leave output"

# --- a small model fed and read through .pb -----------------------------------
cat >"$tmp/small.mil" <<'MIL'
main[CoreML7](%x: (2,fp32)(Tensor)) {
  block0() {
    %w: (2,fp32)*(Tensor) = const(val=[0.5, 3.0], name="w")
    %y: (2,fp32)(Tensor) = mul(x=%x, y=%w, name="y")
  } -> (%y)
}
MIL
"$MIL" convert "$tmp/small.mil" "$tmp/small.mlpackage" || fail "convert small.mil"
"$MIL" run "$tmp/small.mlpackage" --input x="$tmp/v.pb" --output-format pb --output-dir "$tmp/o" >"$tmp/out" ||
  fail "mil run --input x=v.pb --output-format pb"
[ -f "$tmp/o/y.pb" ] || fail "no y.pb written"
"$MIL" tensor "$tmp/o/y.pb" >"$tmp/out" || fail "read y.pb"
grep -q "^name: *y$" "$tmp/out" || fail "output name: $(cat "$tmp/out")"
grep -q "^min -6  max 0.5  mean -2.75" "$tmp/out" || fail "y = x * w: $(cat "$tmp/out")"
"$MIL" run "$tmp/small.mlpackage" --input x="$tmp/v.pb" --output-format bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --output-format must exit 2"
"$MIL" verify "$tmp/small.mlpackage" "$tmp/small.mil" --input x="$tmp/v3.pb" >"$tmp/out" ||
  fail "mil verify --input x=v3.pb: $(cat "$tmp/out")"
grep -q "PASS" "$tmp/out" || fail "verify: $(cat "$tmp/out")"
"$MIL" run "$tmp/small.mlpackage" --input x="$tmp/wire.pb" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "a malformed input .pb must exit 1"
grep -q "wire.pb: byte 2" "$tmp/err" || fail "run input message: $(cat "$tmp/err")"

# --- end to end against ONNX's expected output --------------------------------
if [ ! -d "$TD/node/test_abs" ]; then
  echo "SKIPPED: $TD not found (apt-get install libonnx-testdata)"
  exit 77
fi
cat >"$tmp/abs.mil" <<'MIL'
main[CoreML7](%x: (3, 4, 5, fp32)(Tensor)) {
  block0() {
    %y: (3, 4, 5, fp32)(Tensor) = abs(x=%x, name="y")
  } -> (%y)
}
MIL
"$MIL" convert "$tmp/abs.mil" "$tmp/abs.mlpackage" || fail "convert abs.mil"
"$MIL" run "$tmp/abs.mlpackage" --input x="$TD/node/test_abs/test_data_set_0/input_0.pb" --output-format pb \
  --output-dir "$tmp/abs" >/dev/null || fail "run abs on ONNX's input_0.pb"
"$MIL" tensor convert "$tmp/abs/y.pb" "$tmp/abs_y.npy" || fail "y.pb -> npy"
"$MIL" tensor convert "$TD/node/test_abs/test_data_set_0/output_0.pb" "$tmp/abs_ref.npy" || fail "output_0.pb -> npy"
cmp -s "$tmp/abs_y.npy" "$tmp/abs_ref.npy" || fail "abs differs from ONNX's output_0.pb"
# a BOOL tensor through nd4j's bool_val and back
"$MIL" tensor convert "$TD/node/test_not_2d/test_data_set_0/input_0.pb" "$tmp/b.pb" --dialect nd4j --encoding nd4j ||
  fail "bool -> nd4j bool_val"
"$MIL" tensor "$tmp/b.pb" >"$tmp/out" || fail "read nd4j bool_val"
grep -q "^dialect: *nd4j (automatic)" "$tmp/out" || fail "nd4j detection: $(cat "$tmp/out")"
grep -q "^encoding: *half_val/bool_val" "$tmp/out" || fail "bool_val encoding: $(cat "$tmp/out")"
"$MIL" tensor convert "$tmp/b.pb" "$tmp/b2.pb" --dialect onnx || fail "nd4j -> onnx"
"$MIL" tensor convert "$tmp/b2.pb" "$tmp/b2.npy" || fail "bool -> npy"
"$MIL" tensor convert "$TD/node/test_not_2d/test_data_set_0/input_0.pb" "$tmp/b_ref.npy" || fail "ref bool -> npy"
cmp -s "$tmp/b2.npy" "$tmp/b_ref.npy" || fail "bools changed through the nd4j dialect"
echo "ok"

#!/bin/bash
# Hostile ONNX constants (tests/data/onnx_limits, made by make_models.py):
# `mil convert` ends in bounded time with one error naming the node and what
# is wrong, or converts leaving huge constants unfolded; `mil validate`
# refuses a fill of a negative shape.
#   bash onnx_limits.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
DATA=$2/data/onnx_limits
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnxlim.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# refused: MODEL, then the text the one error must hold
refused() {
  local m=$1 want=$2
  rm -rf "$tmp/o.mlpackage"
  "$MIL" convert "$DATA/$m.onnx" "$tmp/o.mlpackage" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "$m: exit $rc, expected 1: $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "$m: message lacks '$want': $(cat "$tmp/err")"
  [ "$(grep -c 'error:' "$tmp/err")" -eq 1 ] || fail "$m: more than one error: $(cat "$tmp/err")"
  grep -q "(type error)\|argument '.*' is missing\|through a symbolic link" "$tmp/err" && fail "$m: misleading: $(cat "$tmp/err")"
  [ -e "$tmp/o.mlpackage" ] && fail "$m: output written"
  return 0
}
refused constantofshape_negative "node 'cos_neg' (ConstantOfShape, domain ai.onnx, opset 13): MIL op fill: input 'shape' has a negative entry: shape[0] = -5"
refused constantofshape_huge "node 'cos_huge' (ConstantOfShape, domain ai.onnx, opset 13): MIL op fill: the output would be too large"
refused tile_huge "node 'tile_huge' (Tile, domain ai.onnx, opset 13): input 1 ('reps', the repeats) holds 1099511627776 at element 0, outside int32"
refused range_huge "node 'range_huge' (Range, domain ai.onnx, opset 13): input 1 ('e', the limit) holds 1125899906842624 at element 0, outside int32"
refused expand_huge "node 'expand_huge' (Expand, domain ai.onnx, opset 13): input 1 ('shape', the shape) holds 1099511627776"
refused range_delta_zero "node 'range_zero' (Range, domain ai.onnx, opset 13): MIL op range_1d: input 'step' must not be 0"
refused initializer_dims_overflow "tensor 'w': dims[1] = 4294967296 makes the element count overflow 64 bits"
refused external_dot "location \".\" names a directory"
refused external_nul "location holds a NUL byte"

# 40 doubling Concats: converts (the constants past the folding cap stay concat ops), quickly
"$MIL" convert "$DATA/concat_doubling.onnx" "$tmp/c.mil" 2>"$tmp/err" || fail "concat_doubling: $(cat "$tmp/err")"
grep -q "(1099511627776,fp32)(Tensor) = cast" "$tmp/c.mil" || fail "concat_doubling: output type"
n=$(grep -c "= concat(" "$tmp/c.mil")
[ "$n" -ge 10 ] || fail "concat_doubling: only $n concat ops left"
[ "$(stat -c %s "$tmp/c.weight.bin")" -le $((64 * 1024 * 1024 + 4096)) ] || fail "concat_doubling: more than the folding cap materialized"
"$MIL" validate "$tmp/c.mil" >/dev/null 2>&1 || fail "concat_doubling: result does not validate"

# validate: fill of a known negative shape
cat >"$tmp/fill.mil" <<'MIL'
main[CoreML6]() {
  block0() {
    %s: (1, int32)(Tensor) = const(val=[-5], name="s")
    %y: (is0, fp32)(Tensor) = fill(shape=%s, value=0.0, name="y")
  } -> (%y)
}
MIL
"$MIL" validate "$tmp/fill.mil" >"$tmp/out" 2>&1 && fail "validate accepted fill(shape=[-5])"
grep -q "op 'y' (fill): input 'shape' has a negative entry: shape\[0\] = -5" "$tmp/out" || fail "fill message: $(cat "$tmp/out")"
echo "ok"

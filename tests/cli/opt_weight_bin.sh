#!/bin/bash
# `mil opt` writes coremltools' weights: for every corpus model
# (../shared/corpus/models/<name>/), the DEFAULT pipeline on input.mlpackage
# yields a weight.bin byte-identical to the one in coremltools' own
# expected.mlpackage (the folded conv / batch_norm / scale / bias weights
# computed in numpy's dtypes and order, the fp16 casts, the blob layout).
# Exits 77 (ctest: skipped) when the corpus is absent.
#   bash opt_weight_bin.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
MODELS=$SHARED/corpus/models
if [ ! -d "$MODELS" ]; then
  echo "skipped: corpus not found under $SHARED"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-optw.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
W=Data/com.apple.CoreML/weights/weight.bin
n=0
for d in "$MODELS"/*/; do
  name=$(basename "$d")
  [ -d "$d/input.mlpackage" ] && [ -f "$d/expected.mlpackage/$W" ] || continue
  "$MIL" opt "$d/input.mlpackage" -o "$tmp/$name.mlpackage" --quiet 2>"$tmp/err" ||
    fail "$name: mil opt: $(cat "$tmp/err")"
  got=$tmp/$name.mlpackage/$W
  want=$d/expected.mlpackage/$W
  [ -f "$got" ] || fail "$name: no weight.bin written"
  if ! cmp -s "$got" "$want"; then
    fail "$name: weight.bin differs from coremltools' expected.mlpackage ($(stat -c %s "$got") vs $(stat -c %s "$want") bytes; first difference: $(cmp "$got" "$want" 2>&1 | head -1))"
  fi
  echo "$name: weight.bin identical ($(stat -c %s "$got") bytes)"
  rm -rf "$tmp/$name.mlpackage"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "skipped: no corpus model with input.mlpackage and expected.mlpackage"; exit 77; }
echo "ok: $n models"

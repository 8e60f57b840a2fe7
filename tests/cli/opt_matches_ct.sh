#!/bin/bash
# `mil opt` gives coremltools' own DEFAULT result on every corpus model
# (../shared/corpus/models/<name>/): the written weight.bin is byte for byte
# the one in coremltools' expected.mlpackage (the folded conv / batch_norm /
# scale / bias weights computed in numpy's dtypes and order, the fp16 casts,
# the blob layout), and `mil print` of the result is coremltools' print of
# its result, expected.ct.mil, line for line, names included: the names
# coremltools' builder gives new ops and consts come from its per-prefix
# counter (Builder.name_count, cleared when ct.convert starts, so counting
# from 0 for a model read from disk: "transpose_33" is the 34th transpose
# the pipeline built), repeats settled by dedup_op_and_var_names
# ("const_40_1", "108_transpose_x_0_1"). Only the numbers of function-body
# block names (`block23`, from a process-wide counter) are set aside, as
# mil-text.md section 3 says. The complete print (`mil print --complete`:
# every const, with the names coremltools' print folds away) must equal
# the complete print of expected.mlpackage the same way, weight file paths
# aside.
# Exits 77 (ctest: skipped) when the corpus is absent.
#   bash opt_matches_ct.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
MODELS=$SHARED/corpus/models
if [ ! -d "$MODELS" ]; then
  echo "skipped: corpus not found under $SHARED"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-optct.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# block numbers and weight file paths out
normalize() {
  perl -pe 's/\bblock\d+\(\)/block()/; s/\@blob\("[^"]*"/\@blob(W/g' "$1"
}
W=Data/com.apple.CoreML/weights/weight.bin
n=0
for d in "$MODELS"/*/; do
  name=$(basename "$d")
  [ -d "$d/input.mlpackage" ] && [ -f "$d/expected.mlpackage/$W" ] || continue
  out=$tmp/$name.mlpackage
  "$MIL" opt "$d/input.mlpackage" -o "$out" --quiet 2>"$tmp/err" || fail "$name: mil opt: $(cat "$tmp/err")"
  [ -f "$out/$W" ] || fail "$name: no weight.bin written"
  if ! cmp -s "$out/$W" "$d/expected.mlpackage/$W"; then
    fail "$name: weight.bin differs from coremltools' expected.mlpackage ($(stat -c %s "$out/$W") vs" \
      "$(stat -c %s "$d/expected.mlpackage/$W") bytes; $(cmp "$out/$W" "$d/expected.mlpackage/$W" 2>&1 | head -1))"
  fi
  if [ -f "$d/expected.ct.mil" ]; then
    "$MIL" print "$out" >"$tmp/got.mil" 2>"$tmp/err" || fail "$name: mil print: $(cat "$tmp/err")"
    normalize "$tmp/got.mil" >"$tmp/got"
    normalize "$d/expected.ct.mil" >"$tmp/want"
    if ! cmp -s "$tmp/got" "$tmp/want"; then
      diff "$tmp/got" "$tmp/want" | head -20
      fail "$name: mil print of mil opt's output differs from coremltools' expected.ct.mil (< libmil, > coremltools)"
    fi
  fi
  "$MIL" print --complete "$out" >"$tmp/got.mil" 2>"$tmp/err" || fail "$name: mil print --complete: $(cat "$tmp/err")"
  "$MIL" print --complete "$d/expected.mlpackage" >"$tmp/want.mil" 2>"$tmp/err" ||
    fail "$name: mil print --complete of expected.mlpackage: $(cat "$tmp/err")"
  normalize "$tmp/got.mil" >"$tmp/got"
  normalize "$tmp/want.mil" >"$tmp/want"
  if ! cmp -s "$tmp/got" "$tmp/want"; then
    diff "$tmp/got" "$tmp/want" | head -20
    fail "$name: mil print --complete of mil opt's output differs from that of expected.mlpackage (< libmil, > coremltools)"
  fi
  echo "$name: weight.bin identical ($(stat -c %s "$out/$W") bytes), print and complete print identical to coremltools'"
  rm -rf "$out"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "skipped: no corpus model with input.mlpackage and expected.mlpackage"; exit 77; }
echo "ok: $n models"

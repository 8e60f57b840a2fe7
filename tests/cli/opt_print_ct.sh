#!/bin/bash
# `mil print` of `mil opt`'s output is coremltools' own print of its DEFAULT
# result (../shared/corpus/models/<name>/expected.ct.mil), line for line, on
# every corpus model. Two things a program cannot reproduce are set aside,
# as mil-text.md section 3 says: the numbers of function-body block names
# (`block7`), and the numbers coremltools' builder gives new ops from its
# process-wide per-op-type counter (`transpose_33` means 33 transposes had
# been auto-named earlier in the recording Python process). Counter names
# are renumbered by first appearance on both sides, so their pattern (which
# var and op share a number, which come in which order) must still match.
# Exits 77 (ctest: skipped) when the corpus is absent.
#   bash opt_print_ct.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
MODELS=$SHARED/corpus/models
if [ ! -d "$MODELS" ]; then
  echo "skipped: corpus not found under $SHARED"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-optp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# the op types whose auto-named ops DEFAULT creates in the corpus models
normalize() {
  perl -pe 's/\bblock\d+\(\)/block()/; s/(?<![\w.])(transpose)_(\d+)(?![\w.])/"$1_#" . ($n{"$1_$2"} \/\/= ++$c{$1})/ge' "$1"
}
n=0
for d in "$MODELS"/*/; do
  name=$(basename "$d")
  [ -d "$d/input.mlpackage" ] && [ -f "$d/expected.ct.mil" ] || continue
  "$MIL" opt "$d/input.mlpackage" -o "$tmp/$name.mlpackage" --quiet 2>"$tmp/err" ||
    fail "$name: mil opt: $(cat "$tmp/err")"
  "$MIL" print "$tmp/$name.mlpackage" >"$tmp/$name.mil" 2>"$tmp/err" || fail "$name: mil print: $(cat "$tmp/err")"
  normalize "$tmp/$name.mil" >"$tmp/got"
  normalize "$d/expected.ct.mil" >"$tmp/want"
  if ! cmp -s "$tmp/got" "$tmp/want"; then
    diff "$tmp/got" "$tmp/want" | head -20
    fail "$name: mil print of mil opt's output differs from coremltools' expected.ct.mil (above: < libmil, > coremltools)"
  fi
  echo "$name: identical to expected.ct.mil ($(wc -l <"$tmp/got") lines)"
  rm -rf "$tmp/$name.mlpackage"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "skipped: no corpus model with input.mlpackage and expected.ct.mil"; exit 77; }
echo "ok: $n models"

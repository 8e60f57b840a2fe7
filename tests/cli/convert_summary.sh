#!/bin/bash
# `mil convert`, `mil opt` and `mil compress` end a successful run with one
# line on standard error saying what was written (file, spec version and
# target, ops, weights, time); --quiet silences it; the progress line is
# shown only when standard error is a terminal.
#   bash convert_summary.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
EX=$2/../examples
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-summary.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# classifier.mil: one op per line of the form '%name: type = op(...)'
ops=$(grep -cE '^ *%[^ ]+: .* = [a-z_0-9]+\(' "$EX/classifier.mil")
"$MIL" convert "$EX/classifier.mil" "$tmp/c.mlpackage" >"$tmp/out" 2>"$tmp/err" || fail "convert: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "convert wrote to stdout: $(cat "$tmp/out")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "convert: expected one line: $(cat "$tmp/err")"
grep -Eq "^mil: wrote $tmp/c.mlpackage \(spec 8, iOS17\): $ops ops, [0-9]+ weights \([0-9.]+ [KM]?B\) in [0-9.]+ s$" "$tmp/err" ||
  fail "convert line ($ops ops expected): $(cat "$tmp/err")"
grep -q $'\r' "$tmp/err" && fail "progress shown when stderr is not a terminal"
# tinycnn.onnx: six initializers of >= 10 elements, 5,418 elements in all, fp16 after the DEFAULT pipeline
"$MIL" convert "$EX/tinycnn/model.onnx" "$tmp/t.mlpackage" 2>"$tmp/err" || fail "onnx convert: $(cat "$tmp/err")"
grep -Eq "^mil: wrote $tmp/t.mlpackage \(spec 6, iOS15\): [0-9]+ ops, 6 weights \(10.8 KB\) in [0-9.]+ s$" "$tmp/err" ||
  fail "onnx convert line: $(cat "$tmp/err")"
# --quiet: nothing at all
"$MIL" convert "$EX/classifier.mil" "$tmp/q.mlpackage" --quiet >"$tmp/out" 2>"$tmp/err" || fail "convert --quiet"
[ -s "$tmp/out" ] || [ -s "$tmp/err" ] && fail "--quiet printed: $(cat "$tmp/out" "$tmp/err")"
[ -f "$tmp/q.mlpackage/Manifest.json" ] || fail "--quiet wrote nothing"
# opt and compress end with the same line
"$MIL" opt "$tmp/c.mlpackage" -o "$tmp/o.mlpackage" 2>"$tmp/err" || fail "opt: $(cat "$tmp/err")"
grep -Eq "^mil: wrote $tmp/o.mlpackage \(spec 8, iOS17\): [0-9]+ ops, [0-9]+ weights" "$tmp/err" || fail "opt line: $(cat "$tmp/err")"
"$MIL" opt "$tmp/c.mlpackage" -o "$tmp/o2.mlpackage" --quiet 2>"$tmp/err" || fail "opt --quiet"
[ -s "$tmp/err" ] && fail "opt --quiet printed: $(cat "$tmp/err")"
"$MIL" compress "$tmp/t.mlpackage" -o "$tmp/p.mlpackage" --palettize 4 --target iOS18 2>"$tmp/err" ||
  fail "compress: $(cat "$tmp/err")"
grep -Eq "^mil: wrote $tmp/p.mlpackage \(spec 9, iOS18\): [0-9]+ ops, [0-9]+ weights" "$tmp/err" ||
  fail "compress line: $(cat "$tmp/err")"
# on a terminal (script(1) gives the command one), the progress line appears
if command -v script >/dev/null 2>&1; then
  script -qec "'$MIL' convert '$EX/classifier.mil' '$tmp/tty.mlpackage'" /dev/null >"$tmp/tty" 2>&1 || fail "convert on a tty"
  grep -q "converting .*classifier.mil \.\.\." "$tmp/tty" || fail "no progress on a terminal: $(cat -v "$tmp/tty")"
  grep -q "mil: wrote $tmp/tty.mlpackage" "$tmp/tty" || fail "no summary on a terminal: $(cat -v "$tmp/tty")"
fi
echo ok

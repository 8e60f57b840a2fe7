#!/bin/bash
# The README's examples run as written after its set-up: the ```sh blocks
# of "Importing ONNX models" and "ONNX tensors" (the latter needs Debian's
# libonnx-testdata), run with the built mil first on PATH, in a scratch
# directory that sees the checkout's examples/; the set-up's `make` leaves
# ./mil; no example reads ../shared (a clone lacks it).
#   bash readme_examples.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
ROOT=$(cd "$2/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-readme-ex.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
README=$ROOT/README.md
awk '/^```sh/ { f = 1; next } /^```/ { f = 0 } f' "$README" | grep -q '\.\./shared' && fail "a README command reads ../shared"
grep -q 'ln -sfn build/mil mil' "$ROOT/Makefile" || fail "the Makefile's build target does not leave ./mil"
grep -q 'export PATH="$PWD:$PATH"' "$README" || fail "the README's set-up does not put ./mil on PATH"
mkdir -p "$tmp/bin" "$tmp/work"
ln -s "$(cd "$(dirname "$MIL")" && pwd)/$(basename "$MIL")" "$tmp/bin/mil"
ln -s "$ROOT/examples" "$tmp/work/examples"
ln -s "$ROOT/tests" "$tmp/work/tests"
# block SECTION: the first ```sh block after the heading SECTION
block() {
  awk -v h="$1" '$0 == h { s = 1; next } s && /^```sh/ { f = 1; next } f && /^```/ { exit } f' "$README"
}
block "## Importing ONNX models" >"$tmp/onnx.sh"
[ -s "$tmp/onnx.sh" ] || fail "no example under 'Importing ONNX models'"
(cd "$tmp/work" && PATH="$tmp/bin:$PATH" bash -e "$tmp/onnx.sh") >"$tmp/out" 2>&1 || fail "ONNX example: $(cat "$tmp/out")"
grep -q "^PASS: tinycnn.mlpackage matches examples/tinycnn/model.onnx" "$tmp/out" || fail "ONNX example output: $(cat "$tmp/out")"
block "## App-ready models: image inputs, classifiers, flexible shapes" >"$tmp/app.sh"
[ -s "$tmp/app.sh" ] || fail "no example under 'App-ready models'"
(cd "$tmp/work" && PATH="$tmp/bin:$PATH" bash -e "$tmp/app.sh") >"$tmp/out" 2>&1 || fail "app example: $(cat "$tmp/out")"
grep -q '^classLabel: "class_283" (string label)$' "$tmp/out" || fail "app example output: $(cat "$tmp/out")"
grep -q 'image: fp32 (1, 3, 32, 32)  \[image 32x32 RGB\]' "$tmp/out" || fail "app example info: $(cat "$tmp/out")"
if [ -d /usr/share/libonnx-testdata/data/node/test_abs ]; then
  block "## ONNX tensors (\`.pb\`)" >"$tmp/tensors.sh"
  [ -s "$tmp/tensors.sh" ] || fail "no example under 'ONNX tensors'"
  (cd "$tmp/work" && PATH="$tmp/bin:$PATH" bash -e "$tmp/tensors.sh") >"$tmp/out" 2>&1 || fail "tensor example: $(cat "$tmp/out")"
  grep -q "^name: *y$" "$tmp/out" || fail "tensor example output: $(cat "$tmp/out")"
fi
echo ok

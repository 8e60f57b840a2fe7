#!/bin/bash
# ONNX names that are not identifiers (tests/data/onnx_graphs/names.onnx:
# inputs onnx::Flatten_0 and x.1, an output named with a JSON label table):
# `mil convert` prints each rename on stderr, `mil run` takes an input by its
# ONNX name or by the model's name, and writes outputs under the model's
# names; a graph listed out of order and a cycle (topo_*.onnx).
#   bash onnx_names.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
DATA=$2/data/onnx_graphs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-onnx-names.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$MIL" convert "$DATA/names.onnx" "$tmp/n.mlpackage" 2>"$tmp/err" || fail "convert names.onnx: $(cat "$tmp/err")"
grep -qx "mil convert: ONNX input 'onnx::Flatten_0' is named 'onnx__Flatten_0' in the model (mil run --input takes either name)" "$tmp/err" ||
  fail "no rename line for onnx::Flatten_0: $(cat "$tmp/err")"
grep -qx "mil convert: ONNX input 'x.1' is named 'x_1' in the model (mil run --input takes either name)" "$tmp/err" ||
  fail "no rename line for x.1"
[ "$(grep -c '^mil convert: ONNX output ' "$tmp/err")" = 1 ] || fail "one output rename line expected"
"$MIL" info "$tmp/n.mlpackage" | grep -q 'com.libmil.onnx_names: {"inputs": {"onnx__Flatten_0": "onnx::Flatten_0"' ||
  fail "the metadata lacks the original names"
# ONNX names, model names, and a mix
"$MIL" run "$tmp/n.mlpackage" --input "onnx::Flatten_0=$DATA/names.in0.npy" --input "x.1=$DATA/names.in1.npy" \
  --output-dir "$tmp/o1" >/dev/null 2>"$tmp/err" || fail "run by ONNX names: $(cat "$tmp/err")"
"$MIL" run "$tmp/n.mlpackage" --input "onnx__Flatten_0=$DATA/names.in0.npy" --input "x.1=$DATA/names.in1.npy" \
  --output-dir "$tmp/o2" >/dev/null 2>"$tmp/err" || fail "run by mixed names: $(cat "$tmp/err")"
[ -f "$tmp/o1/__0____cat____1____dog__.npy" ] || fail "the output is not written under the model's name"
cmp -s "$tmp/o1/__0____cat____1____dog__.npy" "$tmp/o2/__0____cat____1____dog__.npy" || fail "outputs differ"
"$MIL" run "$tmp/n.mlpackage" --input "onnx::Nope=$DATA/names.in0.npy" --no-write >/dev/null 2>&1
[ $? -eq 1 ] || fail "an unknown input name must fail"
# out-of-order graph converts; a cycle is refused naming a node on it
"$MIL" convert "$DATA/topo_cast_after.onnx" "$tmp/t.mlpackage" 2>"$tmp/err" || fail "topo_cast_after: $(cat "$tmp/err")"
"$MIL" convert "$DATA/topo_cycle.onnx" "$tmp/c.mlpackage" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a cycle must exit 1"
grep -q "cycle: node '\(relu\|add\)_in_cycle'" "$tmp/err" || fail "the cycle message: $(cat "$tmp/err")"
[ ! -e "$tmp/c.mlpackage" ] || fail "nothing is written on failure"
echo "onnx_names: OK"

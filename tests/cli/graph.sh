#!/bin/bash
# `mil graph`: the DOT text it draws (nodes, edge labels, folded consts,
# clusters, --max-ops, --show-consts, --diff colours), rendering to SVG and
# PNG through Graphviz, and every corpus model rendered (when present).
#   bash graph.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
TESTS=$2
SHARED=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-graph.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cat >"$tmp/a.mil" <<'EOF'
main[CoreML7](%x: (1, 4, fp32)(Tensor)) {
  block0() {
    %w: (4, 4, fp32)*(Tensor) = const(val=[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], name="w")
    %t: (bool)*(Scalar) = const(val=False, name="t")
    %m: (1, 4, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_x=%t, transpose_y=%t, name="m")
    %r: (1, 4, fp32)(Tensor) = relu(x=%m, name="r")
    %s: (1, 4, fp32)(Tensor) = sigmoid(x=%r, name="s")
  } -> (%s)
}
EOF
# the same after a made-up pipeline: relu gone, sigmoid now reads the matmul, a tanh added
cat >"$tmp/b.mil" <<'EOF'
main[CoreML7](%x: (1, 4, fp32)(Tensor)) {
  block0() {
    %w: (4, 4, fp32)*(Tensor) = const(val=[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], name="w")
    %t: (bool)*(Scalar) = const(val=False, name="t")
    %m: (1, 4, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_x=%t, transpose_y=%t, name="m")
    %s: (1, 4, fp32)(Tensor) = sigmoid(x=%m, name="s")
    %u: (1, 4, fp32)(Tensor) = tanh(x=%s, name="u")
  } -> (%u)
}
EOF

"$MIL" graph "$tmp/a.mil" -o "$tmp/a.dot" || fail "graph to .dot"
d="$tmp/a.dot"
grep -q '^digraph "main" {' "$d" || fail "a digraph named after the function: $(head -2 "$d")"
grep -q 'label="x\\n(1, 4, fp32)"' "$d" || fail "the input node: $(cat "$d")"
grep -q 'label="matmul\\nm\\ny=(4, 4, fp32)\\ntranspose_x=False\\ntranspose_y=False"' "$d" ||
  fail "consts folded into the matmul's label (large by type, small by value): $(grep matmul "$d")"
grep -q '"const' "$d" && fail "no const nodes without --show-consts"
[ "$(grep -c -- '->' "$d")" -eq 4 ] || fail "4 edges (x->m->r->s->output): $(grep -- '->' "$d")"
grep -q -- '-> n[0-9]* \[label="(1, 4, fp32)"\]' "$d" || fail "edges carry shape and dtype"
grep -q 'label="output\\ns"' "$d" || fail "the output node"

"$MIL" graph "$tmp/a.mil" -o "$tmp/c.dot" --show-consts || fail "--show-consts"
[ "$(grep -c 'label="const' "$tmp/c.dot")" -eq 2 ] || fail "--show-consts draws both consts: $(cat "$tmp/c.dot")"
[ "$(grep -c -- '->' "$tmp/c.dot")" -eq 7 ] || fail "--show-consts: 3 more edges"

"$MIL" graph "$tmp/a.mil" -o "$tmp/m.dot" --max-ops 1 || fail "--max-ops"
grep -q 'label="2 more ops not drawn (--max-ops 1)' "$tmp/m.dot" || fail "--max-ops note: $(cat "$tmp/m.dot")"
grep -q 'relu' "$tmp/m.dot" && fail "--max-ops 1 draws one op"

"$MIL" graph --diff "$tmp/a.mil" "$tmp/b.mil" -o "$tmp/diff.dot" || fail "--diff"
d="$tmp/diff.dot"
grep -q 'green: 1 added   orange: 1 changed   red: 1 removed' "$d" || fail "--diff legend: $(cat "$d")"
grep 'label="tanh' "$d" | grep -q '#b7e4b0' || fail "the added tanh is green"
grep 'label="sigmoid' "$d" | grep -q '#ffd27f' || fail "sigmoid (new input) is orange"
grep 'label="matmul' "$d" | grep -q '#dbe9f6' || fail "the matmul is unchanged"
grep -q 'label="relu\\nr\\n(removed)"' "$d" || fail "the removed relu is drawn"

# nested blocks are clusters; an edge into a block does not pull its source in
"$MIL" graph "$TESTS/data/text_sample.mil" -o "$tmp/n.dot" || fail "graph text_sample.mil"
grep -q 'subgraph cluster_.* {' "$tmp/n.dot" || fail "nested blocks as clusters"
grep -q 'label="loop: loop_body_block"' "$tmp/n.dot" || fail "a cluster per block, named"
"$MIL" graph "$TESTS/data/text_sample.mil" -o "$tmp/n.dot" --function nosuch 2>"$tmp/err"
[ $? -eq 1 ] || fail "--function nosuch must exit 1"
grep -q "no function 'nosuch' (the program has: main, func2)" "$tmp/err" || fail "function list: $(cat "$tmp/err")"

# rendering through Graphviz
"$MIL" graph "$tmp/a.mil" -o "$tmp/a.svg" || fail "graph to .svg"
grep -q '<svg' "$tmp/a.svg" || fail "an SVG file"
grep -q '>matmul<' "$tmp/a.svg" || fail "the SVG shows the ops"
"$MIL" graph "$TESTS/data/text_sample.mil" -o "$tmp/n.png" || fail "graph to .png"
[ "$(head -c 8 "$tmp/n.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "a PNG file"
ls "$tmp" | grep -q tmp && fail "no temporary files left"

models="$SHARED/corpus/models"
if [ ! -d "$models" ]; then
  echo "SKIPPED: the corpus is absent ($SHARED); the checks above passed"
  exit 77
fi
n=0
for pkg in "$models"/*/input.mlpackage "$models"/*/expected.mlpackage; do
  [ -d "$pkg" ] || continue
  "$MIL" graph "$pkg" -o "$tmp/g.svg" || fail "graph $pkg"
  grep -q '<svg' "$tmp/g.svg" || fail "$pkg: no SVG"
  n=$((n + 1))
done
for d in "$models"/*/; do
  "$MIL" graph --diff "$d/input.mlpackage" "$d/expected.mlpackage" -o "$tmp/d.dot" || fail "graph --diff $d"
  grep -q "green: [0-9]* added" "$tmp/d.dot" || fail "$d: --diff legend"
done
echo "graph: $n corpus models rendered"

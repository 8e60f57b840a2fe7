#!/bin/bash
# `mil run` on a classifier: classify's label and probability dictionary
# are printed and written as JSON.
#   bash run_classify.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-classify.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# probabilities [0.2, 0.7, 0.1] whatever x is
cat >"$tmp/cls.mil" <<'MIL'
main[CoreML3](%x: (3,fp32)(Tensor)) {
  block0() {
    %z: (3,fp32)(Tensor) = mul(x=%x, y=0.0, name="z")
    %p: (3,fp32)(Tensor) = add(x=%z, y=[0.2, 0.7, 0.1], name="p")
    %label: (string)(Scalar), %probs: (dict)(Scalar) = classify(probabilities=%p, classes=["cat", "dog", "fox"], name="c")
  } -> (%label, %probs)
}
MIL
"$MIL" run "$tmp/cls.mil" --random-inputs --output-dir "$tmp/out" >"$tmp/stdout" 2>"$tmp/err" || fail "run: $(cat "$tmp/err")"
grep -q '^label: "dog" (string label)$' "$tmp/stdout" || fail "label line: $(cat "$tmp/stdout")"
grep -q '^probs: dict of 3 (string -> fp64), highest: "dog" 0.7, "cat" 0.2, "fox" 0.1$' "$tmp/stdout" ||
  fail "dict line: $(cat "$tmp/stdout")"
[ "$(cat "$tmp/out/label.json")" = '"dog"' ] || fail "label.json: $(cat "$tmp/out/label.json")"
# the classes in order, each with its probability (fp32 0.7 = 0.699999988...)
tr -d ' \t\n' <"$tmp/out/probs.json" >"$tmp/flat"
grep -Eq '^\{"cat":0\.(2|19999)[0-9]*,"dog":0\.(7|69999)[0-9]*,"fox":0\.(1|09999)[0-9]*\}$' "$tmp/flat" ||
  fail "probs.json: $(cat "$tmp/out/probs.json")"
[ -e "$tmp/out/label.npy" ] && fail "a label is not written as .npy"
"$MIL" run "$tmp/cls.mil" --random-inputs --no-write >"$tmp/stdout" || fail "run --no-write"
grep -q '^label: "dog"' "$tmp/stdout" || fail "--no-write label line"
# integer classes (as MIL text shows them): the label is a JSON number
sed -e 's/classes=\["cat", "dog", "fox"\]/classes=[10, 20, 30]/' -e 's/(string)(Scalar)/(int64)(Scalar)/' "$tmp/cls.mil" >"$tmp/int.mil"
"$MIL" run "$tmp/int.mil" --random-inputs --output-dir "$tmp/int" >"$tmp/stdout" 2>"$tmp/err" || fail "int run: $(cat "$tmp/err")"
grep -q '^label: 20 (int64 label)$' "$tmp/stdout" || fail "int label line: $(cat "$tmp/stdout")"
grep -q '^probs: dict of 3 (int64 -> fp64), highest: 20 0.7, 10 0.2, 30 0.1$' "$tmp/stdout" ||
  fail "int dict line: $(cat "$tmp/stdout")"
[ "$(cat "$tmp/int/label.json")" = '20' ] || fail "int label.json: $(cat "$tmp/int/label.json")"
tr -d ' \t\n' <"$tmp/int/probs.json" | grep -Eq '^\{"10":0\.(2|19999)[0-9]*,"20":0\.(7|69999)[0-9]*,"30":0\.(1|09999)[0-9]*\}$' ||
  fail "int probs.json: $(cat "$tmp/int/probs.json")"
echo "run_classify: ok"

#!/bin/bash
# ONNX NonMaxSuppression whose number of boxes is known only at run time
# (tests/data/nms, written by gen.py with the selection ONNX's definition
# gives, computed in numpy): bounded by the constant max_output_boxes_per_class
# or by --nms-max-boxes, exact at iOS15 and iOS17; no bound is an error naming
# the option.
#   bash onnx_nms_bound.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
D=$2/data/nms
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-nms.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
ins=(--input "boxes=$D/boxes.npy" --input "scores=$D/scores.npy")
for t in iOS15 iOS17; do
  "$MIL" convert "$D/nms_dynamic.onnx" "$tmp/$t.mlpackage" --target $t >"$tmp/e" 2>&1 || fail "convert $t: $(cat "$tmp/e")"
  "$MIL" print "$tmp/$t.mlpackage" | grep -q 'non_maximum_suppression(' || fail "$t: no non_maximum_suppression op"
  "$MIL" verify "$tmp/$t.mlpackage" "${ins[@]}" --reference "selected=$D/selected.npy" --rtol 0 --atol 0 >"$tmp/v" 2>&1 ||
    fail "$t: selection differs from ONNX's: $(cat "$tmp/v")"
done
"$MIL" convert "$D/nms_unbounded.onnx" "$tmp/u.mlpackage" >"$tmp/e" 2>&1 && fail "no bound accepted"
grep -q "node 'selected' (NonMaxSuppression.*no bound of at most 65536 boxes per class: pass one with --nms-max-boxes N" \
  "$tmp/e" || fail "no-bound message: $(cat "$tmp/e")"
[ -e "$tmp/u.mlpackage" ] && fail "a failed conversion left its output"
"$MIL" convert "$D/nms_unbounded.onnx" "$tmp/u.mlpackage" --nms-max-boxes 8 >"$tmp/e" 2>&1 || fail "bounded: $(cat "$tmp/e")"
"$MIL" verify "$tmp/u.mlpackage" "${ins[@]}" --reference "selected=$D/selected_8.npy" --rtol 0 --atol 0 >"$tmp/v" 2>&1 ||
  fail "bound 8: $(cat "$tmp/v")"
# max_output_boxes_per_class absent is 0: nothing is selected
"$MIL" convert "$D/nms_absent.onnx" "$tmp/a.mlpackage" >"$tmp/e" 2>&1 || fail "absent: $(cat "$tmp/e")"
"$MIL" run "$tmp/a.mlpackage" "${ins[@]}" --no-write | grep -q '^selected: (0, 3) int32' || fail "absent: not empty"
echo "onnx_nms_bound: passed"

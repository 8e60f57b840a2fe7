#!/bin/bash
# `mil compress` never exits 0 having done nothing: a program older than the
# compression needs (an iOS15 conversion) is raised to iOS16 (iOS18 for
# int4 / per_block) with a note and compressed; a run that compresses no
# weight (all below weight_threshold, nothing to decompress) exits 1 with
# the reason and writes nothing.
#   bash compress_noop.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-cnoop.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
cat >"$tmp/ios15.mil" <<'MIL'
main[CoreML5](%x: (1, 8, fp32)(Tensor)) {
  block0() {
    %w: (4, 8, fp32)(Tensor) = const(val=[[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8], [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4], [8, 7, 6, 5, 4, 3, 2, 1]], name="w")
    %y: (1, 4, fp32)(Tensor) = linear(x=%x, weight=%w, name="y")
  } -> (%y)
}
MIL
# iOS15 + int8: raised to iOS16, compressed
"$MIL" compress "$tmp/ios15.mil" -o "$tmp/q8.mil" --quantize int8 --weight-threshold 0 2>"$tmp/err" ||
  fail "int8 of an iOS15 program: $(cat "$tmp/err")"
grep -q "raising the deployment target from iOS15 to iOS16" "$tmp/err" || fail "no note on iOS16: $(cat "$tmp/err")"
grep -q "1 weights compressed" "$tmp/err" || fail "int8: summary: $(cat "$tmp/err")"
grep -q "main\[CoreML6\]" "$tmp/q8.mil" || fail "int8: opset not raised: $(head -2 "$tmp/q8.mil")"
grep -q "constexpr_affine_dequantize" "$tmp/q8.mil" || fail "int8: no constexpr_affine_dequantize in the output"
"$MIL" validate "$tmp/q8.mil" >/dev/null 2>&1 || fail "int8 output does not validate"
# palettization and pruning likewise
for form in "--palettize 2 --mode uniform" "--prune 0.5"; do
  # shellcheck disable=SC2086
  "$MIL" compress "$tmp/ios15.mil" -o "$tmp/o.mil" $form --weight-threshold 0 2>"$tmp/err" || fail "$form: $(cat "$tmp/err")"
  grep -q "to iOS16" "$tmp/err" || fail "$form: no note: $(cat "$tmp/err")"
  grep -q "main\[CoreML6\]" "$tmp/o.mil" || fail "$form: opset not raised"
done
# int4 per_block needs iOS18
"$MIL" compress "$tmp/ios15.mil" -o "$tmp/q4.mil" --quantize int4 --granularity per_block --block-size 4 \
  --weight-threshold 0 2>"$tmp/err" || fail "int4: $(cat "$tmp/err")"
grep -q "from iOS15 to iOS18" "$tmp/err" || fail "int4: no note on iOS18: $(cat "$tmp/err")"
grep -q "constexpr_blockwise_shift_scale" "$tmp/q4.mil" || fail "int4: not compressed"
# every weight below the threshold: exit 1, reason, no output
"$MIL" compress "$tmp/ios15.mil" -o "$tmp/none.mil" --quantize int8 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "compressing nothing exited $rc, expected 1"
grep -q "largest float const weight of .* has 32 elements, and only weights of more than weight_threshold = 2048" \
  "$tmp/err" || fail "reason: $(cat "$tmp/err")"
[ -e "$tmp/none.mil" ] && fail "output written although nothing was compressed"
# a config that selects no weight
printf '{"config_type": "OpLinearQuantizerConfig", "global_config": {"weight_threshold": 0}, "op_type_configs": {"linear": null}}' >"$tmp/c.json"
"$MIL" compress "$tmp/ios15.mil" -o "$tmp/none.mil" --config "$tmp/c.json" 2>"$tmp/err" && fail "a config selecting nothing must exit 1"
grep -q "compressed no weight" "$tmp/err" || fail "config reason: $(cat "$tmp/err")"
# nothing to decompress
"$MIL" compress "$tmp/ios15.mil" -o "$tmp/none.mil" --decompress 2>"$tmp/err" && fail "decompressing nothing must exit 1"
grep -q "has no compressed weight (no constexpr op) to decompress" "$tmp/err" || fail "decompress reason: $(cat "$tmp/err")"
# compressing compressed weights again without --joint: exit 1, saying so
"$MIL" compress "$tmp/q8.mil" -o "$tmp/none.mil" --prune 0.5 --weight-threshold 0 2>"$tmp/err" &&
  fail "re-compressing without --joint must exit 1"
grep -q "are already compressed (1 constexpr ops); --joint compresses them again" "$tmp/err" ||
  fail "re-compress reason: $(cat "$tmp/err")"
# --target lower than the program: a note that it did nothing
"$MIL" compress "$tmp/q4.mil" -o "$tmp/j.mil" --prune 0.5 --weight-threshold 0 --joint --target iOS16 2>"$tmp/err"
grep -q "note: --target iOS16 leaves the program at iOS18" "$tmp/err" || fail "--target note: $(cat "$tmp/err")"
# and a compressed one decompresses
"$MIL" compress "$tmp/q8.mil" -o "$tmp/d.mil" --decompress 2>"$tmp/err" || fail "decompress: $(cat "$tmp/err")"
echo "ok"

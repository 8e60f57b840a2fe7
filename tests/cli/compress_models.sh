#!/bin/bash
# `mil compress` on every corpus model with each quick form: the result
# validates, compresses what it should, `mil compress --decompress` turns it
# back into plain consts, and `mil verify` finds the compressed model (whose
# constexpr ops the interpreter decodes) and the decompressed one giving the
# same outputs. Then `mil info --weights` on one of them.
#   bash compress_models.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
MODELS=$SHARED/corpus/models
if [ ! -d "$MODELS" ]; then
  echo "skipped: corpus not found"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-compress.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

forms=(
  "--quantize int8"
  "--quantize int4 --granularity per_block --block-size 32"
  "--palettize 4"
  "--palettize 2 --mode uniform"
  "--palettize 4 --granularity per_grouped_channel --group-size 16"
  "--palettize 8 --mode unique --weight-threshold 100000000"
  "--prune 0.5"
  "--prune-n-m 2:4"
)
for dir in "$MODELS"/*/; do
  name=$(basename "$dir")
  in=$dir/input.mlpackage
  [ -d "$in" ] || continue
  for form in "${forms[@]}"; do
    out=$tmp/$name.mlpackage
    dec=$tmp/$name.dec.mlpackage
    rm -rf "$out" "$dec"
    case "$form" in
    *unique*) # no weight is that large: nothing compressed, so exit 1 with the reason and no output
      # shellcheck disable=SC2086
      "$MIL" compress "$in" -o "$out" $form >"$tmp/err" 2>&1 && fail "$name $form: compressing nothing must exit 1"
      grep -q "compressed no weight: the largest float const weight .* weight_threshold = 100000000" "$tmp/err" ||
        fail "$name $form: reason: $(cat "$tmp/err")"
      [ -e "$out" ] && fail "$name $form: output written although nothing was compressed"
      continue ;;
    esac
    # shellcheck disable=SC2086
    "$MIL" compress "$in" -o "$out" $form >"$tmp/err" 2>&1 || fail "$name $form: $(cat "$tmp/err")"
    grep -q "weights compressed" "$tmp/err" || fail "$name $form: no summary: $(cat "$tmp/err")"
    grep -q ": 0 weights compressed" "$tmp/err" && fail "$name $form: nothing compressed"
    "$MIL" validate "$out" >"$tmp/val" 2>&1 || fail "$name $form: result does not validate: $(cat "$tmp/val")"
    "$MIL" compress "$out" -o "$dec" --decompress --quiet >"$tmp/err" 2>&1 || fail "$name $form: decompress: $(cat "$tmp/err")"
    "$MIL" print --complete "$dec" 2>/dev/null | grep -q "constexpr_" && fail "$name $form: constexpr ops left after --decompress"
    "$MIL" verify "$out" "$dec" >"$tmp/ver" 2>&1 || fail "$name $form: compressed and decompressed disagree: $(cat "$tmp/ver")"
  done
done

# get_weights_metadata
"$MIL" info "$MODELS/squeezenet1_1/input.mlpackage" --weights >"$tmp/w" 2>"$tmp/err" || fail "info --weights: $(cat "$tmp/err")"
grep -q "^[0-9]* weights of at least 2048 elements" "$tmp/w" || fail "info --weights header: $(head -3 "$tmp/w")"
grep -q "  child_ops: conv(name=" "$tmp/w" || fail "info --weights child ops: $(head -8 "$tmp/w")"

# usage errors exit 2, bad configs exit 1 with the key named
"$MIL" compress "$MODELS/squeezenet1_1/input.mlpackage" -o "$tmp/x.mlpackage" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no compression form given must be a usage error"
"$MIL" compress "$MODELS/squeezenet1_1/input.mlpackage" -o "$tmp/x.mlpackage" --palettize 5 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "nbits 5 must fail"
grep -q "global_config.nbits" "$tmp/err" || fail "the error names the key: $(cat "$tmp/err")"
[ ! -e "$tmp/x.mlpackage" ] || fail "no output is written on failure"
echo "ok"

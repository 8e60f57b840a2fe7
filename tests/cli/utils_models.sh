#!/bin/bash
# The model utilities from the command line (mil merge / edit / materialize /
# split / pipeline) against coremltools' own results, recorded in
# tests/data/utils by record_utils.py: the same programs (mil diff), the same
# weight.bin sizes; every merged function and the pipeline give the source
# model's outputs; bad input fails with a message and writes nothing.
#   bash utils_models.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
DATA=$2/data/utils
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-utils.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
wsize() { stat -c %s "$1/Data/com.apple.CoreML/weights/${2:-weight.bin}"; }
# expected.json's weight_bin_size of a case
ct_size() { grep -A200 "^ \"$1\": {" "$DATA/expected.json" | grep -m1 '"weight_bin_size"' | tr -dc 0-9; }
same() { "$MIL" diff "$1" "$2" >"$tmp/diff" || fail "$1 vs $2: $(cat "$tmp/diff")"; }

# merge: a base model and a copy with one changed (32, 64) fp32 layer
"$MIL" merge "$DATA/src_base.mlpackage:main:base" "$DATA/src_variant.mlpackage:main:adapted" \
  -o "$tmp/m.mlpackage" --default base >/dev/null 2>"$tmp/err" || fail "merge: $(cat "$tmp/err")"
base=$(ct_size src_base)
[ "$(wsize "$tmp/m.mlpackage")" = "$(ct_size ct_merged_shared)" ] || fail "merged weight.bin $(wsize "$tmp/m.mlpackage")"
[ "$(wsize "$tmp/m.mlpackage")" = $((base + 32 * 64 * 4 + 64)) ] || fail "merged weight.bin is not base + one layer"
same "$tmp/m.mlpackage" "$DATA/ct_merged_shared.mlpackage"
"$MIL" info "$tmp/m.mlpackage" | grep -q "functions: 2 (default: base)" || fail "default function"
for f in base:src_base adapted:src_variant; do
  "$MIL" run "$tmp/m.mlpackage" --function "${f%%:*}" --random-inputs --seed 7 --output-dir "$tmp/o_${f%%:*}" >/dev/null ||
    fail "run --function ${f%%:*}"
  "$MIL" run "$DATA/${f#*:}.mlpackage" --random-inputs --seed 7 --output-dir "$tmp/s_${f%%:*}" >/dev/null || fail "run ${f#*:}"
  cmp -s "$tmp/o_${f%%:*}/logits.npy" "$tmp/s_${f%%:*}/logits.npy" || fail "function ${f%%:*} differs from ${f#*:}"
done
# two unrelated networks, the second the default
"$MIL" merge "$DATA/src_base.mlpackage:main:classify" "$DATA/src_conv.mlpackage:main:segment" \
  -o "$tmp/u.mlpackage" --default segment >/dev/null || fail "merge unrelated"
[ "$(wsize "$tmp/u.mlpackage")" = "$(ct_size ct_merged_unrelated)" ] || fail "unrelated weight.bin"
same "$tmp/u.mlpackage" "$DATA/ct_merged_unrelated.mlpackage"
"$MIL" info "$tmp/u.mlpackage" | grep -q "functions: 2 (default: segment)" || fail "default segment"

# edit: renames; fp32 -> fp16 I/O of an iOS15 model
"$MIL" edit "$DATA/src_base.mlpackage" -o "$tmp/r.mlpackage" --rename x=input_ids --rename logits=scores >/dev/null ||
  fail "edit --rename"
"$MIL" diff --identical "$tmp/r.mlpackage" "$DATA/ct_renamed.mlpackage" | grep -qx identical || fail "rename not identical"
"$MIL" edit "$DATA/src_ios15.mlpackage" -o "$tmp/h.mlpackage" --io-type fp16 --input x >/dev/null || fail "edit --io-type"
same "$tmp/h.mlpackage" "$DATA/ct_fp16_io.mlpackage"
"$MIL" info "$tmp/h.mlpackage" | grep -q "specification version: 7" || fail "fp16 I/O needs spec 7"
"$MIL" info "$tmp/h.mlpackage" | grep -q "logits_to_fp16: fp16" || fail "output logits_to_fp16"

# materialize: batch 1 and 4
"$MIL" materialize "$DATA/src_dynamic.mlpackage" -o "$tmp/mat.mlpackage" --function batch_1:x=1,64 \
  --function batch_4:x=4,64 >/dev/null || fail "materialize"
same "$tmp/mat.mlpackage" "$DATA/ct_materialized.mlpackage"
[ "$(wsize "$tmp/mat.mlpackage")" = "$(ct_size ct_materialized)" ] || fail "materialized weight.bin"

# split and pipeline
"$MIL" split "$DATA/src_transformer.mlpackage" -o "$tmp/s" >"$tmp/split" || fail "split: $(cat "$tmp/split")"
grep -q "identical" "$tmp/split" || fail "chained chunks differ: $(cat "$tmp/split")"
same "$tmp/s/src_transformer_chunk1.mlpackage" "$DATA/ct_split/chunk1.mlpackage"
same "$tmp/s/src_transformer_chunk2.mlpackage" "$DATA/ct_split/chunk2.mlpackage"
"$MIL" pipeline "$tmp/s/src_transformer_chunk1.mlpackage" "$tmp/s/src_transformer_chunk2.mlpackage" \
  -o "$tmp/p.mlpackage" >/dev/null || fail "pipeline"
[ "$(wsize "$tmp/p.mlpackage" 0-weight.bin)" = 9280 ] && [ "$(wsize "$tmp/p.mlpackage" 1-weight.bin)" = 8960 ] ||
  fail "pipeline weight files"
"$MIL" run "$tmp/p.mlpackage" --random-inputs --seed 3 --output-dir "$tmp/po" >/dev/null || fail "run pipeline"
"$MIL" run "$DATA/src_transformer.mlpackage" --random-inputs --seed 3 --output-dir "$tmp/fo" >/dev/null || fail "run model"
cmp -s "$tmp/po/y.npy" "$tmp/fo/y.npy" || fail "pipeline output differs from the model's"

# bad input: exit 1 with a message, nothing written
"$MIL" merge "$DATA/src_base.mlpackage:main:a" "$DATA/src_variant.mlpackage:main:a" -o "$tmp/bad.mlpackage" \
  2>"$tmp/err" && fail "duplicate target accepted"
grep -q "already exist" "$tmp/err" || fail "duplicate target message: $(cat "$tmp/err")"
"$MIL" edit "$DATA/src_base.mlpackage" -o "$tmp/bad.mlpackage" --rename x=9x 2>"$tmp/err" && fail "bad name accepted"
grep -q "must be of the format" "$tmp/err" || fail "bad name message"
"$MIL" split "$tmp/m.mlpackage" -o "$tmp/bad" 2>"$tmp/err" && fail "split of a multifunction model"
grep -q "single 'main' function" "$tmp/err" || fail "split message"
[ ! -e "$tmp/bad.mlpackage" ] || fail "a failed command left output"
echo "ok"

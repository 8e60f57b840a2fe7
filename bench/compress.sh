#!/bin/sh
# Weight compression of the 1.2 GB fp32 transformer program (gen_transformer
# --preset 1k: 11 layers, hidden 1536, 176 weights): `mil compress` with
# int4 per-block quantization, 4-bit k-means palettization per grouped
# channel and 50% magnitude pruning, each in its own process, measured with
# /usr/bin/time (wall seconds, CPU seconds, peak RSS). The baseline is one
# streaming pass over the weights: `mil opt --pipeline empty` (load, write
# back). Writes the "Weight compression" section of bench/RESULTS.md
# (between the compress-bench markers; the rest of the file is kept).
#
# usage: sh bench/compress.sh BUILD_DIR
# environment: MIL_BENCH_DIR (scratch, needs about 3 GB), MIL_BENCH_RESULTS
set -eu
BUILD=${1:-build}
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${MIL_BENCH_DIR:-${TMPDIR:-/tmp}/mil-bench}/compress
RESULTS=${MIL_BENCH_RESULTS:-$HERE/RESULTS.md}
MIL=$BUILD/mil
GEN=$BUILD/bench/gen_transformer
mkdir -p "$WORK"
trap 'rm -rf "$WORK/out.mlpackage"' EXIT
IN=$WORK/transformer_1k.mlpackage
[ -d "$IN" ] || "$GEN" -o "$IN" --preset 1k >&2
sync
# warm the page cache so every run reads the weights from memory
cat "$IN/Data/com.apple.CoreML/weights/weight.bin" >/dev/null

rows=""
run() {
  label=$1
  shift
  rm -rf "$WORK/out.mlpackage"
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.txt" "$@" >/dev/null 2>"$WORK/err.txt" || {
    cat "$WORK/err.txt" >&2
    exit 1
  }
  read -r wall user sys rss <"$WORK/time.txt"
  out=$(du -sm "$WORK/out.mlpackage" | cut -f1)
  line=$(grep "weights compressed" "$WORK/err.txt" || echo "-")
  rows="$rows| $label | $wall | $(echo "$user + $sys" | bc) | $((rss / 1024)) | $out | $line |
"
  echo "$label: $wall s wall, $user s user, $sys s sys, $((rss / 1024)) MB peak RSS" >&2
}

run "baseline: mil opt --pipeline empty" "$MIL" opt "$IN" -o "$WORK/out.mlpackage" --pipeline empty --quiet
run "int4 per_block 32" "$MIL" compress "$IN" -o "$WORK/out.mlpackage" --quantize int4 --granularity per_block --block-size 32
run "palettize 4-bit kmeans per_grouped_channel 16" "$MIL" compress "$IN" -o "$WORK/out.mlpackage" --palettize 4 --granularity per_grouped_channel --group-size 16
run "prune 0.5 magnitude" "$MIL" compress "$IN" -o "$WORK/out.mlpackage" --prune 0.5

load=$(cut -d' ' -f1-3 /proc/loadavg)
section=$(cat <<EOF
<!-- compress-bench begin -->
## Weight compression (\`mil compress\`, bench/compress.sh)

Input: gen_transformer --preset 1k, $(du -sm "$IN" | cut -f1) MB (1.25 GB of fp32 weights). Each run loads the
model, compresses, runs the DEFAULT pipeline without add_fp16_cast and writes the .mlpackage. $(nproc) cores,
load average $load while measuring (CPU seconds are the figure to compare when the machine is shared).

| run | wall s | CPU s | peak RSS MB | output MB | mil compress summary |
|---|---|---|---|---|---|
$rows
<!-- compress-bench end -->
EOF
)
if [ -f "$RESULTS" ] && grep -q "compress-bench begin" "$RESULTS"; then
  awk -v s="$section" '/compress-bench begin/ { print s; skip = 1 } !skip { print } /compress-bench end/ { skip = 0 }' \
    "$RESULTS" >"$RESULTS.tmp" && mv "$RESULTS.tmp" "$RESULTS"
else
  printf '\n%s\n' "$section" >>"$RESULTS"
fi
echo "wrote $RESULTS" >&2

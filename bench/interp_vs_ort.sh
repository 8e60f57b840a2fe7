#!/bin/sh
# The interpreter against ONNX Runtime and PyTorch on the same networks.
#
#   sh bench/interp_vs_ort.sh [BUILD_DIR] [RUNS] [THREADS]
#
# 1. installs onnxruntime-node (ONNX Runtime's CPU provider, its Linux x64
#    library) with `npm install --ignore-scripts` into a scratch folder
#    ($SCRATCH, default /tmp/libmil-interp-vs-ort);
# 2. exports torchvision networks (random weights), a 4-layer BERT-like
#    encoder and a 1024x1024 U-Net to ONNX with /usr/bin/python3
#    (bench/export_torchvision.py, once per scratch folder; it also times
#    PyTorch's forward);
# 3. converts each with `mil convert` to an fp32 program (--precision fp32)
#    and to the default fp16 one;
# 4. times `mil run --runs RUNS` (best run, model loaded; default RUNS 5)
#    and ONNX Runtime (bench/ort_run.js: one session, best of RUNS) on the
#    same input, each in its own process, with the peak RSS of each process
#    (GNU time), and compares libmil's first output with ONNX Runtime's
#    (the largest |difference| over the largest |ONNX Runtime value|);
# 5. writes the table, then bench/interp_notes.md (the numbers before, the
#    kernels used, what misses), between the interp-vs-ort markers of
#    bench/RESULTS.md (bench/run.sh keeps that section).
#
# THREADS (default 0: each runtime's default) sets OMP_NUM_THREADS (the
# oneDNN kernels of the interpreter) and ONNX Runtime's intra-op threads.
# A missing peer (npm/node, torch) is said in the table; never a test.
set -u
BUILD=${1:-build}
RUNS=${2:-5}
THREADS=${3:-0}
SCRATCH=${SCRATCH:-/tmp/libmil-interp-vs-ort}
HERE=$(cd "$(dirname "$0")" && pwd)
MIL=$BUILD/mil
OUT=$HERE/RESULTS.md
MODELS=$SCRATCH/models
mkdir -p "$SCRATCH" "$MODELS"
[ -x "$MIL" ] || { echo "interp_vs_ort.sh: $MIL not built" >&2; exit 1; }
[ "$THREADS" -gt 0 ] 2>/dev/null && export OMP_NUM_THREADS=$THREADS

ORT=yes
if [ ! -d "$SCRATCH/node_modules/onnxruntime-node" ]; then
  if command -v npm >/dev/null 2>&1; then
    (cd "$SCRATCH" && npm install --ignore-scripts onnxruntime-node >npm.log 2>&1) || ORT="npm install failed"
  else
    ORT="npm not found"
  fi
fi
command -v node >/dev/null 2>&1 || ORT="node not found"
ORT_VERSION=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$SCRATCH/node_modules/onnxruntime-node/package.json" 2>/dev/null | head -1)

NETS=${NETS:-"resnet18 resnet50 mobilenet_v2 mobilenet_v3_small efficientnet_b0 mnasnet0_5 shufflenet_v2_x1_0 regnet_x_400mf googlenet vit_b_16 bert4 gpt4 unet1024"}
TORCH=yes
MISSING=""
for n in $NETS; do [ -f "$MODELS/$n.onnx" ] && [ -f "$MODELS/$n.torch.json" ] || MISSING="$MISSING $n"; done
if [ -n "$MISSING" ]; then # exported once per scratch folder
  /usr/bin/python3 "$HERE/export_torchvision.py" "$MODELS" $MISSING >"$SCRATCH/export.log" 2>&1 ||
    TORCH="torch/torchvision missing or export failed (see $SCRATCH/export.log)"
fi

# peak RSS (MB) and the "best" time of a command's stderr/stdout
rss_of() { awk '/^maxrss / { printf "%.0f", $2 / 1024 }' "$1"; }
# the largest |a - b| over the largest |b| (b: ONNX Runtime's output), or ?
rel_err() {
  [ -f "$1" ] && [ -f "$2" ] || { echo "?"; return; }
  /usr/bin/python3 -c 'import sys, numpy as np
a = np.load(sys.argv[1]).astype(np.float64); b = np.load(sys.argv[2]).astype(np.float64)
if a.shape != b.shape: print("shape %s vs %s" % (a.shape, b.shape)); sys.exit()
d = np.abs(a - b); m = np.abs(b).max()
print("NaN/inf" if not np.isfinite(a).all() else "%.1e" % (d.max() / m if m > 0 else d.max()))' "$1" "$2" 2>/dev/null || echo "?"
}

ROWS=""
for n in $NETS; do
  onnx=$MODELS/$n.onnx x=$MODELS/$n.x.npy
  [ -f "$onnx" ] || { ROWS="$ROWS| $n | (no ONNX export) |||||||||||
"; continue; }
  torch_ms=$(sed -n 's/.*"best_ms": *\([0-9.]*\).*/\1/p' "$MODELS/$n.torch.json" 2>/dev/null)
  [ -n "$torch_ms" ] && torch_ms=$(awk -v t="$torch_ms" 'BEGIN { printf "%.1f", t }')
  ort_ms="" ort_rss=""
  if [ "$ORT" = yes ]; then
    NODE_PATH=$SCRATCH/node_modules /usr/bin/time -f "maxrss %M" -o "$SCRATCH/$n.ort.time" \
      node "$HERE/ort_run.js" "$onnx" "$x" "$RUNS" "$THREADS" "$SCRATCH/$n.ort.y.npy" >"$SCRATCH/$n.ort.out" 2>&1 &&
      ort_ms=$(awk '{ print $4 }' "$SCRATCH/$n.ort.out") && ort_rss=$(rss_of "$SCRATCH/$n.ort.time")
  fi
  # libmil's intra-op threads (--threads, default the machine's CPUs) follow THREADS too
  thr=""
  [ "$THREADS" -gt 0 ] 2>/dev/null && thr="--threads $THREADS"
  for p in fp32 fp16; do
    pkg=$MODELS/$n.$p.mlpackage
    "$MIL" convert "$onnx" "$pkg" --precision "$p" >"$SCRATCH/$n.$p.convert.log" 2>&1
    ms="" rss="" err=""
    rm -rf "$SCRATCH/$n.$p.out"
    if /usr/bin/time -f "maxrss %M" -o "$SCRATCH/$n.$p.time" "$MIL" run "$pkg" --input "$x" \
      --output-dir "$SCRATCH/$n.$p.out" --runs "$RUNS" $thr >/dev/null 2>"$SCRATCH/$n.$p.run.log"; then
      ms=$(sed -n 's/^runs: .*best \([0-9.]*\) ms$/\1/p' "$SCRATCH/$n.$p.run.log")
      rss=$(rss_of "$SCRATCH/$n.$p.time")
      err=$(rel_err "$SCRATCH/$n.$p.out/y.npy" "$SCRATCH/$n.ort.y.npy")
    fi
    eval "ms_$p=\$ms rss_$p=\$rss err_$p=\$err"
  done
  ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
  ROWS="$ROWS| $n | ${torch_ms:-?} | ${ort_ms:-?} | ${ms_fp32:-fail} | ${ms_fp16:-fail} | $(ratio "$ms_fp32" "$ort_ms") | $(ratio "$ms_fp16" "$ort_ms") | ${ort_rss:-?} | ${rss_fp32:-?} | ${rss_fp16:-?} | ${err_fp32:-?} | ${err_fp16:-?} |
"
done

TABLE=$(cat <<EOF
<!-- interp-vs-ort:begin -->
## Interpreter against ONNX Runtime (bench/interp_vs_ort.sh)

Generated by \`sh bench/interp_vs_ort.sh $BUILD $RUNS $THREADS\` on $(date -u '+%Y-%m-%d %H:%M') UTC, revision
$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null); $(getconf _NPROCESSORS_ONLN) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end.
ms: best of $RUNS runs on the same seeded input, model loaded (libmil: \`mil run --runs\`; ONNX Runtime
${ORT_VERSION:-?}: one InferenceSession, CPU provider; PyTorch: forward under no_grad). Threads: $( [ "$THREADS" -gt 0 ] 2>/dev/null && echo "$THREADS in every runtime" || echo "each runtime's default" ).
RSS: peak RSS of the whole process in MB (libmil's includes loading and converting nothing; ONNX
Runtime's includes node). err: libmil's output against ONNX Runtime's, the largest |difference| over
the largest |ONNX Runtime value| (random weights: the classifiers' outputs are as small as 1e-8 for
some networks, below fp16's normal range, where the fp16 program's relative error says little). ONNX Runtime: $ORT. PyTorch: $TORCH.

| network | PyTorch ms | ONNX Runtime ms | libmil fp32 ms | libmil fp16 ms | fp32 / ORT | fp16 / ORT | ORT RSS MB | fp32 RSS MB | fp16 RSS MB | fp32 err | fp16 err |
|---|---|---|---|---|---|---|---|---|---|---|---|
$ROWS
$(cat "$HERE/interp_notes.md" 2>/dev/null)
<!-- interp-vs-ort:end -->
EOF
)
if grep -q '<!-- interp-vs-ort:begin -->' "$OUT" 2>/dev/null; then
  awk -v t="$TABLE" '/<!-- interp-vs-ort:begin -->/ { print t; skip = 1; next }
                     /<!-- interp-vs-ort:end -->/ { skip = 0; next } !skip' "$OUT" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"
else
  printf '\n%s\n' "$TABLE" >>"$OUT"
fi
echo "$TABLE"

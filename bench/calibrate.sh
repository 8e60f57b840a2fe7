#!/bin/sh
# Activation calibration (issue 28 item 7): a resnet18-style network
# (bench/gen_cnn, then the default pipeline: fp16, iOS17) calibrated on 32
# samples, against 32 predict calls of the same model, in one Python process
# with the libmil package (libmil.optimize.coreml._post_training_quantization
# ._activation_stats: the C calibrator, one interpreter run per sample with
# the observer keeping min/max), and the peak RSS of the whole
# `mil compress --quantize-activations int8` (load, calibrate, insert pairs,
# pipeline, save) with /usr/bin/time.
#
# usage: sh bench/calibrate.sh BUILD_DIR [NET]   (NET: resnet18 default)
# environment: MIL_BENCH_DIR (scratch), MIL_BENCH_SAMPLES (default 32)
set -eu
BUILD=$(cd "${1:-build}" && pwd)
NET=${2:-resnet18}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${MIL_BENCH_DIR:-${TMPDIR:-/tmp}/mil-bench}/calibrate
N=${MIL_BENCH_SAMPLES:-32}
PY=/usr/bin/python3
mkdir -p "$WORK"
trap 'rm -rf "$WORK/out.mlpackage"' EXIT
[ -d "$WORK/$NET.mlpackage" ] || {
  "$BUILD/bench/gen_cnn" -o "$WORK/${NET}_raw.mlpackage" --net "$NET" --quiet >&2
  "$BUILD/mil" opt "$WORK/${NET}_raw.mlpackage" -o "$WORK/$NET.mlpackage" --target iOS17 --quiet
}
rm -rf "$WORK/samples"
$PY - "$WORK/samples" "$N" <<'PYEOF'
import os, sys, numpy as np
rng = np.random.default_rng(0)
for k in range(int(sys.argv[2])):
    d = os.path.join(sys.argv[1], "%02d" % k)
    os.makedirs(d)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
PYEOF
LIBMIL_LIBRARY=$BUILD/libmil.so PYTHONPATH=$HERE/../python $PY - "$WORK/$NET.mlpackage" "$WORK/samples" <<'PYEOF'
import os, sys, time, numpy as np
import libmil
from libmil.optimize.coreml import _post_training_quantization as ptq
m = libmil.load(sys.argv[1])
samples = [{"x": np.load(os.path.join(sys.argv[2], d, "x.npy"))} for d in sorted(os.listdir(sys.argv[2]))]
m.predict(samples[0])  # warm the weight caches as calibration's own first run does
t0 = time.perf_counter(); c0 = time.process_time()
for s in samples:
    m.predict(s)
tp, cp = time.perf_counter() - t0, time.process_time() - c0
t0 = time.perf_counter(); c0 = time.process_time()
ptq._activation_stats(m, samples)
tc, cc = time.perf_counter() - t0, time.process_time() - c0
print("%d predicts: %.2f s wall, %.2f s CPU" % (len(samples), tp, cp))
print("calibration on %d samples: %.2f s wall, %.2f s CPU (%.2fx the predicts' CPU time)" % (len(samples), tc, cc, cc / cp))
PYEOF
/usr/bin/time -f "%e %U %S %M" -o "$WORK/time.txt" "$BUILD/mil" compress "$WORK/$NET.mlpackage" -o "$WORK/out.mlpackage" \
  --quantize-activations int8 --calibration-data "$WORK/samples" --quiet
read -r wall user sys rss <"$WORK/time.txt"
wbytes=$(stat -c %s "$WORK/$NET.mlpackage/Data/com.apple.CoreML/weights/weight.bin")
echo "mil compress --quantize-activations: $wall s wall, $user s user; peak RSS $((rss / 1024)) MB (weights $((wbytes / 1048576)) MB)"

#!/bin/bash
# App-ready conversion (ct.convert's model interface): five ONNX exports of
# small PyTorch networks converted with image inputs, a classifier, flexible
# shapes, fp16 I/O and metadata must give the model description coremltools
# gave the traced networks with the same options (tests/data/app/*.ct.mlpackage,
# recorded by tests/data/app/record.py), and the same predictions.
#   bash convert_app.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
D=$2/data/app
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-app.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# the description as `mil info` shows it: the function's features and the
# metadata (coremltools' own conversion keys left out)
describe() {
  "$MIL" info "$1" | sed -n '/^function /,/^ops:/p' | grep -v '^ops:' | grep -v 'com.github.apple.coremltools\|com.libmil.' |
    grep -v '^  userDefined:$'
}
check() { # NAME OURS INPUT_NAME [reference output]
  local name=$1 ours=$2
  describe "$D/$name.ct.mlpackage" >"$tmp/$name.ct.txt" || fail "$name: info of coremltools' model"
  describe "$ours" >"$tmp/$name.txt" || fail "$name: info"
  diff -u "$tmp/$name.ct.txt" "$tmp/$name.txt" >"$tmp/$name.diff" || fail "$name: description differs: $(cat "$tmp/$name.diff")"
}
convert() { # NAME OUT ARGS...
  local name=$1 out=$2
  shift 2
  "$MIL" convert "$D/$name.onnx" "$out" "$@" >"$tmp/out" 2>&1 || fail "$name: convert: $(cat "$tmp/out")"
}

# 1. RGB image, per-channel bias, 1000-class classifier, metadata (iOS16)
convert rgb_classifier "$tmp/rgb.mlpackage" --target iOS16 \
  --image "image:scale=1/255:bias=-0.485,-0.456,-0.406:color_layout=RGB" --class-labels "$D/rgb_classifier.labels.txt" \
  --author "libmil tests" --license BSD-3-Clause --short-description "A small RGB image classifier" --version 1.0
check rgb_classifier "$tmp/rgb.mlpackage"
# libmil's own metadata keys record the conversion
"$MIL" info "$tmp/rgb.mlpackage" | grep -q 'com.libmil.version' || fail "no com.libmil.version metadata"
"$MIL" print "$tmp/rgb.mlpackage" >"$tmp/rgb.mil" || fail "print"
grep -q 'mul(x=%image, y=0.003921568859368563, name="image__scaled__")' "$tmp/rgb.mil" || fail "no image__scaled__ mul"
grep -q 'add(x=%image__scaled__, y=\[\[\[\[-0.48500001430511475\]\], \[\[-0.4560000002384186\]\], \[\[-0.4059999883174896\]\]\]\], name="image__biased__")' \
  "$tmp/rgb.mil" || fail "no image__biased__ add"
grep -q '%probs_cast_to_fp32: (1, 1000, fp32)(Tensor) = cast(x=%probs, dtype="fp32", name="probs_cast_to_fp32")' \
  "$tmp/rgb.mil" || fail "probabilities not cast to fp32 for classify"
grep -q '} -> (%classLabel, %classLabel_probs)' "$tmp/rgb.mil" || fail "classifier outputs"
# the label coremltools' model gives on the same pixels (our interpreter runs both)
"$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/rgb_classifier.planes.npy" --no-write >"$tmp/ours.txt" || fail "run"
"$MIL" run "$D/rgb_classifier.ct.mlpackage" --input "image=$D/rgb_classifier.planes.npy" --no-write >"$tmp/ct.txt" ||
  fail "run ct"
diff "$tmp/ct.txt" "$tmp/ours.txt" >/dev/null || fail "classifier outputs differ: $(cat "$tmp/ours.txt" "$tmp/ct.txt")"

# an image input takes a picture: PNG and (H, W, C) uint8 pixels give the
# planes' result; a JPEG gives what its pixels as PIL decodes them give
for f in png input.npy; do
  "$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/rgb_classifier.$f" --no-write >"$tmp/img.txt" || fail "run $f"
  diff "$tmp/ours.txt" "$tmp/img.txt" >/dev/null || fail "image from .$f differs from its planes"
done
"$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/rgb_classifier.jpg" --no-write >"$tmp/jpg.txt" || fail "run jpg"
"$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/rgb_classifier.jpg.npy" --no-write >"$tmp/jpgnpy.txt" || fail "run jpg.npy"
diff "$tmp/jpg.txt" "$tmp/jpgnpy.txt" >/dev/null || fail "JPEG decoded differently from PIL"

# 2. BGR image, scale only (iOS17); fp16 output by default
convert bgr_scale "$tmp/bgr.mlpackage" --target iOS17 --image "image:scale=1/127.5:color_layout=BGR"
check bgr_scale "$tmp/bgr.mlpackage"
"$MIL" print "$tmp/bgr.mlpackage" | grep -q 'image__biased__' && fail "a zero bias must add no op"
"$MIL" verify "$tmp/bgr.mlpackage" "$D/bgr_scale.ct.mlpackage" --input "image=$D/bgr_scale.planes.npy" --rtol 0 --atol 0 \
  >"$tmp/v" 2>&1 || fail "bgr: predictions differ from coremltools' model: $(cat "$tmp/v")"
"$MIL" verify "$tmp/bgr.mlpackage" --input "image=$D/bgr_scale.planes.npy" --reference "probs=$D/bgr_scale.torch_out.npy" \
  >"$tmp/v" 2>&1 || fail "bgr: PyTorch's output not reproduced: $(cat "$tmp/v")"

# 3. three enumerated image sizes
convert enumerated_image "$tmp/en.mlpackage" --target iOS16 --image "image:scale=1/255" \
  --input-shape image=1,3,32,32 --input-shape image=1,3,64,64 --input-shape image=1,3,48,96
check enumerated_image "$tmp/en.mlpackage"
"$MIL" verify "$tmp/en.mlpackage" --input "image=$D/enumerated_image.planes.npy" \
  --reference "probs=$D/enumerated_image.torch_out.npy" >"$tmp/v" 2>&1 || fail "enumerated: $(cat "$tmp/v")"

# a picture of a size the description does not allow is refused, naming the sizes allowed
head -c 2000 "$D/bgr_scale.png" >"$tmp/cut.png"
"$MIL" run "$tmp/en.mlpackage" --input "image=$tmp/cut.png" --no-write >"$tmp/e" 2>&1 && fail "a truncated PNG accepted"
grep -q "corrupt PNG" "$tmp/e" || fail "truncated PNG message: $(cat "$tmp/e")"
head -c 600 "$D/bgr_scale.jpg" >"$tmp/cut.jpg" # a truncated JPEG is refused too (PIL: "image file is truncated")
"$MIL" run "$tmp/en.mlpackage" --input "image=$tmp/cut.jpg" --no-write >"$tmp/e" 2>&1 && fail "a truncated JPEG accepted"
grep -q "corrupt JPEG (Premature end of JPEG file)" "$tmp/e" || fail "truncated JPEG message: $(cat "$tmp/e")"
"$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/batch_range_fp16.input.npy" --no-write >"$tmp/e" 2>&1 &&
  fail "a (2, 16) array accepted as the image"
"$MIL" run "$tmp/en.mlpackage" --input "image=$D/bgr_scale.jpg" --no-write >/dev/null 2>&1 || fail "32x32 is allowed"
"$MIL" run "$tmp/en.mlpackage" --input "image=$D/size_30x20.png" --no-write >"$tmp/e" 2>&1 && fail "30x20 accepted"
grep -q "input 'image': an image of 30x20 (width x height); the model takes 32x32, 64x64, 96x48" "$tmp/e" ||
  fail "size message: $(cat "$tmp/e")"
"$MIL" run "$tmp/rgb.mlpackage" --input "image=$D/size_30x20.png" --no-write >"$tmp/e" 2>&1 && fail "30x20 accepted"
grep -q "the model takes 32x32 only" "$tmp/e" || fail "fixed size message: $(cat "$tmp/e")"

# 4. batch RangeDim(1, 8), fp16 input and output
convert batch_range_fp16 "$tmp/br.mlpackage" --target iOS16 --input-shape x=1..8,16 --input-dtype x=fp16 --output y:fp16
check batch_range_fp16 "$tmp/br.mlpackage"
"$MIL" verify "$tmp/br.mlpackage" --input "x=$D/batch_range_fp16.input.npy" \
  --reference "y=$D/batch_range_fp16.torch_out.npy" >"$tmp/v" 2>&1 || fail "batch range: $(cat "$tmp/v")"

# 5. int32 tokens with a RangeDim sequence length (default 4)
convert token_range "$tmp/tr.mlpackage" --target iOS16 --input-shape ids=1,1..128:4 --input-dtype ids=int32 --output out
check token_range "$tmp/tr.mlpackage"
"$MIL" verify "$tmp/tr.mlpackage" --input "ids=$D/token_range.input.npy" \
  --reference "out=$D/token_range.torch_out.npy" >"$tmp/v" 2>&1 || fail "token range: $(cat "$tmp/v")"

# errors name what is wrong
"$MIL" convert "$D/bgr_scale.onnx" "$tmp/x.mlpackage" --image nosuch >"$tmp/e" 2>&1 && fail "unknown image input accepted"
grep -q "input type 'nosuch': the model has no input of that name" "$tmp/e" || fail "unknown input message: $(cat "$tmp/e")"
"$MIL" convert "$D/batch_range_fp16.onnx" "$tmp/x.mlpackage" --input-dtype x=fp16 >"$tmp/e" 2>&1 &&
  fail "fp16 input before iOS16 accepted"
grep -q "float16 inputs need minimum_deployment_target iOS16" "$tmp/e" || fail "fp16 target message: $(cat "$tmp/e")"
"$MIL" convert "$D/rgb_classifier.onnx" "$tmp/x.mlpackage" --class-labels "$D/batch_range_fp16.ct.mil" >"$tmp/e" 2>&1 &&
  fail "a label count that differs accepted"
grep -q "class labels were given; the probabilities 'probs' have 1000 values" "$tmp/e" || fail "labels message: $(cat "$tmp/e")"
echo "convert_app: 5 models described and predicting as coremltools' conversions"

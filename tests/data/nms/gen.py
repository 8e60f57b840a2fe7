"""Writes NonMaxSuppression models whose number of boxes is known only at run
time (dim_param "N"), an input, and the selection ONNX's reference semantics give
(computed here in numpy from the operator's definition, not by libmil).

Run: /usr/bin/python3 gen.py (needs the onnx package).
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def model(name, max_out, center=0):
    inits = [helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.5]),
             helper.make_tensor("thr", TensorProto.FLOAT, [1], [0.2])]
    ins = ["boxes", "scores"]
    if max_out is not None:
        inits.append(helper.make_tensor("max_out", TensorProto.INT64, [1], [max_out]))
        ins += ["max_out", "iou", "thr"]
    else:
        ins += ["", "iou", "thr"]
    node = helper.make_node("NonMaxSuppression", ins, ["selected"], center_point_box=center)
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, "N", 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, "N"])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["S", 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def iou(a, b):
    ya0, ya1 = sorted((a[0], a[2])); xa0, xa1 = sorted((a[1], a[3]))
    yb0, yb1 = sorted((b[0], b[2])); xb0, xb1 = sorted((b[1], b[3]))
    ih = max(0.0, min(ya1, yb1) - max(ya0, yb0)); iw = max(0.0, min(xa1, xb1) - max(xa0, xb0))
    inter = ih * iw
    union = (ya1 - ya0) * (xa1 - xa0) + (yb1 - yb0) * (xb1 - xb0) - inter
    return inter / union if union > 0 else 0.0


def reference(boxes, scores, max_out, iou_t, thr):
    out = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            cand = [i for i in np.argsort(-scores[b, c], kind="stable") if scores[b, c, i] > thr]
            kept = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                if all(iou(boxes[b, i], boxes[b, k]) <= iou_t for k in kept):
                    kept.append(i)
            out += [[b, c, i] for i in kept]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def main():
    model("nms_dynamic", 3)
    model("nms_unbounded", 2**63 - 1)  # "all of them", as exporters often write it
    model("nms_absent", None)  # max_output_boxes_per_class absent: 0, nothing selected
    rng = np.random.default_rng(7)
    n = 200  # more boxes than the unrolled selection takes
    y0 = rng.uniform(0, 1, n); x0 = rng.uniform(0, 1, n)
    h = rng.uniform(0.05, 0.3, n); w = rng.uniform(0.05, 0.3, n)
    boxes = np.stack([y0, x0, y0 + h, x0 + w], axis=1)[None].astype(np.float32)
    scores = rng.uniform(0, 1, (1, 2, n)).astype(np.float32)
    np.save(os.path.join(HERE, "boxes.npy"), boxes)
    np.save(os.path.join(HERE, "scores.npy"), scores)
    np.save(os.path.join(HERE, "selected.npy"), reference(boxes, scores, 3, 0.5, 0.2).astype(np.int32))
    np.save(os.path.join(HERE, "selected_8.npy"), reference(boxes, scores, 8, 0.5, 0.2).astype(np.int32))


if __name__ == "__main__":
    main()

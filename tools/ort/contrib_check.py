"""Compares the numpy references of tests/data/onnx_contrib (gen.py) with
ONNX Runtime on the same models and inputs, through onnxruntime-node
(`npm install --ignore-scripts onnxruntime-node` in ORT_NODE_DIR, default
/tmp/ortnode). Prints, per case and output, the largest difference relative
to the largest reference value. A script for checking, not a test.

    /usr/bin/python3 tools/ort/contrib_check.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "onnx_contrib")
NODE_DIR = os.environ.get("ORT_NODE_DIR", "/tmp/ortnode")


def main():
    names = [l.strip() for l in open(os.path.join(DATA, "cases.txt")) if l.strip() and not l.startswith("#")]
    cases, refs = [], {}
    for n in names:
        d = os.path.join(DATA, n)
        m = onnx.load(os.path.join(d, "model.onnx"))
        ins = []
        for k, vi in enumerate(m.graph.input):
            a = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "test_data_set_0", "input_%d.pb" % k)))
            ins.append({"name": vi.name, "dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()})
        refs[n] = [(vo.name, numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "test_data_set_0", "output_%d.pb" % k))))
                   for k, vo in enumerate(m.graph.output)]
        cases.append({"name": n, "model": os.path.join(d, "model.onnx"), "inputs": ins})
    with tempfile.TemporaryDirectory() as t:
        cj, oj = os.path.join(t, "cases.json"), os.path.join(t, "out.json")
        json.dump(cases, open(cj, "w"))
        env = dict(os.environ, NODE_PATH=os.path.join(NODE_DIR, "node_modules"))
        subprocess.run(["node", os.path.join(ROOT, "tools", "ort", "run_onnx_cases.js"), cj, oj], check=True, env=env)
        got = json.load(open(oj))
    worst = 0.0
    for n in names:
        r = got.get(n, {})
        if "error" in r:
            print("%-28s ONNX Runtime refuses: %s" % (n, " ".join(r["error"].split())[:300]))
            continue
        for on, ref in refs[n]:
            y = np.array(r[on], np.float64).reshape(ref.shape)
            rel = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30)
            worst = max(worst, rel)
            print("%-28s %-20s max |ORT - numpy| / max |numpy| = %.2e" % (n, on, rel))
    print("worst: %.2e" % worst)


if __name__ == "__main__":
    sys.exit(main())

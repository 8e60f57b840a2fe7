// Runs ONNX models with ONNX Runtime (onnxruntime-node) on inputs given as
// JSON and writes the outputs as JSON. Used by tools/ort/contrib_check.py to
// check the numpy references of tests/data/onnx_contrib against ONNX Runtime;
// never a test dependency.
//   NODE_PATH=/tmp/ortnode/node_modules node run_onnx_cases.js cases.json out.json
const fs = require('fs');
const ort = require('onnxruntime-node');
const types = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array };

(async () => {
  const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const out = {};
  for (const c of cases) {
    try {
      const s = await ort.InferenceSession.create(c.model);
      const feeds = {};
      for (const i of c.inputs) {
        const T = types[i.dtype];
        const data = i.dtype === 'int64' ? T.from(i.data.map(BigInt)) : T.from(i.data);
        feeds[i.name] = new ort.Tensor(i.dtype, data, i.shape);
      }
      const r = await s.run(feeds);
      out[c.name] = {};
      for (const k of Object.keys(r)) out[c.name][k] = Array.from(r[k].data, Number);
    } catch (e) {
      out[c.name] = { error: String(e.message || e) };
    }
  }
  fs.writeFileSync(process.argv[3], JSON.stringify(out));
})();

// Times ONNX Runtime's CPU provider on one model (bench/interp_vs_ort.sh):
//   NODE_PATH=SCRATCH/node_modules node bench/ort_run.js MODEL.onnx INPUT.npy RUNS [THREADS]
// Prints "first MS best MS" (one session, the same fp32 input every run;
// THREADS: intra-op threads, 0 or absent = ONNX Runtime's default).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const b = fs.readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const header = b.slice(10, 10 + hlen).toString('latin1');
  if (!/'descr': '<f4'/.test(header)) throw new Error(path + ': expected a little-endian float32 array');
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length));
  return new ort.Tensor('float32', data, shape);
}

async function main() {
  const [model, input, runsArg, threadsArg] = process.argv.slice(2);
  const runs = Number(runsArg || 5), threads = Number(threadsArg || 0);
  const opts = { executionProviders: ['cpu'] };
  if (threads > 0) opts.intraOpNumThreads = threads;
  const s = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  feeds[s.inputNames[0]] = readNpy(input);
  let first = 0, best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await s.run(feeds);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (i === 0) first = ms;
    if (ms < best) best = ms;
  }
  console.log(`first ${first.toFixed(3)} best ${best.toFixed(3)}`);
}

main().catch((e) => {
  console.error(String(e));
  process.exit(1);
});

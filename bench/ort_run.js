// Times ONNX Runtime's CPU provider on one model (bench/interp_vs_ort.sh):
//   NODE_PATH=SCRATCH/node_modules node bench/ort_run.js MODEL.onnx INPUT.npy RUNS [THREADS [OUT.npy]]
// Prints "first MS best MS" (one session, the same fp32 input every run;
// THREADS: intra-op threads, 0 or absent = ONNX Runtime's default). OUT.npy:
// the first output of the last run, written as a float32 array (the
// benchmark compares libmil's outputs with it).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');
const { readNpy: readNpyWith } = require('./ort_npy.js');

const readNpy = (path) => readNpyWith(ort, path);

function writeNpy(path, t) {
  const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${t.dims.join(', ')}${t.dims.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  const h = header + ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(pre);
  pre.writeUInt16LE(h.length, 8);
  const data = Float32Array.from(t.data, Number);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(h, 'latin1'), Buffer.from(data.buffer)]));
}

async function main() {
  const [model, input, runsArg, threadsArg, outPath] = process.argv.slice(2);
  const runs = Number(runsArg || 5), threads = Number(threadsArg || 0);
  const opts = { executionProviders: ['cpu'] };
  if (threads > 0) opts.intraOpNumThreads = threads;
  const s = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  feeds[s.inputNames[0]] = readNpy(input);
  let first = 0, best = Infinity, res = null;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    res = await s.run(feeds);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (i === 0) first = ms;
    if (ms < best) best = ms;
  }
  if (outPath && res) writeNpy(outPath, res[s.outputNames[0]]);
  console.log(`first ${first.toFixed(3)} best ${best.toFixed(3)}`);
}

main().catch((e) => {
  console.error(String(e));
  process.exit(1);
});

// ONNX Runtime's per-op profile of one model, in the form of `mil run --profile`:
//   NODE_PATH=SCRATCH/node_modules node bench/ort_profile.js MODEL.onnx INPUT.npy RUNS [THREADS]
// One session (CPU provider, THREADS intra-op threads, default 1) with ONNX Runtime's
// profiler on; the first run is a warm-up and is left out. Prints per op type the kernels'
// time per run (the profiler's "kernel_time" events, summed over nodes and averaged over the
// timed runs) and the twenty slowest nodes. The profiler's JSON file is written to the
// working directory and removed afterwards.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');
const { readNpy } = require('./ort_npy.js');

async function main() {
  const [model, input, runsArg, threadsArg] = process.argv.slice(2);
  if (!model || !input) throw new Error('usage: node bench/ort_profile.js MODEL.onnx INPUT.npy RUNS [THREADS]');
  const runs = Math.max(2, Number(runsArg || 10)), threads = Number(threadsArg || 1);
  const opts = { executionProviders: ['cpu'], enableProfiling: true, profileFilePrefix: 'ort-profile' };
  if (threads > 0) opts.intraOpNumThreads = threads;
  const s = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  feeds[s.inputNames[0]] = readNpy(ort, input);
  const marks = [];
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await s.run(feeds);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (i > 0 && ms < best) best = ms;
  }
  s.endProfiling();
  await s.release();
  const file = fs.readdirSync('.').filter((f) => f.startsWith('ort-profile') && f.endsWith('.json')).sort().pop();
  if (!file) throw new Error('ONNX Runtime wrote no profile');
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  // model_run events bracket the runs: keep kernel events after the first run's end
  const runEv = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const start = runEv.length > 1 ? runEv[0].ts + runEv[0].dur : 0;
  const timed = Math.max(1, runEv.length - 1);
  const byType = new Map(), byNode = new Map();
  let total = 0;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < start) continue;
    const type = (e.args && e.args.op_name) || '?';
    const node = e.name.slice(0, -'_kernel_time'.length);
    const t = byType.get(type) || { n: 0, us: 0 };
    t.n++, t.us += e.dur;
    byType.set(type, t);
    const nd = byNode.get(node) || { type, us: 0 };
    nd.us += e.dur;
    byNode.set(node, nd);
    total += e.dur;
  }
  console.log(`runs: ${runs} (${timed} profiled), best ${best.toFixed(3)} ms; kernels ${(total / timed / 1000).toFixed(3)} ms per run`);
  console.log('op type                       ops/run       ms/run      us/op       %');
  for (const [type, t] of [...byType].sort((a, b) => b[1].us - a[1].us)) {
    const ops = t.n / timed;
    console.log(`${type.padEnd(28)}${ops.toFixed(0).padStart(8)}${(t.us / timed / 1000).toFixed(3).padStart(13)}` +
      `${(t.us / t.n).toFixed(1).padStart(11)}${((100 * t.us) / total).toFixed(1).padStart(7)}%`);
  }
  console.log('slowest 20 node(s):');
  for (const [node, t] of [...byNode].sort((a, b) => b[1].us - a[1].us).slice(0, 20))
    console.log(`${(t.us / timed / 1000).toFixed(3).padStart(12)}  ${t.type.padEnd(24)} ${node}`);
}

main().catch((e) => {
  console.error(String(e));
  process.exit(1);
});

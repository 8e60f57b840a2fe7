// Helpers of tools/conformance-real.sh (Node, with onnxruntime-node):
//   node ort.js run MODEL DIR SPEC...   writes deterministic inputs DIR/in/NAME.npy
//                                      and ONNX Runtime's outputs DIR/ort/K.npy
//                                      (K = output index), their names in
//                                      DIR/ort/names.txt
//   node ort.js compare DIR MILDIR RUNLOG TOL
//                                      compares DIR/ort/K.npy with the K-th
//                                      output of `mil run` (names from RUNLOG,
//                                      files in MILDIR); prints one line and
//                                      exits 0 when within TOL of the largest
//                                      |ORT value| and never NaN/inf where
//                                      ONNX Runtime is finite, 1 otherwise.
//   node ort.js optimize MODEL OUT      writes the model as ONNX Runtime's
//                                      graph optimizer (level "extended",
//                                      CPU) leaves it: fused com.microsoft ops
//                                      (SkipLayerNormalization, Gelu,
//                                      FusedMatMul, ...) as its transformer
//                                      exports carry them
// SPEC is NAME:DTYPE:D1,D2,...:LO:HI (DTYPE float32 or int64; values uniform
// in [LO, HI) from a fixed seed; LO == HI: that constant).
'use strict';
const fs = require('fs');
const path = require('path');

const DESCR = {'<f4': Float32Array, '<f8': Float64Array, '<i4': Int32Array, '<i8': BigInt64Array,
               '|u1': Uint8Array, '|i1': Int8Array, '|b1': Uint8Array, '<i2': Int16Array};

function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.slice(off, off + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const T = DESCR[descr];
  if (!T) throw new Error(`${file}: dtype ${descr}`);
  const data = b.slice(off + hlen);
  const arr = new T(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
  return {shape, data: Array.from(arr, Number)};
}

function writeNpy(file, typed, descr, shape) {
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(h.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength)]));
}

let seed = 12345;
function rand() { // xorshift32, deterministic across runs
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}

async function run(model, dir, specs) {
  const ort = require('onnxruntime-node');
  fs.mkdirSync(path.join(dir, 'in'), {recursive: true});
  fs.mkdirSync(path.join(dir, 'ort'), {recursive: true});
  const feeds = {};
  for (const s of specs) {
    const [name, dtype, dims, lo, hi] = s.split(':');
    const shape = dims === '' ? [] : dims.split(',').map(Number);
    const n = shape.reduce((a, b) => a * b, 1);
    const l = Number(lo), u = Number(hi);
    if (dtype === 'int64') {
      const a = new BigInt64Array(n);
      for (let i = 0; i < n; i++) a[i] = BigInt(Math.floor(l + (u - l) * rand()));
      feeds[name] = new ort.Tensor('int64', a, shape);
      writeNpy(path.join(dir, 'in', `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.npy`), a, '<i8', shape);
    } else {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = l + (u - l) * rand();
      feeds[name] = new ort.Tensor('float32', a, shape);
      writeNpy(path.join(dir, 'in', `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.npy`), a, '<f4', shape);
    }
  }
  const sess = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled'});
  const out = await sess.run(feeds);
  const names = sess.outputNames;
  names.forEach((nm, k) => {
    const t = out[nm];
    const a = t.type === 'int64' ? t.data : t.type === 'float16' ? null : Float32Array.from(t.data, Number);
    if (t.type === 'int64') writeNpy(path.join(dir, 'ort', `${k}.npy`), a, '<i8', t.dims);
    else writeNpy(path.join(dir, 'ort', `${k}.npy`), a, '<f4', t.dims);
  });
  fs.writeFileSync(path.join(dir, 'ort', 'names.txt'), names.join('\n') + '\n');
}

function compare(dir, milDir, runLog, tol) {
  const milNames = fs.readFileSync(runLog, 'utf8').split('\n').map((l) => /^([A-Za-z_][A-Za-z0-9_]*): \(/.exec(l))
      .filter(Boolean).map((m) => m[1]);
  const onnxNames = fs.readFileSync(path.join(dir, 'ort', 'names.txt'), 'utf8').trim().split('\n');
  let worst = 0, nonfinite = 0, ok = true;
  const notes = [];
  onnxNames.forEach((nm, k) => {
    const a = readNpy(path.join(dir, 'ort', `${k}.npy`));
    if (k >= milNames.length) { ok = false; notes.push(`${nm}: no mil output`); return; }
    const b = readNpy(path.join(milDir, `${milNames[k]}.npy`));
    if (a.data.length !== b.data.length) { ok = false; notes.push(`${nm}: ${a.data.length} vs ${b.data.length} elements`); return; }
    let big = 0, err = 0;
    for (let i = 0; i < a.data.length; i++) {
      const x = a.data[i], y = b.data[i];
      if (!Number.isFinite(x)) continue;
      big = Math.max(big, Math.abs(x));
      if (!Number.isFinite(y)) { nonfinite++; continue; }
      err = Math.max(err, Math.abs(x - y));
    }
    const rel = big > 0 ? err / big : err;
    worst = Math.max(worst, rel);
  });
  if (nonfinite) ok = false;
  if (!(worst <= tol)) ok = false;
  console.log(`${ok ? 'PASS' : 'FAIL'} rel ${worst.toExponential(2)} nan/inf ${nonfinite}${notes.length ? ' (' + notes.join('; ') + ')' : ''}`);
  process.exit(ok ? 0 : 1);
}

async function optimize(model, out) {
  const ort = require('onnxruntime-node');
  await ort.InferenceSession.create(model, {executionProviders: ['cpu'], graphOptimizationLevel: 'extended',
                                            optimizedModelFilePath: out});
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'optimize') optimize(args[0], args[1]).catch((e) => { console.error(String(e)); process.exit(1); });
else if (cmd === 'run') run(args[0], args[1], args.slice(2)).catch((e) => { console.error(String(e)); process.exit(1); });
else if (cmd === 'compare') compare(args[0], args[1], args[2], Number(args[3]));
else { console.error('usage: node ort.js run|compare|optimize ...'); process.exit(2); }

// Reads a little-endian float32 .npy file as an ONNX Runtime tensor (bench/ort_run.js,
// bench/ort_profile.js): readNpy(ort, PATH).
'use strict';
const fs = require('fs');

function readNpy(ort, path) {
  const b = fs.readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const header = b.slice(10, 10 + hlen).toString('latin1');
  if (!/'descr': '<f4'/.test(header)) throw new Error(path + ': expected a little-endian float32 array');
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length));
  return new ort.Tensor('float32', data, shape);
}

module.exports = { readNpy };

// tests/onnx/run_ort.js - run an ONNX file under ONNX Runtime (npm onnxruntime-node, CPU provider) on inputs read
// from a safetensors file, and write the outputs to another safetensors file.
//
//   node tests/onnx/run_ort.js MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors
//
// Every graph input is read from INPUTS under its own name (F32 or I64; the export's check file holds them), every
// graph output is written to OUTPUTS under its own name (F32). onnxruntime-node is found in the data cache where
// scripts/setup.sh installs it: $DL_DATA_DIR/npm/onnxruntime-node, else <repo>/data_cache/npm/onnxruntime-node.
// Exit code 2 when onnxruntime-node is missing (the C++ tests skip then), 1 on any other error.
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const cache = process.env.DL_DATA_DIR || path.resolve(__dirname, '..', '..', 'data_cache');
  const dir = path.join(cache, 'npm', 'onnxruntime-node', 'node_modules', 'onnxruntime-node');
  try {
    return require(dir);
  } catch (e) {
    console.error(`run_ort.js: onnxruntime-node not found in ${dir} (scripts/setup.sh installs it): ${e.message}`);
    process.exit(2);
  }
}

// safetensors: 8-byte little-endian header length, JSON header, raw little-endian data
function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, e] = t.data_offsets;
    const bytes = buf.subarray(8 + n + b, 8 + n + e);
    const copy = new Uint8Array(bytes).buffer;  // aligned
    if (t.dtype === 'F32') out[name] = { type: 'float32', data: new Float32Array(copy), dims: t.shape };
    else if (t.dtype === 'I64') out[name] = { type: 'int64', data: new BigInt64Array(copy), dims: t.shape };
    else throw new Error(`${file}: tensor '${name}' has dtype ${t.dtype}; expected F32 or I64`);
  }
  return out;
}

function writeSafetensors(file, tensors) {
  const header = {};
  const parts = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: 'F32', shape: t.dims, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const tmp = file + '.tmp';
  fs.writeFileSync(tmp, Buffer.concat([len, Buffer.from(json, 'utf8'), ...parts]));
  fs.renameSync(tmp, file);  // atomic
}

async function main() {
  const [model, inputs, outputs] = process.argv.slice(2);
  if (!outputs) {
    console.error('usage: node tests/onnx/run_ort.js MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors');
    process.exit(1);
  }
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  const have = readSafetensors(inputs);
  const feeds = {};
  for (const name of session.inputNames) {
    const t = have[name];
    if (!t) throw new Error(`${inputs} has no tensor '${name}' for the graph input of that name`);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const result = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const r = result[name];
    if (r.type !== 'float32') throw new Error(`output '${name}' is ${r.type}; expected float32`);
    out[name] = { data: r.data, dims: r.dims.map(Number) };
  }
  writeSafetensors(outputs, out);
}

module.exports = { loadOrt, readSafetensors };  // bench/ort_forward.js reads models and inputs the same way

if (require.main === module) {
  main().catch((e) => {
    console.error(`run_ort.js: ${e.stack || e}`);
    process.exit(1);
  });
}

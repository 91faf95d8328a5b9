// bench/ort_forward.js - ONNX Runtime's side of bench/bench_onnx_forward.cpp: the forward latency of one exported
// model on one input batch under ONNX Runtime's CPU provider (npm onnxruntime-node), with a given thread count.
//
//   node bench/ort_forward.js MODEL.onnx INPUTS.safetensors THREADS REPS
//
// Every graph input is read from INPUTS under its own name (F32 or I64, as the export's check file holds them). The
// session is made with THREADS intra-op threads, one inter-op thread and every graph optimisation; one run warms it
// up, then REPS runs are timed one by one (wall clock around session.run, which includes copying the outputs into
// JavaScript arrays). Where INPUTS also holds a graph output (the framework's own outputs, as in a check file), the
// largest absolute difference from ONNX Runtime's is reported, so the timing is known to be of the same computation.
// Prints one JSON line: {"ms": [...], "median_ms": m, "max_abs_diff": d or null, "threads": n, "ort": version}.
// onnxruntime-node and the safetensors reader are tests/onnx/run_ort.js's (the data cache where scripts/setup.sh
// installs it). Exit code 2 when it is missing, 1 on any other error.
'use strict';
const path = require('path');
const { loadOrt, readSafetensors } = require(path.join(__dirname, '..', 'tests', 'onnx', 'run_ort.js'));

async function main() {
  const [model, inputs, threadsArg, repsArg] = process.argv.slice(2);
  const threads = Number(threadsArg), reps = Number(repsArg);
  if (!model || !inputs || !(threads >= 1) || !(reps >= 1)) {
    console.error('usage: node bench/ort_forward.js MODEL.onnx INPUTS.safetensors THREADS REPS');
    process.exit(1);
  }
  const ort = loadOrt();
  const version = ort.env.versions.node;
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const have = readSafetensors(inputs);
  const feeds = {};
  for (const name of session.inputNames) {
    const t = have[name];
    if (!t) throw new Error(`${inputs} has no tensor '${name}' for the graph input of that name`);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  let result = await session.run(feeds);  // warm-up
  let maxDiff = null;
  for (const name of session.outputNames) {
    const want = have[name];
    if (!want) continue;
    const got = result[name].data;
    if (got.length !== want.data.length)
      throw new Error(`output '${name}': ONNX Runtime gave ${got.length} values, ${inputs} holds ${want.data.length}`);
    for (let i = 0; i < got.length; i++) maxDiff = Math.max(maxDiff ?? 0, Math.abs(got[i] - want.data[i]));
  }
  result = null;
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(JSON.stringify({ ms, median_ms: sorted[Math.floor(sorted.length / 2)], max_abs_diff: maxDiff, threads, ort: version }));
}

main().catch((e) => {
  console.error(`ort_forward.js: ${e.stack || e}`);
  process.exit(1);
});

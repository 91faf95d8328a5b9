// scripts/ort_generate.js - greedy text from a GPT-2 exported with `generate --export-onnx FILE --kv-cache` (docs/onnx.md,
// "GPT-2 files"), run by ONNX Runtime (npm onnxruntime-node, CPU), one token per call on the graph's key/value cache:
// the prompt goes in once with an empty past, then each call feeds the token just chosen and the presents of the call
// before. What `generate --temperature 0` prints for the same model and prompt, computed by another runtime.
//
//   node scripts/ort_generate.js STEP.onnx --prompt TEXT [--tokens N]     a byte-level model (vocabulary <= 256): the
//                                                                         prompt's bytes in, text out
//   node scripts/ort_generate.js STEP.onnx --ids 464,3290 [--tokens N]    any vocabulary: ids in, ids out (comma-separated)
//
// Prints the generated text (or ids) on stdout and the tokens per second on stderr. onnxruntime-node is found where
// scripts/setup.sh installs it (tests/onnx/run_ort.js's loadOrt).
'use strict';
const path = require('path');
const { loadOrt } = require(path.join(__dirname, '..', 'tests', 'onnx', 'run_ort.js'));

function usage(msg) {
  if (msg) console.error(`ort_generate.js: ${msg}`);
  console.error('usage: node scripts/ort_generate.js STEP.onnx (--prompt TEXT | --ids A,B,...) [--tokens N]');
  process.exit(1);
}

function parseArgs(argv) {
  const a = { tokens: 20 };
  if (argv.length < 1 || argv[0].startsWith('--')) usage('no model file');
  a.model = argv[0];
  for (let i = 1; i < argv.length; i += 2) {
    const key = argv[i], value = argv[i + 1];
    if (value === undefined) usage(`${key} needs a value`);
    if (key === '--prompt') a.prompt = value;
    else if (key === '--ids') a.ids = value.split(',').map((s) => {
      if (!/^\d+$/.test(s.trim())) usage(`--ids: '${s}' is not a token id`);
      return BigInt(s.trim());
    });
    else if (key === '--tokens') {
      if (!/^\d+$/.test(value)) usage(`--tokens: '${value}' is not a count`);
      a.tokens = Number(value);
    } else usage(`unknown option ${key}`);
  }
  if ((a.prompt === undefined) === (a.ids === undefined)) usage('give one of --prompt and --ids');
  return a;
}

// the index of the largest of the V logits of row `row` (the first one on a tie, as the framework's argmax)
function argmax(data, row, V) {
  let best = 0;
  for (let j = 1; j < V; j++) if (data[row * V + j] > data[row * V + best]) best = j;
  return best;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(a.model, { executionProviders: ['cpu'] });
  const pasts = session.inputMetadata.filter((m) => m.name.startsWith('past_key_values.'));
  if (!session.inputNames.includes('input_ids') || pasts.length === 0)
    throw new Error(`${a.model} is not a cached step (no input_ids and past_key_values.*): export it with --kv-cache`);
  const logitsMeta = session.outputMetadata.find((m) => m.name === 'logits');
  const V = Number(logitsMeta.shape[2]);
  let ids = a.ids;
  if (a.prompt !== undefined) {
    if (V > 256) usage(`the model has ${V} tokens, more than bytes: give --ids`);
    ids = [...Buffer.from(a.prompt, 'utf8')].map((b) => BigInt(b));
  }
  if (ids.length === 0) usage('the prompt is empty');
  // an empty past: (1, heads, 0, head size) for every block's keys and values
  let past = {};
  for (const m of pasts) past[m.name] = new ort.Tensor('float32', new Float32Array(0), [1, Number(m.shape[1]), 0, Number(m.shape[3])]);
  const out = [];
  const t0 = process.hrtime.bigint();
  let feed = ids;
  for (let n = 0; n < a.tokens; n++) {
    const feeds = { ...past, input_ids: new ort.Tensor('int64', BigInt64Array.from(feed), [1, feed.length]) };
    const r = await session.run(feeds);
    const next = argmax(r.logits.data, feed.length - 1, V);  // after the last token fed
    out.push(next);
    past = {};
    for (const m of pasts) past[m.name] = r[m.name.replace('past_key_values.', 'present.')];
    feed = [BigInt(next)];
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (a.prompt !== undefined) process.stdout.write(Buffer.from(out));
  else process.stdout.write(out.join(','));
  process.stdout.write('\n');
  console.error(`ort_generate.js: ${out.length} tokens in ${seconds.toFixed(3)} s: ${(out.length / seconds).toFixed(1)} tokens/s ` +
                `(ONNX Runtime, key/value cache; prompt ${ids.length} tokens)`);
}

main().catch((e) => {
  console.error(`ort_generate.js: ${e.message || e}`);
  process.exit(1);
});

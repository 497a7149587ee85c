// Greedy decoding of a built genai folder on ONNX Runtime (onnxruntime-node), the builder tests'
// oracle: separate past/present tensors, batch 1; float16 logits are decoded before the argmax.
// usage: node ort_greedy.js ORACLE_DIR MODEL_DIR N_NEW TOKEN_IDS(comma) [--threads T] [--force IDS]
// --force IDS (comma, N_NEW of them): feed these tokens instead of ORT's choices and print, per
// step, ORT's best logit minus its logit for the forced token, over the standard deviation of the
// step's logits (0 where ORT would pick it too).
const path = require('path');
const fs = require('fs');
const [oracleDir, dir, nNewS, idsS] = process.argv.slice(2);
const ort = require(path.join(oracleDir, 'node_modules', 'onnxruntime-node'));

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
}

async function main() {
  const threadsAt = process.argv.indexOf('--threads');
  const threads = threadsAt > 0 ? +process.argv[threadsAt + 1] : 1;
  const forceAt = process.argv.indexOf('--force');
  const forced = forceAt > 0 ? process.argv[forceAt + 1].split(',').map(Number) : null;
  const gaps = [];
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'genai_config.json'))).model;
  const dec = cfg.decoder;
  const session = await ort.InferenceSession.create(path.join(dir, dec.filename),
      {executionProviders: ['cpu'], intraOpNumThreads: threads, graphOptimizationLevel: 'all'});
  const L = dec.num_hidden_layers, KV = dec.num_key_value_heads, H = dec.head_size;
  let ids = idsS.split(',').map(Number);
  const seq = ids.slice();
  const past = {};
  for (let l = 0; l < L; l++)
    for (const kv of ['key', 'value'])
      past[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, KV, 0, H]);
  let total = 0;
  for (let step = 0; step < +nNewS; step++) {
    total += ids.length;
    const feeds = Object.assign({
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
    }, past);
    const out = await session.run(feeds);
    const V = out.logits.dims[2];
    const raw = out.logits.data, half = out.logits.type === 'float16';
    const value = (i) => (half ? halfToFloat(raw[i]) : raw[i]);
    const off = (ids.length - 1) * V;
    let best = 0;
    for (let v = 1; v < V; v++)
      if (value(off + v) > value(off + best)) best = v;
    for (let l = 0; l < L; l++)
      for (const kv of ['key', 'value']) past[`past_key_values.${l}.${kv}`] = out[`present.${l}.${kv}`];
    const next = forced ? forced[step] : best;
    if (forced) {
      // The gap in units of the step's logit spread (standard deviation over the vocabulary).
      let sum = 0, sq = 0;
      for (let v = 0; v < V; v++) { const x = value(off + v); sum += x; sq += x * x; }
      const sd = Math.sqrt(Math.max(sq / V - (sum / V) * (sum / V), 1e-30));
      gaps.push((value(off + best) - value(off + next)) / sd);
    }
    seq.push(next);
    ids = [next];
  }
  console.log(forced ? gaps.join(',') : seq.join(','));
}
main().catch((e) => { console.error(e.message || e); process.exit(1); });

// Greedy decoding of an Optimum export folder on ONNX Runtime (onnxruntime-node), the oracle of
// tests/python/test_optimum.py: model.onnx, decoder_model_merged.onnx (use_cache_branch fed as
// Optimum's ORTModelForCausalLM feeds it: false on the first step) or the decoder_model.onnx +
// decoder_with_past_model.onnx pair; batch 1, fp32, as many new tokens as asked (no EOS stop).
// usage: node ort_optimum_greedy.js ORACLE_DIR MODEL_DIR N_NEW TOKEN_IDS(comma) LAYERS KV_HEADS HEAD_SIZE
//        [--threads T] [--bench]   (--bench: prints {"load_ms", "prefill_ms", "decode_tokens_per_s"})
const path = require('path');
const fs = require('fs');
const [oracleDir, dir, nNewS, idsS, layersS, kvS, hdS] = process.argv.slice(2);
const ort = require(path.join(oracleDir, 'node_modules', 'onnxruntime-node'));

async function main() {
  const threadsAt = process.argv.indexOf('--threads');
  const threads = threadsAt > 0 ? +process.argv[threadsAt + 1] : 1;
  const bench = process.argv.includes('--bench');
  const opts = {executionProviders: ['cpu'], intraOpNumThreads: threads, graphOptimizationLevel: 'all'};
  const has = (f) => fs.existsSync(path.join(dir, f));
  const t0 = performance.now();
  let first, rest;
  if (has('model.onnx')) {
    first = rest = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), opts);
  } else if (has('decoder_model_merged.onnx')) {
    first = rest = await ort.InferenceSession.create(path.join(dir, 'decoder_model_merged.onnx'), opts);
  } else {
    first = await ort.InferenceSession.create(path.join(dir, 'decoder_model.onnx'), opts);
    rest = await ort.InferenceSession.create(path.join(dir, 'decoder_with_past_model.onnx'), opts);
  }
  const loadMs = performance.now() - t0;
  const L = +layersS, KV = +kvS, H = +hdS;
  let ids = idsS.split(',').map(Number);
  const seq = ids.slice();
  const past = {};
  for (let l = 0; l < L; l++)
    for (const kv of ['key', 'value'])
      past[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, KV, 0, H]);
  let total = 0, prefillMs = 0;
  const tDecode = [];
  for (let step = 0; step < +nNewS; step++) {
    const session = step === 0 ? first : rest;
    const pastLen = total;
    total += ids.length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
    };
    if (session.inputNames.includes('position_ids')) {
      const pos = new BigInt64Array(ids.length);
      for (let i = 0; i < ids.length; i++) pos[i] = BigInt(pastLen + i);
      feeds.position_ids = new ort.Tensor('int64', pos, [1, ids.length]);
    }
    if (session.inputNames.includes('use_cache_branch'))
      feeds.use_cache_branch = new ort.Tensor('bool', Uint8Array.from([step > 0 ? 1 : 0]), [1]);
    for (const name of session.inputNames)
      if (name.startsWith('past_key_values.')) feeds[name] = past[name];
    const ts = performance.now();
    const out = await session.run(feeds);
    const ms = performance.now() - ts;
    if (step === 0) prefillMs = ms; else tDecode.push(ms);
    const V = out.logits.dims[2];
    const raw = out.logits.data;
    const off = (ids.length - 1) * V;
    let best = 0;
    for (let v = 1; v < V; v++)
      if (raw[off + v] > raw[off + best]) best = v;
    for (let l = 0; l < L; l++)
      for (const kv of ['key', 'value']) past[`past_key_values.${l}.${kv}`] = out[`present.${l}.${kv}`];
    seq.push(best);
    ids = [best];
  }
  if (bench) {
    const sum = tDecode.reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({load_ms: loadMs, prefill_ms: prefillMs,
                                decode_tokens_per_s: tDecode.length ? 1000 * tDecode.length / sum : 0}));
  } else {
    console.log(seq.join(','));
  }
}
main().catch((e) => { console.error(e.message || e); process.exit(1); });

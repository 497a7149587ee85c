// ONNX Runtime (onnxruntime-node) peer for compare.py --batch: greedy decode of B prompts of one
// length at once through a genai-style decoder folder (separate past/present buffers, no padding:
// attention_mask all ones, position_ids when the graph takes them). The shared oracle script
// (ort_generate.js) runs one row; this one runs the rows as one batch, as onnxllm bench --batch does.
//
// usage: node ort_generate_batch.js --modules DIR MODEL_DIR N 'ids;ids;...' [--threads T] [--bench]
//   --modules  a folder whose node_modules holds onnxruntime-node (make oracle: build/oracle)
//   ids        each row's comma-separated prompt ids, rows separated by ';' (all one length)
// default output: each row's prompt and generated ids, one line per row
// --bench: one JSON line {load_ms, prompt_tokens, prefill_ms, decode_tokens, decode_ms, decode_tok_s,
//   prefill_tok_s, threads, batch, tokens}; prefill_ms = the prompt batch + picking each row's first
//   token, decode_* = the N - 1 single-token steps after it (tokens count every row)
"use strict";
const fs = require("fs");
const path = require("path");

function parseArgs(argv) {
  const o = {threads: 2, bench: false, modules: null, rest: []};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--threads") o.threads = +argv[++i];
    else if (a === "--bench") o.bench = true;
    else if (a === "--modules") o.modules = argv[++i];
    else if (a.startsWith("--")) throw new Error(`unknown argument ${a}`);
    else o.rest.push(a);
  }
  if (o.modules == null || o.rest.length !== 3) {
    throw new Error("usage: node ort_generate_batch.js --modules DIR MODEL_DIR N 'ids;ids' [--threads T] [--bench]");
  }
  [o.dir, o.n, o.rowsText] = [o.rest[0], +o.rest[1], o.rest[2]];
  o.rows = o.rowsText.split(";").map((r) => r.split(",").filter(Boolean).map(Number));
  if (!(o.n >= 1) || !(o.threads >= 1)) throw new Error("N and --threads must be at least 1");
  if (o.rows.some((r) => r.length === 0 || r.length !== o.rows[0].length || r.some((x) => !Number.isInteger(x) || x < 0))) {
    throw new Error("every row needs the same number of non-negative integer ids");
  }
  return o;
}

const half = (h) => {
  const e = (h >> 10) & 31, f = h & 1023, sgn = h & 32768 ? -1 : 1;
  return e === 0 ? sgn * f * 2 ** -24 : e === 31 ? (f ? NaN : sgn * Infinity) : sgn * (1 + f / 1024) * 2 ** (e - 15);
};

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const ort = require(require.resolve("onnxruntime-node", {paths: [path.resolve(o.modules)]}));
  const cfg = JSON.parse(fs.readFileSync(path.join(o.dir, "genai_config.json"))).model;
  const dec = cfg.decoder;
  const t0 = performance.now();
  const s = await ort.InferenceSession.create(path.join(o.dir, dec.filename),
      {executionProviders: ["cpu"], intraOpNumThreads: o.threads, graphOptimizationLevel: "all"});
  const loadMs = performance.now() - t0;
  const B = o.rows.length, L = dec.num_hidden_layers, KV = dec.num_key_value_heads, H = dec.head_size, V = cfg.vocab_size;
  const meta = Object.fromEntries((s.inputMetadata || []).map((m) => [m.name, m.type]));
  const pastType = meta["past_key_values.0.key"] || "float32";
  const empty = pastType === "float16" ? new Uint16Array(0) : new Float32Array(0);
  const past = {};
  for (let l = 0; l < L; l++) for (const kv of ["key", "value"]) past[`past_key_values.${l}.${kv}`] = new ort.Tensor(pastType, empty, [B, KV, 0, H]);
  const out = o.rows.map(() => []);
  let ids = o.rows, total = 0, firstMs = 0;
  const start = performance.now();
  for (let step = 0; step < o.n; step++) {
    const len = ids[0].length;
    const feeds = Object.assign({
      input_ids: new ort.Tensor("int64", BigInt64Array.from(ids.flat().map(BigInt)), [B, len]),
      attention_mask: new ort.Tensor("int64", new BigInt64Array(B * (total + len)).fill(1n), [B, total + len]),
    }, past);
    if (s.inputNames.includes("position_ids")) {
      const pos = new BigInt64Array(B * len);
      for (let b = 0; b < B; b++) for (let i = 0; i < len; i++) pos[b * len + i] = BigInt(total + i);
      feeds.position_ids = new ort.Tensor("int64", pos, [B, len]);
    }
    total += len;
    const res = await s.run(feeds);
    const raw = res.logits.data;
    const next = [];
    for (let b = 0; b < B; b++) {
      const off = (b * len + len - 1) * V;
      const row = res.logits.type === "float16" ? Float32Array.from(raw.subarray(off, off + V), half) : raw.subarray(off, off + V);
      let best = 0;
      for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
      out[b].push(best);
      next.push([best]);
    }
    for (let l = 0; l < L; l++) for (const kv of ["key", "value"]) past[`past_key_values.${l}.${kv}`] = res[`present.${l}.${kv}`];
    if (step === 0) firstMs = performance.now() - start;
    ids = next;
  }
  const allMs = performance.now() - start;
  if (o.bench) {
    const promptTokens = B * o.rows[0].length, decodeTokens = B * (o.n - 1);
    console.log(JSON.stringify({load_ms: loadMs, prompt_tokens: promptTokens, prefill_ms: firstMs,
      decode_tokens: decodeTokens, decode_ms: allMs - firstMs,
      decode_tok_s: decodeTokens > 0 ? decodeTokens / ((allMs - firstMs) / 1000) : null,
      prefill_tok_s: promptTokens / (firstMs / 1000), threads: o.threads, batch: B, tokens: out}));
  } else {
    for (let b = 0; b < B; b++) console.log([...o.rows[b], ...out[b]].join(","));
  }
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});

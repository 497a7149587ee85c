// llama.cpp peer for compare.py --batch: B greedy sequences of one context generated at once
// through node-llama-cpp (the npm package that ../shared/tools/llamacpp pins; `make llamacpp`
// installs it into build/llamacpp). Each sequence runs node-llama-cpp's generator API; sequences
// evaluating together are batched into one llama_decode per step by node-llama-cpp's scheduler
// (the shared bench.mjs runs one sequence).
//
// usage: node llamacpp_generate_batch.mjs --modules DIR GGUF --prompts 'ids;ids;...' --n N [--threads T]
//   --modules  the folder whose node_modules holds node-llama-cpp (build/llamacpp)
// prints one JSON line {load_ms, prompt_tokens, prefill_ms, decode_tokens, decode_ms, decode_tok_s,
//   prefill_tok_s, threads, batch, tokens}: prefill_ms runs until every sequence has its first new
//   token, decode_* the rest until every sequence has N (tokens count every sequence).
import {createRequire} from "node:module";
import path from "node:path";
import {pathToFileURL} from "node:url";

function parseArgs(argv) {
    const o = {threads: 2, n: 0, modules: null, prompts: null, model: null};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i], v = () => argv[++i];
        if (a === "--modules") o.modules = v();
        else if (a === "--prompts") o.prompts = v();
        else if (a === "--n") o.n = +v();
        else if (a === "--threads") o.threads = +v();
        else if (!a.startsWith("--") && o.model == null) o.model = a;
        else throw new Error(`unknown argument ${a}`);
    }
    if (o.modules == null || o.model == null || o.prompts == null || !(o.n >= 1) || !(o.threads >= 1)) {
        throw new Error("usage: node llamacpp_generate_batch.mjs --modules DIR GGUF --prompts 'ids;ids' --n N [--threads T]");
    }
    o.rows = o.prompts.split(";").map((r) => r.split(",").filter(Boolean).map(Number));
    if (o.rows.some((r) => r.length === 0 || r.some((x) => !Number.isInteger(x) || x < 0))) throw new Error("bad prompt ids");
    return o;
}

const o = parseArgs(process.argv.slice(2));
const entry = createRequire(path.resolve(o.modules) + "/").resolve("node-llama-cpp");
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(entry).href);
const B = o.rows.length, longest = Math.max(...o.rows.map((r) => r.length));
const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
    maxThreads: 0, logLevel: LlamaLogLevel.error});
const tA = performance.now();
const model = await llama.loadModel({modelPath: o.model, gpuLayers: 0});
// Every sequence gets its own share of the context.
const perSequence = Math.ceil((longest + o.n + 1) / 256) * 256;
const context = await model.createContext({contextSize: perSequence * B, batchSize: Math.max(512, longest * B),
    threads: o.threads, sequences: B, flashAttention: false});
const tB = performance.now();
const sequences = Array.from({length: B}, () => context.getSequence());
const tokens = o.rows.map(() => []);
const firsts = [];
const start = performance.now();
await Promise.all(sequences.map(async (seq, b) => {
    for await (const tok of seq.evaluate(o.rows[b], {temperature: 0, yieldEogToken: true})) {
        tokens[b].push(tok);
        if (tokens[b].length === 1) firsts.push(performance.now());
        if (tokens[b].length >= o.n) break;
    }
}));
const end = performance.now();
if (tokens.some((t) => t.length < o.n)) throw new Error("a sequence stopped before --n tokens");
const firstMs = Math.max(...firsts) - start, decodeMs = end - start - firstMs;
const promptTokens = o.rows.reduce((s, r) => s + r.length, 0), decodeTokens = B * (o.n - 1);
console.log(JSON.stringify({load_ms: tB - tA, prompt_tokens: promptTokens, prefill_ms: firstMs, decode_tokens: decodeTokens,
    decode_ms: decodeMs, decode_tok_s: decodeTokens > 0 ? decodeTokens / (decodeMs / 1000) : null,
    prefill_tok_s: promptTokens / (firstMs / 1000), threads: context.currentThreads, batch: B, tokens}));
await context.dispose();
await model.dispose();
await llama.dispose();

"""`onnxllm bench` end to end (ctest cli_bench) on small random-weight Llamas built in the test.

Checks that --json has every key, that the figures are positive and agree with each other and with
`onnxllm info` (bytes per decode token from the graph's initializers, int4 weights as the kernel's
packed tiles, and the KV cache), that the
prompt is deterministic per --seed, that the generated ids are the greedy ones `generate` gives,
and that bad options fail with exit 1 and a message naming the option.
Usage: bench_test.py ONNXLLM_CLI WORK_DIR
"""

import json
import math
import os
import shutil
import subprocess
import sys

cli, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

CONTEXT = 96
HIDDEN, HEADS, KV_HEADS, LAYERS, VOCAB = 64, 4, 2, 2, 300
HEAD = HIDDEN // HEADS
HF_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
             "intermediate_size": 128, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
             "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "max_position_embeddings": CONTEXT,
             "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
             "tie_word_embeddings": False}

KEYS = ["model", "threads", "isa", "batch", "prompt_len", "gen_len", "reps", "warmup", "seed", "process_to_ready_ms", "model_load_ms",
        "prompt_tokens", "prompt_ms", "time_to_first_token_ms", "prompt_tokens_per_s", "new_tokens", "decode_tokens",
        "decode_ms", "decode_tokens_per_s", "peak_rss_bytes", "rss_anon_bytes", "rss_file_bytes", "mean_decode_context", "weight_bytes_per_step",
        "row_bytes_per_token", "kv_bytes_per_position", "kv_bytes_per_step", "bytes_per_decode_token",
        "read_bandwidth_bytes_per_s", "roofline_percent", "runs", "prompt_ids", "generated_ids"]
POSITIVE = ["process_to_ready_ms", "model_load_ms", "prompt_ms", "time_to_first_token_ms", "prompt_tokens_per_s",
            "decode_ms", "decode_tokens_per_s", "peak_rss_bytes", "rss_anon_bytes", "rss_file_bytes", "mean_decode_context", "weight_bytes_per_step",
            "row_bytes_per_token", "kv_bytes_per_position", "kv_bytes_per_step", "bytes_per_decode_token",
            "read_bandwidth_bytes_per_s", "roofline_percent"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, timeout=120, env=None):
    return subprocess.run([cli] + args, capture_output=True, text=True, timeout=timeout, env=env)


def build(precision):
    out = os.path.join(work, f"llama-{precision}")
    r = run(["build", "--config", os.path.join(work, "config.json"), "--random-weights", "--seed", "3", "-o", out,
             "-p", precision, "-q"])
    if r.returncode != 0:
        sys.exit(f"setup failed: build -p {precision}\n{r.stderr}")
    return out


def bench(model, *extra):
    r = run(["bench", "-m", model, "--json"] + list(extra))
    check(r.returncode == 0, f"bench {' '.join(extra)} exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return None
    lines = r.stdout.strip().splitlines()
    check(len(lines) == 1, f"--json prints one line, got {len(lines)}")
    return json.loads(lines[0])


def median(xs):
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


with open(os.path.join(work, "config.json"), "w") as f:
    json.dump(HF_CONFIG, f)
models = {p: build(p) for p in ("fp32", "int4")}


def packed_weight_bytes(model):
    """(file bytes of MatMulNBits B and scales, bytes of the int8-activation tiles the CPU kernel
    packs them into). The tiles (matmul_nbits_q8.h): 16 columns each; per group of two 32-value
    blocks a 64-byte header of float16 scales, then 16 x 16 bytes of nibbles per block."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(os.path.join(model, "model.onnx"))
    sizes = {t.name: numpy_helper.to_array(t).nbytes for t in m.graph.initializer}
    file_bytes = packed_bytes = 0
    for n in m.graph.node:
        if n.op_type != "MatMulNBits":
            continue
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        assert a["bits"] == 4 and a["block_size"] == 32 and a.get("accuracy_level") == 4 and len(n.input) == 3, a
        blocks = (a["K"] + 31) // 32
        file_bytes += sizes[n.input[1]] + sizes[n.input[2]]
        packed_bytes += (a["N"] + 15) // 16 * ((blocks + 1) // 2) * (64 + 2 * 16 * 16)
    return file_bytes, packed_bytes


packed = {p: packed_weight_bytes(m) for p, m in models.items()}

for precision, model in models.items():
    info = json.loads(run(["info", "-m", model, "--json"]).stdout)
    for batch, reps in ((1, 3), (3, 2)):
        P, G = 16, 9
        what = f"{precision} batch {batch}"
        j = bench(model, "--prompt-len", str(P), "--gen-len", str(G), "--reps", str(reps), "--batch", str(batch),
                  "--threads", "2", "--seed", "5", "--warmup", str(batch - 1))
        if j is None:
            continue
        missing = [k for k in KEYS if k not in j]
        check(not missing, f"{what}: keys missing: {missing}")
        if missing:
            continue
        for k in POSITIVE:
            check(isinstance(j[k], (int, float)) and j[k] > 0 and math.isfinite(j[k]), f"{what}: {k} = {j[k]}")
        echoed = [j[k] for k in ("threads", "batch", "prompt_len", "gen_len", "reps", "warmup", "seed")]
        check(echoed == [2, batch, P, G, reps, batch - 1, 5], f"{what}: echoed options {echoed}")
        check(j["isa"] in ("scalar", "avx2", "avx2-vnni", "avx512", "neon"), f"{what}: isa {j['isa']!r}")
        check(j["prompt_tokens"] == P * batch, f"{what}: prompt_tokens {j['prompt_tokens']}")
        check(j["new_tokens"] == G * batch, f"{what}: new_tokens {j['new_tokens']} != gen_len x batch")
        check(j["decode_tokens"] == (G - 1) * batch, f"{what}: decode_tokens {j['decode_tokens']}")
        check(j["process_to_ready_ms"] >= j["model_load_ms"], f"{what}: process start to ready < model load")
        check(j["time_to_first_token_ms"] >= j["prompt_ms"], f"{what}: first token before the prompt finished")
        # The rows: pseudo-random ids inside the vocabulary, exactly gen_len generated per row.
        check(len(j["prompt_ids"]) == batch and all(len(r) == P for r in j["prompt_ids"]), f"{what}: prompt_ids shape")
        check(len(j["generated_ids"]) == batch and all(len(r) == G for r in j["generated_ids"]),
              f"{what}: generated_ids shape")
        ids = [i for r in j["prompt_ids"] + j["generated_ids"] for i in r]
        check(all(0 <= i < VOCAB for i in ids), f"{what}: ids outside the vocabulary")
        check(len(set(ids)) > P // 2, f"{what}: the prompt is not pseudo-random: {j['prompt_ids'][0]}")
        # Medians of the per-rep figures; rates count every row.
        runs = j["runs"]
        check(len(runs) == reps, f"{what}: {len(runs)} runs")
        for key in ("prompt_ms", "time_to_first_token_ms", "decode_ms", "prompt_tokens_per_s", "decode_tokens_per_s"):
            check(close(j[key], median([r[key] for r in runs])), f"{what}: {key} is not the median of the runs")
        for r in runs:
            check(close(r["decode_tokens_per_s"], (G - 1) * batch * 1000 / r["decode_ms"]), f"{what}: decode rate")
            check(close(r["prompt_tokens_per_s"], P * batch * 1000 / r["prompt_ms"]), f"{what}: prompt rate")
        # Traffic: the graph's initializers less the tables read by row (embedding, rotary caches),
        # which count one row per token; the KV cache as `info` sizes it, at the mean context.
        # MatMulNBits weights count as the kernel's packed copy (packed_weight_bytes), not the file's.
        embed_bytes = VOCAB * HIDDEN * 4
        rotary_bytes = 2 * CONTEXT * (HEAD // 2) * 4
        file_bytes = sum(d["bytes"] for d in info["dtypes"].values())
        file_nbits, packed_nbits = packed[precision]
        check((precision == "int4") == (file_nbits > 0), f"{what}: {file_nbits} MatMulNBits bytes in the file")
        whole = file_bytes - embed_bytes - rotary_bytes - file_nbits + packed_nbits
        # The RSS after the runs, by kind: no more than the peak, and the packed tiles are anonymous.
        check(j["rss_anon_bytes"] + j["rss_file_bytes"] <= j["peak_rss_bytes"],
              f"{what}: RSS parts {j['rss_anon_bytes']} + {j['rss_file_bytes']} > peak {j['peak_rss_bytes']}")
        check(j["rss_anon_bytes"] >= packed_nbits, f"{what}: anonymous RSS {j['rss_anon_bytes']} < packed tiles {packed_nbits}")
        # Constant folding may add a few small initializers (shape constants), never remove weights.
        check(whole <= j["weight_bytes_per_step"] <= whole + 1024,
              f"{what}: weight_bytes_per_step {j['weight_bytes_per_step']}, initializers read whole {whole}")
        check(j["row_bytes_per_token"] == HIDDEN * 4 + 2 * (HEAD // 2) * 4, f"{what}: row_bytes {j['row_bytes_per_token']}")
        check(j["kv_bytes_per_position"] == info["kv_bytes_per_token"], f"{what}: kv bytes per position")
        check(j["mean_decode_context"] == P + G / 2, f"{what}: mean context {j['mean_decode_context']}")
        check(close(j["kv_bytes_per_step"], batch * (P + G / 2) * j["kv_bytes_per_position"]), f"{what}: kv per step")
        step = j["weight_bytes_per_step"] + batch * j["row_bytes_per_token"] + j["kv_bytes_per_step"]
        check(close(j["bytes_per_decode_token"], step / batch), f"{what}: bytes per decode token")
        check(close(j["roofline_percent"],
                    j["decode_tokens_per_s"] * j["bytes_per_decode_token"] / j["read_bandwidth_bytes_per_s"] * 100),
              f"{what}: roofline")

        if batch == 1:
            # The same prompt again with the same seed, another with another seed.
            again = bench(model, "--prompt-len", str(P), "--gen-len", "2", "--reps", "1", "--seed", "5")
            other = bench(model, "--prompt-len", str(P), "--gen-len", "2", "--reps", "1", "--seed", "6")
            if again and other:
                check(again["prompt_ids"] == j["prompt_ids"], f"{what}: --seed 5 gave another prompt")
                check(other["prompt_ids"] != j["prompt_ids"], f"{what}: --seed 6 gave the same prompt")
            # Greedy: `generate` on the same prompt picks the same ids until it meets EOS.
            prompt = ",".join(map(str, j["prompt_ids"][0]))
            g = run(["generate", "-m", model, "--ids", prompt, "-n", str(G), "--print-ids", "--no-timings"])
            check(g.returncode == 0, f"{what}: generate failed: {g.stderr}")
            gen = [int(x) for x in g.stdout.strip().split(",")][P:]
            check(len(gen) >= 1 and j["generated_ids"][0][:len(gen)] == gen,
                  f"{what}: bench generated {j['generated_ids'][0]}, generate {gen}")

# --kv-cache float16: half the cache bytes per position, the same greedy tokens on this model (the
# values rounded to float16 change no argmax here; generate with the same option agrees).
for precision, model in models.items():
    full = bench(model, "--prompt-len", "16", "--gen-len", "9", "--reps", "1", "--seed", "5")
    half = bench(model, "--prompt-len", "16", "--gen-len", "9", "--reps", "1", "--seed", "5", "--kv-cache", "float16")
    if full and half:
        check(half["kv_bytes_per_position"] * 2 == full["kv_bytes_per_position"],
              f"{precision} --kv-cache float16: {half['kv_bytes_per_position']} bytes per position, "
              f"float32 {full['kv_bytes_per_position']}")
        check(half["generated_ids"] == full["generated_ids"],
              f"{precision} --kv-cache float16 generated {half['generated_ids']}, float32 {full['generated_ids']}")
        prompt = ",".join(map(str, half["prompt_ids"][0]))
        g = run(["generate", "-m", model, "--ids", prompt, "-n", "9", "--print-ids", "--no-timings", "--kv-cache", "float16"])
        gen = [int(x) for x in g.stdout.strip().split(",")][16:] if g.returncode == 0 else []
        check(len(gen) >= 1 and half["generated_ids"][0][:len(gen)] == gen,
              f"{precision} generate --kv-cache float16: {g.stderr[-300:]} {gen}")
r = run(["bench", "-m", models["fp32"], "--kv-cache", "bfloat8"])
check(r.returncode == 1 and "--kv-cache" in r.stderr, f"--kv-cache bfloat8: exit {r.returncode}, {r.stderr!r}")

# Text output.
r = run(["bench", "-m", models["int4"], "--prompt-len", "8", "--gen-len", "4", "--reps", "1"])
check(r.returncode == 0, f"text bench failed: {r.stderr}")
for word in ("load:", "prompt:", "decode:", "peak RSS:", "anonymous,", "mapped from files)", "bytes per decode token:",
             "read bandwidth:", "roofline"):
    check(word in r.stdout, f"text output lacks '{word}': {r.stdout}")
# --no-bandwidth: no probe, bandwidth and roofline null, the rest as usual.
nb = bench(models["int4"], "--prompt-len", "8", "--gen-len", "4", "--reps", "1", "--seed", "5", "--no-bandwidth")
if nb:
    check(nb["read_bandwidth_bytes_per_s"] is None and nb["roofline_percent"] is None,
          f"--no-bandwidth: bandwidth {nb['read_bandwidth_bytes_per_s']}, roofline {nb['roofline_percent']}")
    check(nb["decode_tokens_per_s"] > 0 and nb["bytes_per_decode_token"] > 0, "--no-bandwidth: rates and bytes missing")
r = run(["bench", "-m", models["int4"], "--prompt-len", "8", "--gen-len", "4", "--reps", "1", "--no-bandwidth"])
check(r.returncode == 0 and "not measured (--no-bandwidth)" in r.stdout and "roofline" not in r.stdout,
      f"text --no-bandwidth: {r.stdout!r}")
# The kernels' instruction set is reported as ONNXLLM_ISA names it, and follows it.
unset = {k: v for k, v in os.environ.items() if k != "ONNXLLM_ISA"}
for isa in ("scalar", None):
    env = dict(unset, ONNXLLM_ISA=isa) if isa else unset
    short = ["bench", "-m", models["int4"], "--prompt-len", "4", "--gen-len", "2", "--reps", "1", "--no-bandwidth"]
    r = run(short + ["--json"], env=env)
    got = json.loads(r.stdout)["isa"] if r.returncode == 0 else r.stderr
    check(got == isa if isa else got in ("avx2", "avx2-vnni", "avx512", "neon", "scalar"), f"ONNXLLM_ISA={isa}: isa {got!r}")
    t = run(short, env=env)
    check(t.returncode == 0 and f"{got} kernels" in t.stdout, f"text output names the kernels ({got}): {t.stdout[:200]!r}")
h = run(["bench", "--help"])
check(h.returncode == 0 and "decode_tokens_per_s" in h.stdout and "roofline_percent" in h.stdout,
      "--help lists the JSON keys")

# Bad options: exit 1, a message naming what is wrong, before any timing.
m = models["fp32"]
for args, needle in ((["--batch", "0"], "--batch"), (["--gen-len", "1"], "--gen-len"), (["--prompt-len", "0"], "--prompt-len"),
                     (["--reps", "0"], "--reps"), (["--warmup", "-1"], "--warmup"), (["--prompt-len", "90", "--gen-len", "7"], "context length 96"),
                     (["--batch", "33", "--prompt-len", "8", "--gen-len", "4"], "--batch 33 rows"), (["--threads", "-1"], "--threads"),
                     # Refused before its prompts are made (they once took 6 GB in the first 30 s at 128 a row).
                     (["--batch", "100000000", "--prompt-len", "8", "--gen-len", "4"], "--batch 100000000 rows"),
                     (["--prompt-len", "x"], "--prompt-len")):
    r = run(["bench", "-m", m] + args, timeout=30)
    check(r.returncode == 1 and needle in r.stderr and r.stdout == "",
          f"bench {' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:80]!r}")
r = run(["bench", "-m", os.path.join(work, "no-such-model")])
check(r.returncode == 1 and "no-such-model" in r.stderr, f"missing model: exit {r.returncode}, {r.stderr!r}")
# Exactly the context is fine.
check(bench(m, "--prompt-len", "90", "--gen-len", "6", "--reps", "1") is not None, "prompt + gen = context refused")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("bench: all checks passed")

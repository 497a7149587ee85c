#!/usr/bin/python3
"""Decode speed on an Optimum export: onnxllm fused vs unfused (ONNXLLM_FUSIONS=0), vs the genai
layout `onnxllm build` makes from the same weights, and vs ONNX Runtime on the same Optimum file.

One random-weights Llama checkpoint (benchmarks/make_model.py: config.json + fp32 safetensors) is
exported in Optimum's model.onnx layout by tests/python/optimum_export.py (the op sequence
torch.onnx.export writes for transformers' LlamaForCausalLM) and built with `onnxllm build -p fp32`.
Runs are interleaved (one round = each runner once), fp32, same thread count; medians over rounds.

usage: optimum_bench.py WORK_DIR [--hidden 512] [--intermediate 1408] [--layers 8] [--heads 8]
       [--kv-heads 2] [--vocab 32000] [--threads 2] [--prompt-len 64[,1900,...]] [--gen-len 32]
       [--rounds 3] [--layout single|merged|pair] [--skip-ort] [--cpu]
Several prompt lengths run one after another, each with its own interleaved rounds: fusions
matter more with context (the unfused graph's attention and KV Concat grow with it).
--cpu: instead of wall-clock tokens/s, decode tokens per CPU second on one thread (the CPU time of
a run with --gen-len more tokens minus that of a run with 2, via getrusage of the child), which a
machine shared with other jobs disturbs far less than the wall clock.
Not part of `make test` (it writes ~0.5 GB and runs for minutes).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/python"))
import optimum_export as oe  # noqa: E402


def read_safetensors(path):
    """name -> float32 array (mapped, not copied)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"])
    return out


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{p.stderr}")
    return p.stdout


def cpu_seconds(cmd, env=None):
    """User + system CPU time of one child run."""
    before = os.times()
    run(cmd, env)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("work")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--intermediate", type=int, default=1408)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-len", default="64", help="one length or a comma-separated list")
    ap.add_argument("--gen-len", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--layout", default="single", choices=["single", "merged", "pair"])
    ap.add_argument("--skip-ort", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="tokens per CPU second on one thread (see above)")
    ap.add_argument("--cli", default=str(ROOT / "build/bin/onnxllm"))
    ap.add_argument("--oracle", default=str(ROOT / "build/oracle"))
    a = ap.parse_args()
    try:
        prompt_lens = [int(p) for p in a.prompt_len.split(",")]
    except ValueError:
        sys.exit(f"--prompt-len: expected lengths separated by commas, got {a.prompt_len!r}")
    if any(p < 1 for p in prompt_lens):
        sys.exit(f"--prompt-len: lengths must be >= 1, got {a.prompt_len!r}")
    work = pathlib.Path(a.work)
    hf, opt, genai = work / "hf", work / f"optimum-{a.layout}", work / "genai-fp32"
    head_dim = a.hidden // a.heads
    if not (hf / "model.safetensors").exists():
        run(["/usr/bin/python3", str(ROOT / "benchmarks/make_model.py"), str(hf), "--hidden", str(a.hidden),
             "--intermediate", str(a.intermediate), "--layers", str(a.layers), "--heads", str(a.heads),
             "--kv-heads", str(a.kv_heads), "--head-dim", str(head_dim), "--vocab", str(a.vocab),
             "--context", "2048", "--std", "0.05"])
    config = json.loads((hf / "config.json").read_text())
    if not opt.exists():
        oe.write_folder(opt, "llama", config, a.layout, weights=read_safetensors(hf / "model.safetensors"))
    if not genai.exists():
        run([a.cli, "build", "-i", str(hf), "-o", str(genai), "-p", "fp32", "-q"])

    threads = 1 if a.cpu else a.threads
    summary = []
    for prompt_len in prompt_lens:
        summary.append((prompt_len, measure(a, opt, genai, head_dim, threads, prompt_len)))
    if len(summary) > 1:
        print("prompt  fused/unfused  fused/genai  fused/ORT")
        for p, r in summary:
            ort = f"{r['ort']:.2f}x" if "ort" in r else "-"
            print(f"{p:6d}  {r['unfused']:12.2f}x  {r['genai']:10.2f}x  {ort:>9}")


def measure(a, opt, genai, head_dim, threads, prompt_len):
    """Interleaved rounds at one prompt length; prints them and returns fused / each other runner."""
    rng = np.random.default_rng(0)
    ids = ",".join(str(int(t)) for t in rng.integers(3, a.vocab, prompt_len))

    def bench_cmd(folder, gen):
        return [a.cli, "bench", "-m", str(folder), "--prompt-len", str(prompt_len), "--gen-len", str(gen), "--reps",
                "1", "--threads", str(threads), "--json", "--no-bandwidth"]

    def ort_cmd(gen):
        return ["node", str(ROOT / "tests/oracle/ort_optimum_greedy.js"), a.oracle, str(opt), str(gen + 1), ids,
                str(a.layers), str(a.kv_heads), str(head_dim), "--threads", str(threads), "--bench"]

    def per_cpu_second(make_cmd, env=None):
        return a.gen_len / (cpu_seconds(make_cmd(2 + a.gen_len), env) - cpu_seconds(make_cmd(2), env))

    def bench(folder, fusions=True):
        env = dict(os.environ, ONNXLLM_FUSIONS="1" if fusions else "0")
        if a.cpu:
            return per_cpu_second(lambda gen: bench_cmd(folder, gen), env)
        return json.loads(run(bench_cmd(folder, a.gen_len), env))["decode_tokens_per_s"]

    def ort():
        if a.cpu:
            return per_cpu_second(ort_cmd)
        return json.loads(run(ort_cmd(a.gen_len)))["decode_tokens_per_s"]

    runners = {"fused": lambda: bench(opt), "unfused": lambda: bench(opt, False), "genai": lambda: bench(genai)}
    if not a.skip_ort:
        runners["ort"] = ort
    results = {k: [] for k in runners}
    for r in range(a.rounds):
        for name, fn in runners.items():
            results[name].append(fn())
        print(f"prompt {prompt_len} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in results.items()),
              flush=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    unit = "decode_tokens_per_cpu_s" if a.cpu else "decode_tokens_per_s"
    print(json.dumps({unit + "_median": med, "threads": threads, "prompt_len": prompt_len, "rounds": results}, indent=1))
    print(f"fused / unfused: {med['fused'] / med['unfused']:.2f}x")
    print(f"fused / genai build: {med['fused'] / med['genai']:.2f}x")
    if "ort" in med:
        print(f"fused / ONNX Runtime: {med['fused'] / med['ort']:.2f}x")
    return {k: med["fused"] / v for k, v in med.items() if k != "fused"}


if __name__ == "__main__":
    main()

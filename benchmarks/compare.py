#!/usr/bin/python3
"""onnxllm against ONNX Runtime 1.30 and llama.cpp on one model's weights, side by side.

Runs, interleaved round after round (onnxllm, ORT, llama.cpp, onnxllm, ...), each a fresh process
with one timed generation of --gen-len tokens after the same --prompt-len prompt ids, greedy, on the
same --threads:
  onnxllm    `onnxllm bench -m MODEL --json --reps 1` (its --seed prompt: splitmix64, regenerated
             here and checked against what bench reports)
  ORT        `node ort_generate.js MODEL N ids --bench --threads T` (the same ONNX model folder)
  llama.cpp  `node bench.mjs GGUF --prompt ids --n N --threads T --bench --reps 1` (a GGUF of the
             same weights: hf_to_gguf.py, F32 or --q4_0)
and prints the medians over the rounds and the ratios onnxllm / ORT and onnxllm / llama.cpp of:
  prefill tok/s  prompt tokens / (prompt run + picking the first token): onnxllm's
                 time_to_first_token_ms, ORT's and llama.cpp's prefill_ms
  decode tok/s   the gen-len - 1 single-token steps after the first token (all three alike)
  load ms        model ready to run: onnxllm model_load_ms (genai_config.json + session), ORT
                 InferenceSession.create, llama.cpp loadModel + createContext (not the addon load)
  peak RSS MiB   ORT and llama.cpp: the child's ru_maxrss from wait4; onnxllm: its own getrusage
                 taken before its bandwidth probe (whose buffer would otherwise count)
Higher is better for tok/s, lower for load and RSS. With --warmup W, onnxllm and llama.cpp run W
untimed generations first in the same process; ORT's script cannot, so the default 0 keeps all
three at "first generation after loading". Also prints onnxllm's bytes per decode token, measured
read bandwidth and roofline %, the load average and the busiest other processes (the machine may
be shared), and whether each runtime's tokens match onnxllm's.
With --batch B > 1 each runtime generates B prompts (the next B x prompt-len splitmix64 ids, row
after row, as `onnxllm bench --batch B` makes them) at once, and tok/s count every row: onnxllm
`bench --batch B`; ORT and llama.cpp through this folder's ort_generate_batch.js (one session run
per step for all rows) and llamacpp_generate_batch.mjs (node-llama-cpp sequences of one context,
batched into one llama_decode per step), since the shared scripts run one row.

usage: compare.py --model ONNXLLM_MODEL_DIR --gguf FILE.gguf [--threads 2] [--prompt-len 128]
                  [--gen-len 64] [--batch 1] [--rounds 3] [--warmup 0] [--seed 1]
                  [--onnxllm build/bin/onnxllm]
                  [--ort-script build/oracle/ort_generate.js] [--llamacpp build/llamacpp]
                  [--skip ort|llamacpp] [--json-out FILE]
Debian python3 only (no packages). See benchmarks/README.md for preparing the models.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "benchmarks")
TOOLS = ("onnxllm", "ort", "llamacpp")
LABELS = {"onnxllm": "onnxllm", "ort": "ORT 1.30", "llamacpp": "llama.cpp"}
METRICS = (("prefill_tok_s", "prefill tok/s"), ("decode_tok_s", "decode tok/s"), ("load_ms", "load ms"),
           ("peak_rss_mib", "peak RSS MiB"))
MASK64 = (1 << 64) - 1
# The running script's name for run_measured's and last_json_line's messages (thread_ratio.py uses them too).
PROG = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def splitmix64_ids(seed, count, vocab):
    """The prompt `onnxllm bench --seed` uses: splitmix64 outputs modulo vocab_size."""
    state, ids = seed & MASK64, []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        ids.append((z ^ (z >> 31)) % vocab)
    return ids


def run_measured(cmd, timeout):
    """Runs cmd; returns (stdout, peak RSS bytes of the child from wait4). Exits on failure."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        except OSError as e:
            sys.exit(f"{PROG}: cannot run {cmd[0]}: {e}")
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                sys.exit(f"{PROG}: timed out after {timeout} s: {' '.join(cmd)}")
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"{PROG}: exit {proc.returncode}: {' '.join(cmd[:4])} ...\n{stderr[-2000:]}")
    return stdout, usage.ru_maxrss * 1024


def warm_page_cache(*paths):
    """Reads every file of `paths` (model folders, GGUF files) once before a sitting's runs. A host
    that drops idle file pages (the development VM runs DAMON's pageout scheme) otherwise leaves a
    mapped float32 embedding's rows to be read from disk per token, in whichever run comes first:
    cold, a batch-8 step's embedding Gather took 1.93 ms against 0.07 warm. Prints what it read."""
    total, start, buf = 0, time.perf_counter(), bytearray(16 << 20)
    for path in paths:
        names = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, _, files in os.walk(path) for f in files)
        for name in names:
            with open(name, "rb") as f:
                while n := f.readinto(buf):
                    total += n
    print(f"page cache: read {total / (1 << 20):.1f} MiB of {', '.join(map(str, paths))} in "
          f"{time.perf_counter() - start:.1f} s before the runs", flush=True)


def last_json_line(text, what):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"{PROG}: {what} printed no JSON:\n{text[-2000:]}")


class Runner:
    """One timed run of each runtime; "tokens" are the generated ids, a list per row."""

    def __init__(self, a, rows):
        self.a = a
        self.rows = rows
        self.id_text = ",".join(map(str, rows[0]))
        self.rows_text = ";".join(",".join(map(str, r)) for r in rows)

    def check_counts(self, j, what):
        a = self.a
        if j["prompt_tokens"] != a.batch * a.prompt_len or j["decode_tokens"] != a.batch * (a.gen_len - 1):
            sys.exit(f"compare: {what} ran {j['prompt_tokens']} prompt / {j['decode_tokens']} decode tokens")

    def onnxllm(self):
        a = self.a
        out, _ = run_measured([a.onnxllm, "bench", "-m", a.model, "--json", "--reps", "1", "--warmup", str(a.warmup),
                               "--prompt-len", str(a.prompt_len), "--gen-len", str(a.gen_len), "--batch", str(a.batch),
                               "--threads", str(a.threads), "--seed", str(a.seed)], a.timeout)
        j = last_json_line(out, "onnxllm bench")
        if j["prompt_ids"] != self.rows:
            sys.exit("compare: onnxllm bench used another prompt than splitmix64 gives")
        if j["threads"] != a.threads:
            sys.exit(f"compare: onnxllm ran {j['threads']} threads, not {a.threads}")
        return {"prefill_tok_s": a.batch * a.prompt_len * 1000 / j["time_to_first_token_ms"],
                "decode_tok_s": j["decode_tokens_per_s"], "load_ms": j["model_load_ms"],
                "peak_rss_mib": j["peak_rss_bytes"] / 2**20, "tokens": j["generated_ids"],
                "process_to_ready_ms": j["process_to_ready_ms"], "bytes_per_decode_token": j["bytes_per_decode_token"],
                "read_bandwidth_bytes_per_s": j["read_bandwidth_bytes_per_s"], "roofline_percent": j["roofline_percent"],
                "isa": j["isa"]}

    def ort(self):
        a = self.a
        if a.batch == 1:
            cmd = ["node", a.ort_script, a.model, str(a.gen_len), self.id_text]
        else:
            cmd = ["node", os.path.join(HERE, "ort_generate_batch.js"), "--modules", os.path.dirname(a.ort_script),
                   a.model, str(a.gen_len), self.rows_text]
        out, rss = run_measured(cmd + ["--bench", "--threads", str(a.threads)], a.timeout)
        j = last_json_line(out, "ort_generate.js")
        self.check_counts(j, "ORT")
        result = {"prefill_tok_s": a.batch * a.prompt_len * 1000 / max(j["prefill_ms"], 1e-9),
                  "decode_tok_s": j["decode_tok_s"], "load_ms": j["load_ms"], "peak_rss_mib": rss / 2**20}
        if "tokens" in j:
            result["tokens"] = j["tokens"]
        return result

    def ort_tokens(self):
        """The shared script's bench mode prints no ids: one untimed run for them."""
        a = self.a
        out, _ = run_measured(["node", a.ort_script, a.model, str(a.gen_len), self.id_text, "--threads",
                               str(a.threads)], a.timeout)
        return [[int(x) for x in out.strip().splitlines()[-1].split(",")][a.prompt_len:]]

    def llamacpp(self):
        a = self.a
        if a.batch == 1:
            cmd = ["node", os.path.join(a.llamacpp, "bench.mjs"), a.gguf, "--prompt", self.id_text, "--bench",
                   "--reps", "1", "--warmup", str(a.warmup)]
        else:
            cmd = ["node", os.path.join(HERE, "llamacpp_generate_batch.mjs"), "--modules", a.llamacpp, a.gguf,
                   "--prompts", self.rows_text]
        out, rss = run_measured(cmd + ["--n", str(a.gen_len), "--threads", str(a.threads)], a.timeout)
        j = last_json_line(out, "llama.cpp")
        self.check_counts(j, "llama.cpp")
        if j["threads"] != a.threads:
            sys.exit(f"compare: llama.cpp ran {j['threads']} threads, not {a.threads}")
        tokens = j["tokens"]
        return {"prefill_tok_s": j["prefill_tok_s"], "decode_tok_s": j["decode_tok_s"], "load_ms": j["load_ms"],
                "peak_rss_mib": rss / 2**20, "tokens": tokens if a.batch > 1 else [tokens]}


def cpu_ticks():
    """Per process (pid -> (command, utime + stime in clock ticks)) from /proc."""
    ticks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[int(pid)] = (name, int(fields[11]) + int(fields[12]))
    return ticks


def machine_load(window_s=2.0):
    """Load average, and the processes that used >= 5% of a CPU during a short window now."""
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    before = cpu_ticks()
    time.sleep(window_s)
    after = cpu_ticks()
    hz = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid, (name, t) in after.items():
        if pid == os.getpid() or pid not in before:
            continue
        pct = (t - before[pid][1]) / hz / window_s * 100
        if pct >= 5:
            busy.append((pct, f"{name} {pct:.0f}%"))
    return load, [b for _, b in sorted(busy, reverse=True)][:8]


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def prefix_match(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="onnxllm/ORT model folder (genai_config.json + model.onnx)")
    ap.add_argument("--gguf", help="llama.cpp GGUF of the same weights (required unless --skip llamacpp)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1, help="prompts generated together; tok/s count every row")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each tool once per round), >= 3")
    ap.add_argument("--warmup", type=int, default=0, help="untimed generations first (onnxllm and llama.cpp only)")
    ap.add_argument("--seed", type=int, default=1, help="prompt seed (onnxllm bench --seed)")
    ap.add_argument("--onnxllm", default=os.path.join(ROOT, "build/bin/onnxllm"))
    ap.add_argument("--ort-script", default=os.path.join(ROOT, "build/oracle/ort_generate.js"))
    ap.add_argument("--llamacpp", default=os.path.join(ROOT, "build/llamacpp"),
                    help="writable copy of ../shared/tools/llamacpp after npm ci")
    ap.add_argument("--skip", action="append", default=[], choices=["ort", "llamacpp"])
    ap.add_argument("--timeout", type=int, default=900, help="seconds per child process")
    ap.add_argument("--json-out", help="write every run's figures and the medians here")
    a = ap.parse_args()

    if a.rounds < 3:
        sys.exit(f"compare: --rounds must be at least 3, got {a.rounds}")
    if a.prompt_len < 1 or a.gen_len < 2 or a.threads < 1 or a.warmup < 0 or a.batch < 1:
        sys.exit("compare: --prompt-len >= 1, --gen-len >= 2, --threads >= 1, --batch >= 1 and --warmup >= 0 "
                 "are required")
    if a.batch > 1 and a.warmup:
        sys.exit("compare: --warmup is for --batch 1 (the batch scripts time their first generation)")
    config_path = os.path.join(a.model, "genai_config.json")
    if not os.path.isfile(config_path):
        sys.exit(f"compare: {config_path} not found")
    tools = [t for t in TOOLS if t not in a.skip]
    needs = [(a.onnxllm, "--onnxllm")]
    if "ort" in tools:
        needs.append((a.ort_script, "--ort-script (make oracle)"))
    if "llamacpp" in tools:
        if not a.gguf:
            sys.exit("compare: --gguf is required unless --skip llamacpp")
        needs += [(a.gguf, "--gguf"), (os.path.join(a.llamacpp, "node_modules"), "--llamacpp (npm ci in a copy)")]
    for path, what in needs:
        if not os.path.exists(path):
            sys.exit(f"compare: {path} not found ({what})")
    with open(config_path) as f:
        vocab = json.load(f)["model"]["vocab_size"]
    ids = splitmix64_ids(a.seed, a.batch * a.prompt_len, vocab)
    runner = Runner(a, [ids[i:i + a.prompt_len] for i in range(0, len(ids), a.prompt_len)])

    warm_page_cache(a.model, *([a.gguf] if "llamacpp" in tools else []))
    load_before, busy_before = machine_load()
    runs = {t: [] for t in tools}
    for r in range(a.rounds):
        for t in tools:
            result = getattr(runner, t)()
            runs[t].append(result)
            print(f"round {r + 1}/{a.rounds} {LABELS[t]}: prefill {result['prefill_tok_s']:.1f} tok/s, decode "
                  f"{result['decode_tok_s']:.2f} tok/s, load {result['load_ms']:.0f} ms, "
                  f"RSS {result['peak_rss_mib']:.0f} MiB", file=sys.stderr, flush=True)
    load_after, busy_after = machine_load()
    tokens = {"onnxllm": runs["onnxllm"][0]["tokens"]}
    if "ort" in tools:
        tokens["ort"] = runs["ort"][0].get("tokens") or runner.ort_tokens()
    if "llamacpp" in tools:
        tokens["llamacpp"] = runs["llamacpp"][0]["tokens"]

    med = {t: {k: statistics.median(x[k] for x in runs[t]) for k, _ in METRICS} for t in tools}
    o = runs["onnxllm"]
    extra = {k: statistics.median(x[k] for x in o)
             for k in ("process_to_ready_ms", "bytes_per_decode_token", "read_bandwidth_bytes_per_s", "roofline_percent")}

    print(f"model {a.model}" + (f" / {a.gguf}" if "llamacpp" in tools else ""))
    print(f"{cpu_name()}, {os.cpu_count()} CPUs; threads {a.threads}, batch {a.batch}, prompt {a.prompt_len}, "
          f"new tokens {a.gen_len}, "
          f"{a.rounds} interleaved rounds, warmup {a.warmup}; medians")
    head = f"{'':16}" + "".join(f"{LABELS[t]:>12}" for t in tools)
    others = [t for t in tools if t != "onnxllm"]
    head += "".join(f"{'onnxllm/' + LABELS[t].split()[0]:>18}" for t in others)
    print(head)
    for key, label in METRICS:
        line = f"{label:16}" + "".join(f"{med[t][key]:12.1f}" for t in tools)
        for t in others:
            line += f"{med['onnxllm'][key] / med[t][key] if med[t][key] else float('nan'):18.2f}"
        print(line)
    print(f"onnxllm ({o[0]['isa']} kernels): process start to ready {extra['process_to_ready_ms']:.0f} ms, "
          f"{extra['bytes_per_decode_token'] / 2**20:.1f} MiB read per decode token, read bandwidth "
          f"{extra['read_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, roofline {extra['roofline_percent']:.1f}%")
    for t in others:
        n = [prefix_match(x, y) for x, y in zip(tokens["onnxllm"], tokens[t])]
        rows = "" if a.batch == 1 else f" (the least of {a.batch} rows; all rows: {' '.join(map(str, n))})"
        print(f"tokens: {LABELS[t]} matches onnxllm's first {min(n)} of {a.gen_len} generated{rows}")
    print(f"load average {load_before} before, {load_after} after; other processes using CPU (2 s samples): "
          f"before: {', '.join(busy_before) or 'none'}; after: {', '.join(busy_after) or 'none'}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"args": vars(a), "runs": runs, "medians": med, "onnxllm_extra": extra, "tokens": tokens,
                       "load_average": [load_before, load_after], "busy": [busy_before, busy_after]}, f, indent=1)


if __name__ == "__main__":
    main()

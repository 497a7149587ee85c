#!/usr/bin/python3
"""Load test of `onnxllm serve`: C concurrent clients send R requests in total (completions with
token-id prompts of random lengths, half of them streamed), while a monitor checks /health and the
server's memory. Prints a JSON summary: answered, refused (429), other errors, /health failures and
worst latency, peak RSS against weights + --kv-memory. Exits 1 on any error other than a 429.

  benchmarks/serve_load.py -m MODEL [--cli build/bin/onnxllm] [--clients 64] [--requests 512]
      [--min-prompt 16] [--max-prompt 2000] [--max-tokens 32] [--kv-memory 512MiB] [--max-queue 48] [--retries 30]
The model folder needs tokenizer files; a random-weights build has none: give it a character
tokenizer with tests/python/optimum_export.py's write_tokenizer(folder, vocab_size).
"""

import argparse
import http.client
import json
import os
import pathlib
import random
import threading
import time

from serve_common import start_server


def folder_bytes(path):
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file())


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.lower().rstrip("ib").rstrip("b")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--cli", default="build/bin/onnxllm")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=512)
    ap.add_argument("--min-prompt", type=int, default=16)
    ap.add_argument("--max-prompt", type=int, default=2000)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--kv-memory", default="512MiB")
    ap.add_argument("--max-queue", type=int, default=48)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--retries", type=int, default=30, help="429s a client retries after Retry-After")
    args = ap.parse_args()

    config = json.load(open(os.path.join(args.model, "genai_config.json")))
    vocab = config["model"]["vocab_size"]
    proc, port = start_server(args.cli, args.model, "--kv-memory", args.kv_memory, "--max-queue", args.max_queue)
    name = pathlib.Path(args.model).resolve().name

    lock = threading.Lock()
    counts = {"answered": 0, "refused_429": 0, "429_responses": 0, "errors": 0}
    error_samples = []
    next_index = [0]
    stop_monitor = threading.Event()
    health = {"checks": 0, "failures": 0, "worst_ms": 0.0}
    peak_rss = [0]

    def client(worker):
        rng = random.Random(args.seed * 1000 + worker)
        while True:
            with lock:
                i = next_index[0]
                if i >= args.requests:
                    return
                next_index[0] += 1
            length = rng.randint(args.min_prompt, args.max_prompt)
            body = {"model": name, "prompt": [rng.randrange(3, vocab) for _ in range(length)],
                    "max_tokens": rng.randint(1, args.max_tokens), "temperature": 0, "stream": i % 2 == 1}
            # As OpenAI's clients do, a 429 is retried after its Retry-After (up to --retries times).
            for attempt in range(args.retries + 1):
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    conn.request("POST", "/v1/completions", body=json.dumps(body),
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    text = resp.read().decode()
                    conn.close()
                except Exception as e:  # noqa: BLE001 (a dropped connection is an error to report)
                    with lock:
                        counts["errors"] += 1
                        error_samples.append(repr(e))
                    break
                with lock:
                    if resp.status == 429 and resp.getheader("Retry-After"):
                        counts["429_responses"] += 1
                        if attempt < args.retries:
                            retry_after = float(resp.getheader("Retry-After"))
                        else:
                            counts["refused_429"] += 1
                            break
                    elif resp.status == 200 and ("[DONE]" in text or '"usage"' in text):
                        counts["answered"] += 1
                        break
                    else:
                        counts["errors"] += 1
                        error_samples.append(f"{resp.status}: {text[:200]}")
                        break
                time.sleep(retry_after * rng.uniform(0.5, 1.5))

    def monitor():
        while not stop_monitor.is_set():
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/health")
                ok = conn.getresponse().status == 200
                conn.close()
            except Exception:  # noqa: BLE001
                ok = False
            ms = 1000 * (time.perf_counter() - start)
            health["checks"] += 1
            health["failures"] += not ok
            health["worst_ms"] = max(health["worst_ms"], ms)
            for line in open(f"/proc/{proc.pid}/status"):
                if line.startswith("VmRSS:"):
                    peak_rss[0] = max(peak_rss[0], int(line.split()[1]) * 1024)
            time.sleep(0.25)

    start = time.time()
    mon = threading.Thread(target=monitor)
    mon.start()
    threads = [threading.Thread(target=client, args=(w,)) for w in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop_monitor.set()
    mon.join()
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmHWM:"):
            peak_rss[0] = max(peak_rss[0], int(line.split()[1]) * 1024)
    metrics = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    metrics.request("GET", "/metrics")
    metrics_text = metrics.getresponse().read().decode()
    proc.terminate()
    code = proc.wait(timeout=120)
    weights = folder_bytes(args.model)
    kv = parse_size(args.kv_memory)
    out = {**counts, "requests": args.requests, "clients": args.clients, "seconds": round(time.time() - start, 1),
           "health": health, "peak_rss_mib": peak_rss[0] >> 20, "weights_mib": weights >> 20, "kv_memory_mib": kv >> 20,
           "rss_over_weights_plus_kv": round(peak_rss[0] / (weights + kv), 3), "exit_code": code,
           "error_samples": error_samples[:5],
           "metrics": [l for l in metrics_text.splitlines() if l.startswith(("onnxllm_requests_total", "onnxllm_engine_preemptions", "onnxllm_prefix"))]}
    print(json.dumps(out, indent=1))
    ok = (counts["errors"] == 0 and health["failures"] == 0 and code == 0
          and counts["answered"] + counts["refused_429"] == args.requests)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()

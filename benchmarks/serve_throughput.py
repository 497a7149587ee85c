#!/usr/bin/python3
"""Issue 12's throughput line on its own terms: aggregate decode tokens/s of C concurrent
streaming clients of `onnxllm serve` against one client alone, over HTTP (SSE). Each client
streams a completion of a random token-id prompt; the window runs from the last client's first
token to the first client's last one, so no prompt processing is inside it. Rounds alternate
1 and C clients; medians.

  benchmarks/serve_throughput.py -m MODEL [--cli build/bin/onnxllm] [--clients 16]
      [--prompt-len 16] [--max-tokens 128] [--rounds 3] [--threads N] [--kv-memory 1GiB]
The model folder needs tokenizer files (see serve_load.py for a random-weights build).
"""

import argparse
import http.client
import json
import pathlib
import random
import statistics
import threading
import time

from serve_common import start_server


def stream_one(port, model, prompt, max_tokens, stamps, errors):
    """One streamed completion; appends the arrival time of every chunk that carries text."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
                "stream_options": {"include_usage": True}}
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            errors.append(f"status {resp.status}: {resp.read()[:200]!r}")
            return
        tokens = 0
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
            elif event["choices"] and event["choices"][0].get("text"):
                stamps.append(time.perf_counter())
        conn.close()
        if tokens != len(stamps):
            errors.append(f"{tokens} tokens arrived in {len(stamps)} chunks (the window counts chunks)")
    except (OSError, http.client.HTTPException, ValueError) as e:
        errors.append(repr(e))


def run_clients(port, model, prompts, max_tokens):
    stamps = [[] for _ in prompts]
    errors = []
    threads = [threading.Thread(target=stream_one, args=(port, model, p, max_tokens, s, errors))
               for p, s in zip(prompts, stamps)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"client errors: {errors[:3]}")
    begin, end = max(s[0] for s in stamps), min(s[-1] for s in stamps)
    inside = sum(1 for s in stamps for t in s if begin < t <= end)
    return inside / (end - begin)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--cli", default=str(pathlib.Path(__file__).resolve().parent.parent / "build/bin/onnxllm"))
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--kv-memory", default="1GiB")
    args = ap.parse_args()
    if args.clients < 2 or args.max_tokens < 8:
        raise SystemExit("--clients must be at least 2 and --max-tokens at least 8")

    vocab = json.loads((pathlib.Path(args.model) / "genai_config.json").read_text())["model"]["vocab_size"]
    model = pathlib.Path(args.model).resolve().name
    rng = random.Random(1)
    options = ["--max-batch", args.clients, "--kv-memory", args.kv_memory]
    if args.threads:
        options += ["--threads", args.threads]
    proc, port = start_server(args.cli, args.model, *options)
    try:
        one, many = [], []
        for _ in range(args.rounds):
            prompts = [[rng.randrange(10, vocab - 10) for _ in range(args.prompt_len)] for _ in range(args.clients)]
            one.append(run_clients(port, model, prompts[:1], args.max_tokens))
            many.append(run_clients(port, model, prompts, args.max_tokens))
    finally:
        proc.terminate()
        proc.wait()
    out = {"one_client_tok_s": statistics.median(one), "clients": args.clients,
           "many_clients_tok_s": statistics.median(many),
           "scaling": statistics.median(many) / statistics.median(one), "rounds": {"one": one, "many": many}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

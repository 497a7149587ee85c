#!/usr/bin/python3
"""The serving engine (og.Engine) on one model: aggregate decode tokens/s of C concurrent requests
against one request alone, and time to first token of a prompt whose long prefix is already cached
against the same prompt uncached. Interleaved rounds, medians.

  PYTHONPATH=build/python benchmarks/engine_bench.py -m MODEL [--clients 16] [--prompt-len 128]
      [--gen-len 64] [--prefix-len 1000] [--rounds 3]   (threads: the model's intra_op_num_threads)
      [--sample [--top-p P] [--top-k K] [--temperature T]]   (greedy without --sample)
"""

import argparse
import json
import random
import statistics
import time

import onnxllm as og
from compare import warm_page_cache


SEARCH = {"do_sample": False}  # main() adds the sampling options


def params(model, max_length):
    p = og.GeneratorParams(model)
    p.set_search_options(max_length=max_length, **SEARCH)
    return p


def random_ids(rng, n, vocab):
    return [rng.randrange(10, vocab - 10) for _ in range(n)]


def run_clients(model, engine, prompts, gen_len):
    """All prompts at once; returns (aggregate decode tok/s while every client decodes, generated
    tokens, wall seconds). The window runs from the last client's first token to the first
    client's last, so that no prompt processing is inside it."""
    start = time.perf_counter()
    first, done, counts = {}, {}, {}
    stamps = []
    requests = []
    for i, prompt in enumerate(prompts):
        r = og.Request(params(model, len(prompt) + gen_len))
        r.add_tokens(prompt)
        r.set_opaque_data(i)
        engine.add_request(r)
        requests.append(r)
    while engine.has_pending_requests():
        r = engine.step()
        if r is None:
            continue
        i = r.get_opaque_data()
        now = time.perf_counter()
        while r.has_unseen_tokens():
            r.get_unseen_token()
            counts[i] = counts.get(i, 0) + 1
            first.setdefault(i, now)
            stamps.append(now)
        if r.is_done() and i not in done:
            done[i] = now
            engine.remove_request(r)
    begin, end = max(first.values()), min(done.values())
    inside = sum(1 for t in stamps if begin < t <= end)
    return inside / (end - begin), sum(counts.values()), time.perf_counter() - start


def ttft(model, engine, prompt):
    r = og.Request(params(model, len(prompt) + 1))
    r.add_tokens(prompt)
    start = time.perf_counter()
    engine.add_request(r)
    while engine.step() is not r:
        pass
    t = time.perf_counter() - start
    engine.remove_request(r)
    engine.step()
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--prefix-len", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sample", action="store_true", help="sample (seeded per request) instead of greedy search")
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=1.0)
    args = ap.parse_args()
    if args.sample:
        SEARCH.update(do_sample=True, top_p=args.top_p, top_k=args.top_k, temperature=args.temperature, random_seed=1)

    warm_page_cache(args.model)
    config = og.Config(args.model)
    model = og.Model(config)
    vocab = json.load(open(f"{args.model}/genai_config.json"))["model"]["vocab_size"]
    rng = random.Random(1)
    one, many, cached, uncached = [], [], [], []
    for _ in range(args.rounds):
        engine = og.Engine(model)
        prompts = [random_ids(rng, args.prompt_len, vocab) for _ in range(args.clients)]
        one.append(run_clients(model, engine, prompts[:1], args.gen_len)[0])
        engine = og.Engine(model)
        many.append(run_clients(model, engine, prompts, args.gen_len)[0])
        # Prefix caching: the same long system prompt, another question.
        system = random_ids(rng, args.prefix_len, vocab)
        engine = og.Engine(model)
        uncached.append(ttft(model, engine, system + random_ids(rng, 16, vocab)))
        cached.append(ttft(model, engine, system + random_ids(rng, 16, vocab)))
    out = {
        "one_client_decode_tok_s": statistics.median(one),
        "clients": args.clients,
        "many_clients_decode_tok_s": statistics.median(many),
        "scaling": statistics.median(many) / statistics.median(one),
        "ttft_uncached_ms": 1000 * statistics.median(uncached),
        "ttft_cached_ms": 1000 * statistics.median(cached),
        "ttft_ratio": statistics.median(cached) / statistics.median(uncached),
        "rounds": {"one": one, "many": many, "uncached": uncached, "cached": cached},
    }
    if args.json:
        print(json.dumps(out))
        return
    if args.sample:
        print(f"sampling: top_p {args.top_p}, top_k {args.top_k}, temperature {args.temperature}")
    print(f"1 client: {out['one_client_decode_tok_s']:.1f} tok/s; {args.clients} clients: "
          f"{out['many_clients_decode_tok_s']:.1f} tok/s aggregate ({out['scaling']:.2f}x)")
    print(f"time to first token, {args.prefix_len}-token prefix: uncached {out['ttft_uncached_ms']:.0f} ms, "
          f"cached {out['ttft_cached_ms']:.0f} ms ({100 * out['ttft_ratio']:.1f}%)")


if __name__ == "__main__":
    main()

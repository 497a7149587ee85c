#!/usr/bin/python3
"""Decode speed at a long context against a short one, measured so that host drift cancels.

Two generators of one model (prompts of --short and --long random ids) are stepped alternately in
one process, one token each, the order swapped every step; a round reports the mean step time of
each and their ratio (short / long: the long context's decode speed as a fraction of the short
one's, the issue-10 line "2048 tokens of context at least 80% of 128"). Separate `onnxllm bench`
runs of the two prompt lengths swung 0.70-1.09 over 8 rounds on a shared 2-vCPU host; alternating
steps kept a sitting within 0.03. The steps include the Python binding's per-token overhead, the
same for both.

  PYTHONPATH=build/python benchmarks/context_ratio.py -m MODEL [--short 128] [--long 2048]
      [--gen-len 64] [--rounds 3] [--seed 1]   (threads: the model's intra_op_num_threads)
"""

import argparse
import json
import random
import statistics
import sys
import time

import onnxllm as og


def generator(model, prompt, gen_len):
    p = og.GeneratorParams(model)
    n = len(prompt) + gen_len
    p.set_search_options(max_length=n, min_length=n, do_sample=False)
    g = og.Generator(model, p)
    g.append_tokens(prompt)
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--short", type=int, default=128)
    ap.add_argument("--long", type=int, default=2048)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not 0 < args.short < args.long:
        sys.exit(f"--short ({args.short}) must be positive and below --long ({args.long})")
    if args.gen_len < 3 or args.rounds < 1:
        sys.exit("--gen-len must be at least 3 and --rounds at least 1")

    try:
        with open(f"{args.model}/genai_config.json") as f:
            config = json.load(f)["model"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"{args.model}/genai_config.json: {e} (an Optimum folder: `onnxllm config -m DIR` writes one)")
    model = og.Model(args.model)
    if args.long + args.gen_len > config.get("context_length", sys.maxsize):
        sys.exit(f"--long + --gen-len ({args.long + args.gen_len}) exceeds the model's context_length "
                 f"({config['context_length']})")
    rng = random.Random(args.seed)
    vocab = config["vocab_size"]
    ratios = []
    for r in range(args.rounds):
        gens = {n: generator(model, [rng.randrange(10, vocab - 10) for _ in range(n)], args.gen_len)
                for n in (args.short, args.long)}
        times = {n: [] for n in gens}
        for step in range(args.gen_len):
            for n in (args.short, args.long) if step % 2 == 0 else (args.long, args.short):
                start = time.perf_counter()
                gens[n].generate_next_token()
                times[n].append(time.perf_counter() - start)
        # The first step after the prompt is left out, as `onnxllm bench` leaves it out.
        short_ms, long_ms = (1e3 * statistics.mean(times[n][1:]) for n in (args.short, args.long))
        ratios.append(short_ms / long_ms)
        print(f"round {r + 1}/{args.rounds}: {args.short} tokens {short_ms:.2f} ms a step, "
              f"{args.long} tokens {long_ms:.2f} ms, ratio {ratios[-1]:.3f}", flush=True)
        del gens
    print(f"decode at {args.long} tokens of context / at {args.short}: median {statistics.median(ratios):.3f} "
          f"over {args.rounds} rounds ({', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()

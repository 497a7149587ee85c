#!/usr/bin/python3
"""Batched decode against one sequence, measured so that host drift cancels.

A generator of one prompt and one of --batch prompts (random ids, all --prompt-len long) are
stepped alternately in one process, one token each, the order swapped every step; a round reports
the mean step time of each and the ratio of their tokens/s, the batch's counting every row
(batch x ms of a single step / ms of a batch step: the issue-10 line "batch 8 decode gives at least
5x the tokens/s of batch 1"). Separate `onnxllm bench` runs of the two (b8.sh-style) put the same
build at 3.5-4.4 within an hour on a shared 2-vCPU host, as the host's speed moved between them.
The steps include the Python binding's per-step overhead, the same for both.

  PYTHONPATH=build/python benchmarks/batch_ratio.py -m MODEL [--batch 8] [--prompt-len 128]
      [--gen-len 64] [--rounds 3] [--seed 1]   (threads: the model's intra_op_num_threads)
"""

import argparse
import random
import statistics
import sys

import onnxllm as og

from alternate import check_length, generator, genai_config, mean_step_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.batch < 2 or args.prompt_len < 1:
        sys.exit(f"--batch ({args.batch}) must be at least 2 and --prompt-len ({args.prompt_len}) at least 1")
    if args.gen_len < 3 or args.rounds < 1:
        sys.exit("--gen-len must be at least 3 and --rounds at least 1")

    config = genai_config(args.model)
    check_length(config, args.prompt_len + args.gen_len)
    model = og.Model(args.model)
    rng = random.Random(args.seed)
    vocab = config["vocab_size"]
    ratios = []
    for r in range(args.rounds):
        rows = [[rng.randrange(10, vocab - 10) for _ in range(args.prompt_len)] for _ in range(args.batch)]
        gens = {1: generator(model, rows[:1], args.gen_len), args.batch: generator(model, rows, args.gen_len)}
        ms = mean_step_ms(gens, args.gen_len)
        ratios.append(args.batch * ms[1] / ms[args.batch])
        print(f"round {r + 1}/{args.rounds}: batch 1 {ms[1]:.3f} ms a step ({1e3 / ms[1]:.1f} tokens/s), "
              f"batch {args.batch} {ms[args.batch]:.3f} ms ({args.batch * 1e3 / ms[args.batch]:.1f} tokens/s), "
              f"ratio {ratios[-1]:.2f}", flush=True)
        del gens
    print(f"decode tokens/s at batch {args.batch} / at batch 1: median {statistics.median(ratios):.2f} "
          f"over {args.rounds} rounds ({', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()

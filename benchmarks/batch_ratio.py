#!/usr/bin/python3
"""Batched decode against one sequence, measured in one process with the order swapped every round.

A generator of one prompt and one of --batch prompts (random ids, all --prompt-len long) run in
one process, each its --gen-len steps in one block, the order swapped every round; a round reports
the mean step time of each and the ratio of their tokens/s, the batch's counting every row
(batch x ms of a single step / ms of a batch step: the issue-10 line "batch 8 decode gives at least
5x the tokens/s of batch 1"). Five rounds read 3.97-4.51 where separate `onnxllm bench --batch`
runs of the same build read 3.5-4.4 within an hour. Not step by step as
context_ratio.py: alternating a batch-1 and a batch-8 step slowed the batch-1 steps and sped up
the batch-8 ones (0.3-1.4 ms each way), raising the ratio from 3.5-3.8 to 4.1-4.4 in the same
process. The steps include the Python binding's per-step overhead, the same for both.

  PYTHONPATH=build/python benchmarks/batch_ratio.py -m MODEL [--batch 8] [--prompt-len 128]
      [--gen-len 64] [--rounds 3] [--seed 1]   (threads: the model's intra_op_num_threads)
"""

import statistics
import sys

from alternate import argument_parser, generator, load, mean_step_ms


def main():
    ap = argument_parser(__doc__)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=128)
    args = ap.parse_args()
    if args.batch < 2 or args.prompt_len < 1:
        sys.exit(f"--batch ({args.batch}) must be at least 2 and --prompt-len ({args.prompt_len}) at least 1")
    model, vocab, rng = load(args, args.prompt_len)
    ratios = []
    for r in range(args.rounds):
        rows = [[rng.randrange(10, vocab - 10) for _ in range(args.prompt_len)] for _ in range(args.batch)]
        sizes = (1, args.batch) if r % 2 == 0 else (args.batch, 1)
        gens = {n: generator(model, rows[:n], args.gen_len) for n in sizes}
        ms = mean_step_ms(gens, args.gen_len, block=args.gen_len)
        ratios.append(args.batch * ms[1] / ms[args.batch])
        print(f"round {r + 1}/{args.rounds}: batch 1 {ms[1]:.3f} ms a step ({1e3 / ms[1]:.1f} tokens/s), "
              f"batch {args.batch} {ms[args.batch]:.3f} ms ({args.batch * 1e3 / ms[args.batch]:.1f} tokens/s), "
              f"ratio {ratios[-1]:.2f}", flush=True)
        del gens
    print(f"decode tokens/s at batch {args.batch} / at batch 1: median {statistics.median(ratios):.2f} "
          f"over {args.rounds} rounds ({', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()

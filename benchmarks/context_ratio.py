#!/usr/bin/python3
"""Decode speed at a long context against a short one, measured so that host drift cancels.

Two generators of one model (prompts of --short and --long random ids) are stepped alternately in
one process, one token each, the order swapped every step; a round reports the mean step time of
each and their ratio (short / long: the long context's decode speed as a fraction of the short
one's, the issue-10 line "2048 tokens of context at least 80% of 128"). Separate `onnxllm bench`
runs of the two prompt lengths swung 0.70-1.09 over 8 rounds on a shared 2-vCPU host; alternating
steps kept most sittings within 0.03-0.05, though one sitting's 10 rounds spread 0.775-0.883. The
steps include the Python binding's per-token overhead, the same for both.

The end also prints the ratio's bandwidth bound: a decode step reads every weight once and, at a
context of c positions, c rows of the KV cache, so a step bound by memory bandwidth cannot do
better than (weights + KV(short)) / (weights + KV(long)), whatever the kernels (the byte counts
come from `onnxllm bench --json`, which honours ONNXLLM_KV_CACHE as the generators do). For a
Qwen2.5-0.5B-shaped int4 model with a float32 cache that is 0.857 at 128 against 2048 (265 MiB of
weights, 48.8 MiB of cache at 2080 positions), 0.922 with a float16 cache.

  PYTHONPATH=build/python benchmarks/context_ratio.py -m MODEL [--short 128] [--long 2048]
      [--gen-len 64] [--rounds 3] [--seed 1] [--onnxllm build/bin/onnxllm]
      (threads: the model's intra_op_num_threads)
"""

import os
import statistics
import sys

from alternate import argument_parser, generator, load, mean_step_ms
from compare import last_json_line, run_measured

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def step_bytes(onnxllm, model):
    """(weight and row bytes a decode step reads, KV cache bytes a position) from a short
    `onnxllm bench --json` run; exits naming what failed."""
    cmd = [onnxllm, "bench", "-m", model, "--prompt-len", "1", "--gen-len", "2", "--reps", "1", "--threads", "1",
           "--no-bandwidth", "--json"]
    j = last_json_line(run_measured(cmd, 600)[0], "onnxllm bench (the byte counts)")
    return j["weight_bytes_per_step"] + j["row_bytes_per_token"], j["kv_bytes_per_position"]


def bandwidth_bound(fixed, per_position, short_context, long_context):
    """The ratio of two decode steps that read `fixed` bytes plus `per_position` a context position,
    at one bandwidth."""
    return (fixed + per_position * short_context) / (fixed + per_position * long_context)


def main():
    ap = argument_parser(__doc__)
    ap.add_argument("--short", type=int, default=128)
    ap.add_argument("--long", type=int, default=2048)
    ap.add_argument("--onnxllm", default=os.path.join(ROOT, "build/bin/onnxllm"),
                    help="the CLI whose `bench --json` gives the byte counts of the bandwidth bound")
    args = ap.parse_args()
    if not 0 < args.short < args.long:
        sys.exit(f"--short ({args.short}) must be positive and below --long ({args.long})")
    model, vocab, rng = load(args, args.long)
    fixed, per_position = step_bytes(args.onnxllm, args.model)
    ratios = []
    for r in range(args.rounds):
        gens = {n: generator(model, [[rng.randrange(10, vocab - 10) for _ in range(n)]], args.gen_len)
                for n in (args.short, args.long)}
        ms = mean_step_ms(gens, args.gen_len)
        short_ms, long_ms = ms[args.short], ms[args.long]
        ratios.append(short_ms / long_ms)
        print(f"round {r + 1}/{args.rounds}: {args.short} tokens {short_ms:.3f} ms a step, "
              f"{args.long} tokens {long_ms:.3f} ms, ratio {ratios[-1]:.3f}", flush=True)
        del gens
    print(f"decode at {args.long} tokens of context / at {args.short}: median {statistics.median(ratios):.3f} "
          f"over {args.rounds} rounds ({', '.join(f'{x:.3f}' for x in ratios)})")
    # Mean decode context of a generator: its prompt plus half the new tokens (as `onnxllm bench`).
    short_c, long_c = args.short + args.gen_len / 2, args.long + args.gen_len / 2
    bound = bandwidth_bound(fixed, per_position, short_c, long_c)
    mib = 1 << 20
    print(f"bandwidth bound {bound:.3f} (every byte read at one speed: {fixed / mib:.1f} MiB of weights a step, "
          f"KV cache {per_position / 1024:.1f} KiB a position, {per_position * short_c / mib:.1f} MiB at {short_c:g} "
          f"and {per_position * long_c / mib:.1f} MiB at {long_c:g}); the median is {statistics.median(ratios) / bound:.2f} of it")


if __name__ == "__main__":
    main()

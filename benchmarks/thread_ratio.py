#!/usr/bin/python3
"""Decode speed with more threads against fewer (the issue-10 line "2-thread decode at least 1.7x
1-thread"), each count a fresh `onnxllm bench` process, alternated with the order swapped every
round.

Separate processes, not two thread counts in one process: on the 2-vCPU development VM a 2-thread
step that follows a 1-thread step took 7.1-7.5 ms instead of 5.3 (the idle vCPU waking up,
presumably the hypervisor's), which read 1.47-1.59 where alternated processes read 1.63-1.78 in
the same hour. A round reports both decode tokens/s and their ratio; the end, the median of each
count, the ratio of those medians and the median of the rounds' ratios. The prompt is the same
in every run (bench's --seed).

  benchmarks/thread_ratio.py -m MODEL [--threads 1,2] [--prompt-len 128] [--gen-len 64]
      [--rounds 4] [--seed 1] [--onnxllm build/bin/onnxllm] [--timeout 600]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def thread_counts(text):
    """"A,B" -> (A, B): two different positive counts."""
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two thread counts separated by a comma, got '{text}'")
    if a < 1 or b < 1 or a == b:
        raise argparse.ArgumentTypeError(f"the thread counts must be two different numbers >= 1, got '{text}'")
    return a, b


def decode_tok_s(args, threads):
    cmd = [args.onnxllm, "bench", "-m", args.model, "--threads", str(threads), "--prompt-len", str(args.prompt_len),
           "--gen-len", str(args.gen_len), "--seed", str(args.seed), "--reps", "1", "--no-bandwidth", "--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"thread_ratio: {' '.join(cmd)}: {e}")
    if p.returncode != 0:
        sys.exit(f"thread_ratio: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    try:
        j = json.loads(p.stdout.strip().splitlines()[-1])
        ran = j["threads"]
        tok_s = j["decode_tokens_per_s"]
    except (IndexError, ValueError, KeyError) as e:
        sys.exit(f"thread_ratio: no JSON result from onnxllm bench ({e}): {p.stdout[-500:]}")
    if ran != threads:
        sys.exit(f"thread_ratio: onnxllm bench ran {ran} threads, not {threads}")
    return tok_s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--threads", type=thread_counts, default=(1, 2), help="two counts A,B: the ratio is B's decode tokens/s over A's (default 1,2)")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--onnxllm", default=os.path.join(ROOT, "build/bin/onnxllm"))
    ap.add_argument("--timeout", type=float, default=600, help="seconds for one bench process")
    args = ap.parse_args()
    if args.prompt_len < 1 or args.gen_len < 3 or args.rounds < 1:
        sys.exit("--prompt-len must be at least 1, --gen-len at least 3 and --rounds at least 1")
    if not os.access(args.onnxllm, os.X_OK):
        sys.exit(f"thread_ratio: {args.onnxllm} is not an executable (build it, or pass --onnxllm)")
    few, many = args.threads
    speeds = {few: [], many: []}
    for r in range(args.rounds):
        for t in (few, many) if r % 2 == 0 else (many, few):
            speeds[t].append(decode_tok_s(args, t))
        print(f"round {r + 1}/{args.rounds}: {few} threads {speeds[few][-1]:.1f} tokens/s, {many} threads "
              f"{speeds[many][-1]:.1f}, ratio {speeds[many][-1] / speeds[few][-1]:.2f}", flush=True)
    m_few, m_many = statistics.median(speeds[few]), statistics.median(speeds[many])
    ratios = [b / a for a, b in zip(speeds[few], speeds[many])]
    print(f"decode tokens/s, medians over {args.rounds} rounds: {few} threads {m_few:.1f}, {many} threads "
          f"{m_many:.1f}; ratio of the medians {m_many / m_few:.2f}, median of the rounds' ratios "
          f"{statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()

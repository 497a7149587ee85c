"""What n-gram speculative decoding gives: decode tokens/s of one og.Generator with
set_speculative_options(ngram_size=N, max_draft_tokens=K) against the same generation without,
alternated round by round (the order flipped every round), medians and their ratio; the tokens of
both must be equal (the script fails otherwise), and the counters show where the time went (rounds,
accepted drafts, standard steps). The speed-up depends on how much the text repeats itself: the
prompt is the text's own (--prompt-file, encoded with the folder's tokenizer) or, by default, a
random id sequence said twice.

  benchmarks/speculative_bench.py -m MODEL [--prompt-file FILE] [--new 128] [--ngram 3]
      [--draft-tokens 2,4,8] [--rounds 3] [--sample]
"""

import argparse
import random
import statistics
import sys
import time

import onnxllm as og


def generate(model, ids, new, sample, ngram, draft_tokens):
    """(tokens, decode tokens/s after the first token, speculative stats)."""
    p = og.GeneratorParams(model)
    p.set_search_options(max_length=len(ids) + new, do_sample=sample, top_k=20, random_seed=1)
    if draft_tokens:
        p.set_speculative_options(ngram_size=ngram, max_draft_tokens=draft_tokens)
    g = og.Generator(model, p)
    g.append_tokens(ids)
    g.generate_next_token()
    start = time.perf_counter()
    while not g.is_done():
        g.generate_next_token()
    seconds = time.perf_counter() - start
    return list(g.get_sequence(0)), (g.token_count() - len(ids) - 1) / seconds, g.get_speculative_stats()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--prompt-file", help="text to continue (default: random ids, twice)")
    ap.add_argument("--new", type=int, default=128, help="tokens to generate")
    ap.add_argument("--ngram", type=int, default=3)
    ap.add_argument("--draft-tokens", default="2,4,8", help="comma-separated max_draft_tokens to try")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sample", action="store_true", help="sample (top_k 20, seed 1) instead of greedy")
    args = ap.parse_args()
    try:
        widths = [int(k) for k in args.draft_tokens.split(",")]
    except ValueError:
        ap.error(f"--draft-tokens: expected numbers separated by commas, got {args.draft_tokens!r}")
    if not all(1 <= k <= 16 for k in widths):
        ap.error(f"--draft-tokens: each must be in [1, 16], got {args.draft_tokens}")
    if args.new < 2:
        ap.error("--new must be at least 2 (the first token comes from the prompt's logits)")

    model = og.Model(args.model)
    if args.prompt_file:
        with open(args.prompt_file, encoding="utf-8") as f:
            ids = list(og.Tokenizer(model).encode(f.read()))
    else:
        rng = random.Random(0)
        half = [rng.randrange(1000, 30000) for _ in range(64)]
        ids = half + half
    configs = [0] + widths
    speeds = {k: [] for k in configs}
    stats = {}
    reference = None
    generate(model, ids, 8, args.sample, args.ngram, widths[0])  # warm-up
    for r in range(args.rounds):
        for k in (configs if r % 2 == 0 else configs[::-1]):
            tokens, speed, s = generate(model, ids, args.new, args.sample, args.ngram, k)
            if reference is None and k == 0:
                reference = tokens
            if reference is not None and tokens != reference:
                sys.exit(f"max_draft_tokens {k}: the tokens differ from standard decoding")
            speeds[k].append(speed)
            stats[k] = s
    base = statistics.median(speeds[0])
    print(f"prompt {len(ids)} tokens, {args.new} new, ngram_size {args.ngram}, {args.rounds} rounds, "
          f"{'sampled' if args.sample else 'greedy'}")
    print(f"standard: {base:.1f} tokens/s")
    for k in widths:
        s = stats[k]
        median = statistics.median(speeds[k])
        verify_ms = s["total_target_verify_ms"] / max(1, s["rounds"])
        print(f"max_draft_tokens {k}: {median:.1f} tokens/s (x{median / base:.2f}); {s['rounds']} rounds "
              f"({verify_ms:.2f} ms each against {1000 / base:.2f} ms a standard step), "
              f"{s['draft_tokens_accepted']} of {s['draft_tokens_evaluated']} drafts accepted "
              f"({s['acceptance_rate']:.2f}), {s['tokens_emitted']} tokens from rounds, "
              f"{s['standard_fallback_steps']} standard steps")


if __name__ == "__main__":
    main()

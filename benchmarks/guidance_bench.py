"""What guidance costs: decode tokens/s of guided generation (set_guidance("json_schema", ...), or
"regex" / "lark_grammar") against the same generation unguided, for one og.Generator and for N og.Engine requests at once,
alternated round by round (ABBA), medians and their ratio.

The model folder needs its tokenizer. The benchmark model has none: copy in a tokenizer of its
vocabulary (e.g. the Qwen3 tokenizer.json the tokenizer oracle tests fetch into
build/tokenizers-extra/qwen3) beside links to its genai_config.json, model.onnx and model.onnx.data.
Random weights write garbage, so every step masks: the worst case for the mask.

  benchmarks/guidance_bench.py -m MODEL [--new 64] [--clients 16] [--rounds 3]
      [--schema FILE | --regex PATTERN | --grammar FILE]
"""

import argparse
import json
import statistics
import sys
import time

import onnxllm as og

# Two free strings: the state a long reply spends most tokens in (the guide reuses its mask there).
DEFAULT_SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                  "required": ["a", "b"]}


def params_for(model, ids, new, guidance):
    """guidance: set_guidance's (type, data), or None."""
    p = og.GeneratorParams(model)
    p.set_search_options(max_length=len(ids) + new, do_sample=False)
    if guidance is not None:
        p.set_guidance(*guidance)
    return p


def generator_tok_s(model, ids, new, guidance):
    """Decode tokens/s of one generation (the first token, the prompt's, not timed)."""
    g = og.Generator(model, params_for(model, ids, new, guidance))
    g.append_tokens(ids)
    g.generate_next_token()
    start, n = time.perf_counter(), 0
    while not g.is_done():
        g.generate_next_token()
        n += 1
    return n / (time.perf_counter() - start), n


def engine_tok_s(model, prompts, new, guidance):
    """Aggregate tokens/s of the requests once each has its first token."""
    engine = og.Engine(model)
    for ids in prompts:
        r = og.Request(params_for(model, ids, new, guidance))
        r.add_tokens(ids)
        engine.add_request(r)
    seen, start, first = 0, None, 0
    while engine.has_pending_requests():
        r = engine.step()
        while r is not None and r.has_unseen_tokens():
            r.get_unseen_token()
            seen += 1
            if start is None and seen >= len(prompts):
                start, first = time.perf_counter(), seen
    if start is None or seen == first:
        sys.exit("guidance_bench: the requests ended before they all had a token (raise --new)")
    return (seen - first) / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--new", type=int, default=64, help="new tokens per generation (at most: EOS ends a value)")
    ap.add_argument("--clients", type=int, default=16, help="engine requests at once (0: no engine figure)")
    ap.add_argument("--rounds", type=int, default=3)
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--schema", help="a JSON Schema file (default: an object of two free strings)")
    what.add_argument("--regex", help="a regular expression (set_guidance('regex', ...))")
    what.add_argument("--grammar", help="a Lark grammar file (set_guidance('lark_grammar', ...))")
    args = ap.parse_args()
    if args.new < 3 or args.clients < 0 or args.rounds < 1:
        sys.exit("guidance_bench: --new must be at least 3, --clients at least 0 and --rounds at least 1")
    guidance = ("json_schema", json.dumps(DEFAULT_SCHEMA))
    if args.schema:
        with open(args.schema) as f:
            guidance = ("json_schema", f.read())
    elif args.regex:
        guidance = ("regex", args.regex)
    elif args.grammar:
        with open(args.grammar) as f:
            guidance = ("lark_grammar", f.read())
    model = og.Model(args.model)
    tokenizer = og.Tokenizer(model)
    ids = list(tokenizer.encode("Write a JSON object about a cat: "))
    prompts = [list(tokenizer.encode(f"Request {i}: JSON about item {i * 7}.")) for i in range(args.clients)]
    start = time.perf_counter()
    generator_tok_s(model, ids, 3, guidance)  # builds the vocabulary once, untimed by the rounds
    print(f"first guided generation (the vocabulary built): {(time.perf_counter() - start) * 1e3:.0f} ms", flush=True)
    runs = {"generator": {True: [], False: []}, "engine": {True: [], False: []}}
    for r in range(args.rounds):
        for guided in (False, True) if r % 2 == 0 else (True, False):
            tok_s, n = generator_tok_s(model, ids, args.new, guidance if guided else None)
            runs["generator"][guided].append(tok_s)
            line = f"round {r + 1}/{args.rounds} {'guided' if guided else 'plain '}: generator {tok_s:.1f} tok/s ({n} tokens)"
            if args.clients:
                runs["engine"][guided].append(engine_tok_s(model, prompts, args.new, guidance if guided else None))
                line += f", {args.clients} engine requests {runs['engine'][guided][-1]:.1f} tok/s"
            print(line, flush=True)
    for what in ("generator", "engine"):
        if runs[what][True]:
            plain, guided = statistics.median(runs[what][False]), statistics.median(runs[what][True])
            print(f"{what}: plain {plain:.1f} tok/s, guided {guided:.1f} tok/s, guided / plain {guided / plain:.3f}")


if __name__ == "__main__":
    main()

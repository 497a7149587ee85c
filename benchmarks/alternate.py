"""What context_ratio.py and batch_ratio.py share: their common options, a genai-layout model's
config, and stepping several generators of one model in turns (one step each, or blocks of steps)
in one process, so that host drift hits them alike."""

import argparse
import json
import random
import statistics
import sys
import time

import onnxllm as og
from compare import warm_page_cache


def argument_parser(doc):
    """A parser with the options both scripts take (-m, --gen-len, --rounds, --seed); each adds its own."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    return ap


def load(args, prompt_len):
    """After a script's own checks: checks --gen-len and --rounds and that prompt_len + --gen-len
    fits the model; returns (model, vocabulary size, a Random seeded with --seed)."""
    if args.gen_len < 3 or args.rounds < 1:
        sys.exit("--gen-len must be at least 3 and --rounds at least 1")
    config = genai_config(args.model)
    check_length(config, prompt_len + args.gen_len)
    warm_page_cache(args.model)
    return og.Model(args.model), config["vocab_size"], random.Random(args.seed)


def genai_config(model_dir):
    """The "model" section of model_dir/genai_config.json; exits with a message when it is missing."""
    try:
        with open(f"{model_dir}/genai_config.json") as f:
            return json.load(f)["model"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"{model_dir}/genai_config.json: {e} (an Optimum folder: `onnxllm config -m DIR` writes one)")


def check_length(config, tokens):
    """Exits when prompt + new tokens (`tokens`) exceed the model's context_length."""
    if tokens > config.get("context_length", sys.maxsize):
        sys.exit(f"prompt + --gen-len ({tokens}) exceeds the model's context_length ({config['context_length']})")


def generator(model, prompts, gen_len):
    """A greedy generator that has taken `prompts` (equal-length rows, one per sequence) and will
    make exactly gen_len more tokens for each."""
    p = og.GeneratorParams(model)
    n = len(prompts[0]) + gen_len
    p.set_search_options(max_length=n, min_length=n, do_sample=False, batch_size=len(prompts))
    g = og.Generator(model, p)
    g.append_tokens(prompts)
    return g


def mean_step_ms(gens, steps, block=1):
    """Steps every generator of `gens` (a dict, in its order) `steps` times, `block` steps of one
    before the next, the order rotating every block; returns {key: mean ms a step}, each one's first
    step (the one after the prompt) left out, as `onnxllm bench` leaves it out."""
    keys = list(gens)
    times = {k: [] for k in keys}
    for b, start_step in enumerate(range(0, steps, block)):
        n = min(block, steps - start_step)
        for k in keys[b % len(keys):] + keys[:b % len(keys)]:
            for _ in range(n):
                start = time.perf_counter()
                gens[k].generate_next_token()
                times[k].append(time.perf_counter() - start)
    return {k: 1e3 * statistics.mean(t[1:]) for k, t in times.items()}

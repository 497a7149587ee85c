"""What context_ratio.py and batch_ratio.py share: a genai-layout model's config, and stepping
several generators of one model alternately so that host drift hits them alike."""

import json
import statistics
import sys
import time

import onnxllm as og


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
    g.append_tokens(prompts if len(prompts) > 1 else prompts[0])
    return g


def mean_step_ms(gens, steps):
    """Steps every generator of `gens` (a dict) once per round, for `steps` rounds, in an order that
    rotates every round; returns {key: mean ms a step}, the first step (the one after the prompt)
    left out, as `onnxllm bench` leaves it out."""
    keys = list(gens)
    times = {k: [] for k in keys}
    for step in range(steps):
        for k in keys[step % len(keys):] + keys[:step % len(keys)]:
            start = time.perf_counter()
            gens[k].generate_next_token()
            times[k].append(time.perf_counter() - start)
    return {k: 1e3 * statistics.mean(t[1:]) for k, t in times.items()}

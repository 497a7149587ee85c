"""Decode speed through Python against the CLI, same model and prompt (issue 8: >= 95%).

Builds a random-weight Llama (int4 MatMuls, 133 M parameters, one intra-op thread) and times, for each
side, a run with 1 new token and a run with N new tokens as separate processes; the difference
over N-1 is the decode time per token, free of loading and prompt time. Runs alternate between
the CLI and Python; the medians of the repeats are compared.
Usage: PYTHONPATH=build/python python3 tests/bench/python_overhead.py [BUILD_DIR] [REPEATS] [NEW_TOKENS]
"""

import json
import pathlib
import statistics
import subprocess
import sys
import time

build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
new_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 200
cli = build / "bin/onnxllm"
work = build / "bench-python"
model = work / "random-llama-int4"
prompt = [1] + [(17 * i) % 31000 + 3 for i in range(31)]

if not (model / "genai_config.json").exists():
    work.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
              "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 6,
              "vocab_size": 32000, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False}
    (work / "config.json").write_text(json.dumps(config))
    subprocess.run([cli, "build", "--config", work / "config.json", "--random-weights", "--seed", "1", "-o", model,
                    "-p", "int4", "--overwrite", "-q"], check=True)
    genai = json.loads((model / "genai_config.json").read_text())
    genai["model"]["decoder"].setdefault("session_options", {})["intra_op_num_threads"] = 1
    (model / "genai_config.json").write_text(json.dumps(genai, indent=2))

PYTHON = """
import sys, onnxllm as og
model = og.Model(sys.argv[1])
params = og.GeneratorParams(model)
params.set_search_options(max_length=int(sys.argv[2]))
generator = og.Generator(model, params)
generator.append_tokens([int(t) for t in sys.argv[3].split(",")])
while not generator.is_done():
    generator.generate_next_token()
print(",".join(map(str, generator.get_sequence(0))))
"""


def timed(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, out


def run(side, length):
    ids = ",".join(map(str, prompt))
    if side == "cli":
        return timed([cli, "generate", "-m", model, "--ids", ids, "--max-length", str(length), "--print-ids"])
    return timed([sys.executable, "-c", PYTHON, str(model), str(length), ids])


rates = {"cli": [], "python": []}
for r in range(repeats):
    for side in ("cli", "python"):
        short, _ = run(side, len(prompt) + 1)
        long, out = run(side, len(prompt) + new_tokens)
        rates[side].append((new_tokens - 1) / (long - short))
        if side == "python":
            assert out == last_cli_out, "Python and the CLI generated different tokens"
        else:
            last_cli_out = out
cli_rate, py_rate = statistics.median(rates["cli"]), statistics.median(rates["python"])
print(f"decode tokens/s (median of {repeats}): CLI {cli_rate:.1f}, Python {py_rate:.1f}, ratio {py_rate / cli_rate:.3f}")
print("runs:", {k: [round(v, 1) for v in vs] for k, vs in rates.items()})

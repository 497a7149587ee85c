"""Graph fusions on genai-layout models (runtime/fusion.cc), fused against unfused.

A builder int4 model's MLP is Mul(gate, Sigmoid(gate)) * up with gate and up from MatMulNBits: the
SiLU becomes QuickGelu in every layer, however deep (the float32 check walks back through the
contrib ops and remembers what it found), the gate and up projections one siblings node, and that
node takes the QuickGelu and the Mul into its epilogue (gated siblings). The logits are bit for bit
those of the unfused graph (the fused ops compute the same float operations).
"""

import json
import os
import subprocess

import pytest

from conftest import CLI

LAYERS = 12  # deep enough that a bounded search from the last layer cannot reach the input alone
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": LAYERS, "vocab_size": 128, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
          "tie_word_embeddings": False}

LOGITS_SCRIPT = """
import sys, numpy as np, onnxllm as og
model = og.Model(sys.argv[1])
params = og.GeneratorParams(model)
params.set_search_options(max_length=24, do_sample=False)
g = og.Generator(model, params)
g.append_tokens([1, 17, 42, 99, 5])
rows = [np.array(g.get_logits())[0, -1]]
for _ in range(5):
    g.generate_next_token()
    rows.append(np.array(g.get_logits())[0, -1])
np.save(sys.argv[2], np.stack(rows))
"""


@pytest.fixture(scope="module")
def int4_model(tmp_path_factory):
    work = tmp_path_factory.mktemp("fusion")
    (work / "config.json").write_text(json.dumps(CONFIG))
    out = work / "llama-int4"
    subprocess.run([str(CLI), "build", "--config", str(work / "config.json"), "--random-weights", "--seed", "9",
                    "-o", str(out), "-p", "int4", "-q"], check=True, capture_output=True, text=True, timeout=120)
    return out


def env_with(fusions):
    return dict(os.environ, ONNXLLM_FUSIONS="1" if fusions else "0")


def op_counts(folder, fusions):
    r = subprocess.run([str(CLI), "info", "-m", str(folder), "--json"], check=True, capture_output=True, text=True,
                       env=env_with(fusions), timeout=60)
    counts = {}
    for o in json.loads(r.stdout)["ops"]:
        counts[o["op"]] = counts.get(o["op"], 0) + o["count"]
    return counts


def test_gated_mlp_of_every_layer_becomes_one_siblings_node(int4_model):
    fused, unfused = op_counts(int4_model, True), op_counts(int4_model, False)
    assert unfused.get("Sigmoid") == LAYERS and "com.onnxllm.MatMulNBitsSiblings" not in unfused, unfused
    # SiLU's Mul and the gate's Mul go into the gated siblings node with the QuickGelu they became.
    assert fused.get("com.onnxllm.MatMulNBitsSiblings") == LAYERS, fused
    assert "Sigmoid" not in fused and "com.microsoft.QuickGelu" not in fused, fused
    assert fused.get("Mul", 0) == unfused["Mul"] - 2 * LAYERS
    assert fused["com.microsoft.MatMulNBits"] == unfused["com.microsoft.MatMulNBits"] - 2 * LAYERS


def test_fused_logits_equal_unfused(int4_model, tmp_path):
    import numpy as np
    logits = {}
    for fusions in (True, False):
        out = tmp_path / f"logits{int(fusions)}.npy"
        subprocess.run(["/usr/bin/python3", "-c", LOGITS_SCRIPT, str(int4_model), str(out)], check=True,
                       env=env_with(fusions), timeout=120)
        logits[fusions] = np.load(out)
    assert logits[True].shape == (6, 128)
    assert np.array_equal(logits[True], logits[False])
    assert np.abs(logits[True]).max() > 0

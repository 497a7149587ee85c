"""Mixture-of-experts families (Qwen2-MoE, Qwen3-MoE) against an independent reference: random-weights
Hugging Face checkpoints are written here, built with `onnxllm build` (the expert blocks become
com.microsoft MoE, or QMoE for int4), and run by onnxllm and ONNX Runtime. The reference is a numpy
forward pass written below from transformers' modeling_qwen2_moe.py / modeling_qwen3_moe.py: fp32
logits must match it within tolerance at every step and the greedy tokens exactly; ONNX Runtime
must give the same greedy tokens on the built graphs (fp32 and int4).
"""

import json

import numpy as np
import pytest

from test_builder_families import (PROMPT, STEPS, assert_matches_reference, attend, base_config, build, build_error,
                                   onnxllm_greedy, ort_greedy, rms_norm, rope, silu, write_checkpoint)


def moe_config(architecture, model_type, **overrides):
    c = base_config(architecture, model_type, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                    num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=False)
    c.update(overrides)
    return c


CASES = {
    # Qwen2-MoE (Qwen1.5-MoE-A2.7B's layout): q/k/v biases, a sigmoid-gated shared expert, weights
    # not renormalized; layer 1 dense through mlp_only_layers.
    "qwen2_moe": moe_config("Qwen2MoeForCausalLM", "qwen2_moe", shared_expert_intermediate_size=48,
                            mlp_only_layers=[1]),
    "qwen2_moe_all_sparse": moe_config("Qwen2MoeForCausalLM", "qwen2_moe", shared_expert_intermediate_size=40,
                                       num_experts_per_tok=1, norm_topk_prob=True),
    # Qwen3-MoE (Qwen3-30B-A3B's layout): per-head q/k RMSNorm, no shared expert, renormalized top k.
    "qwen3_moe": moe_config("Qwen3MoeForCausalLM", "qwen3_moe", head_dim=32, norm_topk_prob=True),
}


def moe_tensors(c, seed=0, std=0.1):
    rng = np.random.default_rng(seed)
    d, v, hd = c["hidden_size"], c["vocab_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    qwen2 = c["model_type"] == "qwen2_moe"

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + normal(d)
        for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            t[p + f"self_attn.{name}.weight"] = normal(rows, d)
            if qwen2:
                t[p + f"self_attn.{name}.bias"] = normal(rows)
        t[p + "self_attn.o_proj.weight"] = normal(d, q)
        if not qwen2:
            t[p + "self_attn.q_norm.weight"] = 1 + normal(hd)
            t[p + "self_attn.k_norm.weight"] = 1 + normal(hd)
        t[p + "post_attention_layernorm.weight"] = 1 + normal(d)
        if i in c["mlp_only_layers"]:
            inter = c["intermediate_size"]
            for name, shape in (("gate_proj", (inter, d)), ("up_proj", (inter, d)), ("down_proj", (d, inter))):
                t[p + f"mlp.{name}.weight"] = normal(*shape)
            continue
        t[p + "mlp.gate.weight"] = normal(c["num_experts"], d) * 10  # routing decisively away from ties
        inter = c["moe_intermediate_size"]
        for e in range(c["num_experts"]):
            for name, shape in (("gate_proj", (inter, d)), ("up_proj", (inter, d)), ("down_proj", (d, inter))):
                t[p + f"mlp.experts.{e}.{name}.weight"] = normal(*shape)
        if c.get("shared_expert_intermediate_size"):
            si = c["shared_expert_intermediate_size"]
            for name, shape in (("gate_proj", (si, d)), ("up_proj", (si, d)), ("down_proj", (d, si))):
                t[p + f"mlp.shared_expert.{name}.weight"] = normal(*shape)
            t[p + "mlp.shared_expert_gate.weight"] = normal(1, d)
    t["model.norm.weight"] = 1 + normal(d)
    t["lm_head.weight"] = normal(v, d)
    return t


def moe_forward(c, t, ids):
    """Logits [len(ids), vocab] of Qwen2MoeForCausalLM / Qwen3MoeForCausalLM (no cache), in float64."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or c["hidden_size"] // nh
    eps, s = c["rms_norm_eps"], len(ids)

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def mlp(x, p):  # Qwen2MoeMLP: down(silu(gate(x)) * up(x))
        return linear(silu(linear(x, p + "gate_proj")) * linear(x, p + "up_proj"), p + "down_proj")

    def sparse_block(x, p):  # Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock
        logits = linear(x, p + "gate")
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out = np.zeros_like(x)
        for r in range(x.shape[0]):
            top = np.argsort(-probs[r], kind="stable")[:c["num_experts_per_tok"]]
            weights = probs[r, top]
            if c["norm_topk_prob"]:
                weights = weights / weights.sum()
            for e, wt in zip(top, weights):
                out[r] += wt * mlp(x[r:r + 1], p + f"experts.{e}.")[0]
        if c.get("shared_expert_intermediate_size"):
            gate = 1.0 / (1.0 + np.exp(-linear(x, p + "shared_expert_gate")))
            out = out + gate * mlp(x, p + "shared_expert.")
        return out

    h = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)

        def heads(name, n):
            y = linear(x, p + "self_attn." + name).reshape(s, n, hd)
            if p + f"self_attn.{name[0]}_norm.weight" in w:  # Qwen3: RMSNorm over each head before rotary
                y = rms_norm(y, w[p + f"self_attn.{name[0]}_norm.weight"], eps)
            return y.transpose(1, 0, 2)

        q, k, v = heads("q_proj", nh), heads("k_proj", nkv), heads("v_proj", nkv)
        q, k = rope(q, hd, c["rope_theta"]), rope(k, hd, c["rope_theta"])
        h = h + linear(attend(q, k, v, 1.0 / np.sqrt(hd)), p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        sparse = i not in c["mlp_only_layers"] and (i + 1) % c["decoder_sparse_step"] == 0
        h = h + (sparse_block(x, p + "mlp.") if sparse else mlp(x, p + "mlp."))
    return rms_norm(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def reference_greedy(c, t, prompt, steps):
    ids, all_logits = list(prompt), []
    for _ in range(steps):
        logits = moe_forward(c, t, ids)[-1]
        all_logits.append(logits)
        ids.append(int(np.argmax(logits)))
        if ids[-1] == c["eos_token_id"]:
            break
    return ids, all_logits


@pytest.fixture(scope="module", params=sorted(CASES))
def family(request, tmp_path_factory):
    config = CASES[request.param]
    tensors = moe_tensors(config, seed=len(request.param))
    hf = tmp_path_factory.mktemp(request.param) / "hf"
    write_checkpoint(hf, config, tensors)
    return request.param, config, tensors, hf


def graph_ops(model_dir):
    """Op types of the built model.onnx (its graph only; weights stay on disk)."""
    import onnx  # Debian's python3-onnx
    return {n.op_type for n in onnx.load(str(model_dir / "model.onnx"), load_external_data=False).graph.node}


def ort_greedy_unaliased(model_dir, prompt, steps):
    """ort_greedy with each MoE / QMoE input also a graph output. ONNX Runtime 1.30's CPU MoE may run
    in place (MayInplace(0, 0)) and, with normalize_routing_weights 0, zeroes its output before it
    reads the input; when its planner reuses the input buffer the tokens go wrong (seen on qwen2_moe:
    greedy diverges at step 2, and matches the reference once the input is kept alive)."""
    import onnx
    path = model_dir / "model.onnx"
    m = onnx.load(str(path), load_external_data=False)
    outputs = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type in ("MoE", "QMoE") and n.input[0] not in outputs:
            m.graph.output.append(onnx.helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT, None))
            outputs.add(n.input[0])
    onnx.save(m, str(path))
    return ort_greedy(model_dir, prompt, steps)


def test_fp32_matches_the_numpy_reference(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "fp32")
    genai = json.loads((out / "genai_config.json").read_text())
    assert genai["model"]["type"] == config["architectures"][0].split("For")[0].lower()  # genai builder: "qwen2moe"
    assert "MoE" in graph_ops(out)
    assert_matches_reference(name, config, tensors, out, ort=ort_greedy_unaliased, reference=reference_greedy)


def test_int4_runs_like_ort(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "int4", "int4", "--accuracy-level", "0")
    assert "QMoE" in graph_ops(out) and "MoE" not in graph_ops(out)
    ids, _ = onnxllm_greedy(out, PROMPT, STEPS)
    assert len(ids) > len(PROMPT) and all(0 <= t < config["vocab_size"] for t in ids)
    expected_ids, _ = reference_greedy(config, tensors, PROMPT, STEPS)
    print(f"[{name} int4] {sum(a == b for a, b in zip(ids, expected_ids)) - len(PROMPT)} of {STEPS} tokens equal fp32's")
    assert ort_greedy_unaliased(out, PROMPT, STEPS)[:len(ids)] == ids, name


@pytest.mark.parametrize("changes,message", [
    ({"num_experts": None}, "missing 'num_experts'"),
    ({"num_experts_per_tok": 9}, "'num_experts_per_tok' is 9, expected 1..4"),
    ({"mlp_only_layers": [5]}, "'mlp_only_layers' entries should be layer indices 0..1"),
])
def test_bad_moe_configs_name_the_field(tmp_path, changes, message):
    config = dict(CASES["qwen3_moe"])
    config.update(changes)
    config = {k: v for k, v in config.items() if v is not None}
    hf = tmp_path / "hf"
    write_checkpoint(hf, config, moe_tensors(CASES["qwen3_moe"]))
    assert message in build_error(hf, tmp_path / "out")

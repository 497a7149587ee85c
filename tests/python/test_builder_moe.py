"""Mixture-of-experts families (Qwen2-MoE, Qwen3-MoE, Phi-3.5-MoE, Mixtral) against an independent reference:
random-weights Hugging Face checkpoints are written here, built with `onnxllm build` (the expert blocks
become com.microsoft MoE, or QMoE for int4), and run by onnxllm and ONNX Runtime. The reference is a
numpy forward pass written below from transformers' modeling_qwen2_moe.py / modeling_qwen3_moe.py /
modeling_phimoe.py (sparsemixer included) / modeling_mixtral.py: fp32
logits must match it within tolerance at every step and the greedy tokens exactly; ONNX Runtime
must give the same greedy tokens on the built graphs (fp32 and int4).
"""

import json
import re
import shutil

import numpy as np
import pytest

from test_builder_families import (PROMPT, STEPS, assert_matches_reference, attend, base_config, build, build_error,
                                   layer_norm, onnxllm_greedy, ort_greedy, rms_norm, rope, silu, write_checkpoint)


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
    # Phi-3.5-MoE (PhimoeConfig's names): experts sized by intermediate_size, counted by
    # num_local_experts, sparsemixer top-2 at router_jitter_noise 0.01; LayerNorms with biases,
    # biased q/k/v/o and LM head.
    "phimoe": base_config("PhiMoEForCausalLM", "phimoe", hidden_size=64, intermediate_size=32,
                          num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                          router_jitter_noise=0.01, input_jitter_noise=0.0, attention_bias=True, lm_head_bias=True,
                          rms_norm_eps=1e-5, sliding_window=None),
}
# Phi-3.5-MoE's rotary: longrope with its own short/long mscale (the prompt stays under
# original_max_position_embeddings, so the short factors apply).
CASES["phimoe_longrope"] = dict(CASES["phimoe"], rope_scaling={
    "type": "longrope", "short_factor": [1.0 + 0.1 * i for i in range(8)], "long_factor": [2.0 + i for i in range(8)],
    "short_mscale": 1.1, "long_mscale": 1.3, "original_max_position_embeddings": 64})
# Mixtral (MixtralForCausalLM, Mixtral-8x7B's layout scaled down): Mistral's attention, every MLP a
# block_sparse_moe over num_local_experts experts (w1 gate, w3 up, w2 down, sized by intermediate_size).
# num_experts_per_tok and rope_theta are left out: MixtralConfig's defaults, 2 and 1e6, apply. The
# norm_topk_prob false is not a MixtralConfig field: MixtralSparseMoeBlock renormalizes the top k anyway.
CASES["mixtral"] = base_config("MixtralForCausalLM", "mixtral", hidden_size=64, intermediate_size=96,
                               num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, rms_norm_eps=1e-5,
                               sliding_window=None, router_jitter_noise=0.0, norm_topk_prob=False)
del CASES["mixtral"]["rope_theta"]
# ... one expert per token (renormalized, its weight is 1, not its softmax probability) and a sliding
# window shorter than the prompt plus the generated tokens.
CASES["mixtral_top1_window"] = dict(CASES["mixtral"], num_experts_per_tok=1, num_local_experts=3, sliding_window=6,
                                    rope_theta=10000.0)
MIXTRAL_DEFAULTS = {"num_experts_per_tok": 2, "rope_theta": 1e6}  # MixtralConfig's


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


def phimoe_tensors(c, seed=0, std=0.1):
    """PhimoeForCausalLM's state dict. The routers are random rows plus a component shared by all
    experts along the post-attention LayerNorm's bias, so the router logits of a token sit close
    together: some runners-up fall inside sparsemixer's 2% band (their softmax weights below 1)."""
    rng = np.random.default_rng(seed)
    d, v, e_n, inter = c["hidden_size"], c["vocab_size"], c["num_local_experts"], c["intermediate_size"]
    q, kv = d, c["num_key_value_heads"] * (d // c["num_attention_heads"])

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "input_layernorm.bias"] = 1 + normal(d), normal(d)
        for name, rows, cols in (("q_proj", q, d), ("k_proj", kv, d), ("v_proj", kv, d), ("o_proj", d, q)):
            t[p + f"self_attn.{name}.weight"], t[p + f"self_attn.{name}.bias"] = normal(rows, cols), normal(rows)
        shared = rng.standard_normal(d).astype(np.float32)
        t[p + "post_attention_layernorm.weight"] = 1 + normal(d)
        t[p + "post_attention_layernorm.bias"] = 2 * shared
        t[p + "block_sparse_moe.gate.weight"] = (shared[None, :] + normal(e_n, d) * 8) / 8
        for e in range(e_n):
            x = p + f"block_sparse_moe.experts.{e}."
            t[x + "w1.weight"], t[x + "w3.weight"], t[x + "w2.weight"] = normal(inter, d), normal(inter, d), normal(d, inter)
    t["model.norm.weight"], t["model.norm.bias"] = 1 + normal(d), normal(d)
    t["lm_head.weight"], t["lm_head.bias"] = normal(v, d), normal(v)
    return t


def mixtral_tensors(c, seed=0, std=0.1):
    """MixtralForCausalLM's state dict: Mistral's attention (no biases) and per layer a
    block_sparse_moe of a router (gate) and experts.E.w1 / w3 / w2."""
    rng = np.random.default_rng(seed)
    d, v, e_n, inter = c["hidden_size"], c["vocab_size"], c["num_local_experts"], c["intermediate_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + normal(d)
        for name, rows, cols in (("q_proj", q, d), ("k_proj", kv, d), ("v_proj", kv, d), ("o_proj", d, q)):
            t[p + f"self_attn.{name}.weight"] = normal(rows, cols)
        t[p + "post_attention_layernorm.weight"] = 1 + normal(d)
        t[p + "block_sparse_moe.gate.weight"] = normal(e_n, d) * 10  # routing decisively away from ties
        for e in range(e_n):
            x = p + f"block_sparse_moe.experts.{e}."
            t[x + "w1.weight"], t[x + "w3.weight"], t[x + "w2.weight"] = normal(inter, d), normal(inter, d), normal(d, inter)
    t["model.norm.weight"] = 1 + normal(d)
    t["lm_head.weight"] = normal(v, d)
    return t


TENSORS = {"phimoe": phimoe_tensors, "mixtral": mixtral_tensors}  # else moe_tensors


ROUTES = []  # (margin to the band edge, runner-up weight) of every sparsemixer decision the reference makes


def sparsemixer(scores, jitter_eps):
    """modeling_phimoe.py's sparsemixer in eval mode (top 2) for one token's router logits: each pick
    is the arg max of the scores left; its weight is its softmax over the scores within the
    jitter band ((max - s) / max(|s|, max) <= 2 jitter) of that max, the first pick masked out for
    the second."""
    picks, weights, masked = [], [], scores.copy()
    for _ in range(2):
        top = int(np.argmax(masked))
        rel = (masked[top] - scores) / np.maximum(np.abs(scores), masked[top])
        keep = (rel <= 2 * jitter_eps) & np.isfinite(masked)
        gates = np.where(keep, masked, -np.inf)
        probs = np.exp(gates - gates[top])
        weights.append(probs[top] / probs.sum())
        picks.append(top)
        live = np.isfinite(masked) & (np.arange(len(scores)) != top)
        ROUTES.append((float(np.min(np.abs(rel[live] - 2 * jitter_eps))) if live.any() else 1.0, weights[-1]))
        masked[top] = -np.inf
    return picks, weights


def phimoe_forward(c, t, ids):
    """Logits [len(ids), vocab] of PhimoeForCausalLM (no cache, eval mode), in float64."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd, eps, s = c["hidden_size"] // nh, c["rms_norm_eps"], len(ids)

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def norm(x, name):
        return layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps)

    def sparse_block(x, p):  # PhimoeSparseMoeBlock; experts are PhimoeBlockSparseTop2MLP: w2(silu(w1 x) * w3 x)
        logits = linear(x, p + "gate")
        out = np.zeros_like(x)
        for r in range(x.shape[0]):
            for e, wt in zip(*sparsemixer(logits[r], c["router_jitter_noise"])):
                xe = x[r:r + 1]
                y = linear(silu(linear(xe, p + f"experts.{e}.w1")) * linear(xe, p + f"experts.{e}.w3"), p + f"experts.{e}.w2")
                out[r] += wt * y[0]
        return out

    def rotary(x):  # PhimoeRotaryEmbedding: default, or longrope's short factors times short_mscale
        r = c.get("rope_scaling")
        if not r:
            return rope(x, hd, c["rope_theta"])
        assert s <= r["original_max_position_embeddings"]
        inv_freq = 1.0 / (np.array(r["short_factor"]) * c["rope_theta"] ** (np.arange(0, hd, 2) / hd))
        emb = np.arange(s)[:, None] * inv_freq[None, :]
        emb = np.concatenate([emb, emb], axis=-1)
        half = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], axis=-1)
        return x * np.cos(emb) * r["short_mscale"] + half * np.sin(emb) * r["short_mscale"]

    h = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = norm(h, p + "input_layernorm")

        def heads(name, n):
            return linear(x, p + "self_attn." + name).reshape(s, n, hd).transpose(1, 0, 2)

        q, k, v = heads("q_proj", nh), heads("k_proj", nkv), heads("v_proj", nkv)
        q, k = rotary(q), rotary(k)
        h = h + linear(attend(q, k, v, 1.0 / np.sqrt(hd)), p + "self_attn.o_proj")
        h = h + sparse_block(norm(h, p + "post_attention_layernorm"), p + "block_sparse_moe.")
    return linear(norm(h, "model.norm"), "lm_head")


def moe_forward(c, t, ids):
    """Logits [len(ids), vocab] of Qwen2MoeForCausalLM / Qwen3MoeForCausalLM / MixtralForCausalLM (no
    cache), in float64."""
    if c["model_type"] == "phimoe":
        return phimoe_forward(c, t, ids)
    mixtral = c["model_type"] == "mixtral"
    if mixtral:
        c = dict(MIXTRAL_DEFAULTS, **c)
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or c["hidden_size"] // nh
    eps, s = c["rms_norm_eps"], len(ids)
    # Mixtral: MixtralBlockSparseTop2MLP's w1 (gate), w3 (up), w2 (down) under block_sparse_moe; every
    # layer sparse; the top k always renormalized; Mistral's sliding window when configured.
    gate_proj, up_proj, down_proj = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    block = "block_sparse_moe." if mixtral else "mlp."
    renormalize = mixtral or c["norm_topk_prob"]
    window = c.get("sliding_window") if mixtral else None

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def mlp(x, p):  # Qwen2MoeMLP: down(silu(gate(x)) * up(x)); MixtralBlockSparseTop2MLP: w2(silu(w1 x) * w3 x)
        return linear(silu(linear(x, p + gate_proj)) * linear(x, p + up_proj), p + down_proj)

    def sparse_block(x, p):  # Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock
        logits = linear(x, p + "gate")
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out = np.zeros_like(x)
        for r in range(x.shape[0]):
            top = np.argsort(-probs[r], kind="stable")[:c["num_experts_per_tok"]]
            weights = probs[r, top]
            if renormalize:
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
        h = h + linear(attend(q, k, v, 1.0 / np.sqrt(hd), window), p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        sparse = mixtral or (i not in c["mlp_only_layers"] and (i + 1) % c["decoder_sparse_step"] == 0)
        h = h + (sparse_block(x, p + block) if sparse else mlp(x, p + "mlp."))
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
    tensors = TENSORS.get(config["model_type"], moe_tensors)(config, seed=len(request.param))
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


def softmax_routed_copy(model_dir, sharpen=10.0):
    """A copy of the model folder whose MoE / QMoE nodes route by softmax top k over the router
    logits times `sharpen` instead of the sparse mixer. ONNX Runtime 1.30's CPU MoE and QMoE accept
    use_sparse_mixer but route by softmax top k regardless (moe_cpu.cc reads the attribute only to
    check k = 2), so on Phi-3.5-MoE its tokens are compared where both runtimes compute the same
    thing: everything but the routing rule. The phimoe routers are built to sit close together (see
    phimoe_tensors); sharpened, the softmax picks are decisive, and rounding (int4 / int8 experts
    accumulated in another order) cannot swap the second and third expert between the runtimes."""
    import onnx
    copy = model_dir.parent / (model_dir.name + "-softmax-routed")
    shutil.copytree(model_dir, copy)
    m = onnx.load(str(copy / "model.onnx"), load_external_data=False)
    scale = onnx.helper.make_tensor("router_sharpen", onnx.TensorProto.FLOAT, [], [sharpen])
    m.graph.initializer.append(scale)
    nodes = []
    for n in m.graph.node:
        if n.op_type in ("MoE", "QMoE"):
            kept = [a for a in n.attribute if a.name != "use_sparse_mixer"]
            assert len(kept) == len(n.attribute) - 1, n.name
            del n.attribute[:]
            n.attribute.extend(kept)
            sharpened = n.input[1] + "/sharpened"
            nodes.append(onnx.helper.make_node("Mul", [n.input[1], "router_sharpen"], [sharpened], name=n.name + "/Sharpen"))
            n.input[1] = sharpened
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    onnx.save(m, str(copy / "model.onnx"))
    return copy


def assert_ort_agrees(config, out, ids):
    """ONNX Runtime's greedy tokens on the built graph equal onnxllm's `ids`; for the sparse mixer,
    which ONNX Runtime's CPU kernel ignores, both run the softmax-routed copy instead."""
    name = config["model_type"]
    if config["model_type"] == "phimoe":
        out = softmax_routed_copy(out)
        ids, _ = onnxllm_greedy(out, PROMPT, STEPS)
    assert ort_greedy_unaliased(out, PROMPT, STEPS)[:len(ids)] == ids, name


def test_fp32_matches_the_numpy_reference(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "fp32")
    genai = json.loads((out / "genai_config.json").read_text())
    # genai's builder writes the architecture up to "For", lowercased ("qwen2moe"); it has no Mixtral
    # type, and Mixtral's attention is Mistral's: "mistral".
    expected_type = {"mixtral": "mistral"}.get(config["model_type"], config["architectures"][0].split("For")[0].lower())
    assert genai["model"]["type"] == expected_type
    assert "MoE" in graph_ops(out)
    ROUTES.clear()
    ids = assert_matches_reference(name, config, tensors, out, ort=False, reference=reference_greedy)
    assert_ort_agrees(config, out, ids)
    if config["model_type"] == "phimoe":
        # The sparse mixer's band must have mattered (some runner-up inside it) and no score may sit
        # so near its edge that float32 and float64 could mask differently.
        assert ROUTES and min(m for m, _ in ROUTES) > 1e-4, min(ROUTES)
        assert sum(wt < 0.99 for _, wt in ROUTES) >= len(ROUTES) // 10, ROUTES


def fused_experts(tensors):
    """`tensors` as transformers 5 saves a MoE checkpoint in its own layout (save_original_format=False,
    and checkpoints of models released since): its conversion_mapping.py stacks each layer's experts,
    gate and up concatenated per expert (mlp.experts.gate_up_proj [E, 2 x inter, hidden]) and down
    alone (mlp.experts.down_proj [E, hidden, inter]), and renames Mixtral's and Phi-3.5-MoE's
    block_sparse_moe.* (w1 gate, w3 up, w2 down) mlp.*."""
    expert = re.compile(r"(model\.layers\.\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)\.weight")
    plain = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}
    out, layers = {}, {}
    for name, a in tensors.items():
        m = expert.fullmatch(name)
        if m:
            layers.setdefault(m[1], {}).setdefault(int(m[2]), {})[plain.get(m[3], m[3])] = a
        else:
            out[name.replace(".block_sparse_moe.", ".mlp.")] = a
    for layer, experts in layers.items():
        ids = sorted(experts)
        assert ids == list(range(len(ids)))
        out[f"{layer}.mlp.experts.gate_up_proj"] = np.stack(
            [np.concatenate([experts[e]["gate_proj"], experts[e]["up_proj"]]) for e in ids])
        out[f"{layer}.mlp.experts.down_proj"] = np.stack([experts[e]["down_proj"] for e in ids])
    return out


def test_transformers5_fused_experts_build_the_same_model(family):
    name, config, tensors, hf = family
    fused = fused_experts(tensors)
    assert not any(".experts.0." in n or "block_sparse_moe" in n for n in fused) and len(fused) < len(tensors)
    folder = hf.parent / "hf-fused"
    write_checkpoint(folder, config, fused)
    out = build(folder, hf.parent / "fp32-fused")
    ROUTES.clear()
    assert_matches_reference(name, config, tensors, out, ort=False, reference=reference_greedy)
    # A stack that cannot hold the experts config.json describes is named with what it holds.
    first = next(n for n in fused if n.endswith("experts.gate_up_proj"))
    fused[first] = fused[first][:, 1:, :]
    broken = hf.parent / "hf-fused-broken"
    write_checkpoint(broken, config, fused)
    message = build_error(broken, hf.parent / "fp32-broken")
    assert f"tensor '{first}'" in message and "to hold" in message, message


def int4_greedy(name, config, tensors, hf, reference):
    """The int4 build of `hf` (experts as QMoE) and its greedy ids; prints how many equal the fp32
    reference's (random models this small have near ties, so int4 may part from it early)."""
    out = build(hf, hf.parent / "int4", "int4", "--accuracy-level", "0")
    assert "QMoE" in graph_ops(out) and "MoE" not in graph_ops(out)
    ids, _ = onnxllm_greedy(out, PROMPT, STEPS)
    assert len(ids) > len(PROMPT) and all(0 <= t < config["vocab_size"] for t in ids)
    expected_ids, _ = reference(config, tensors, PROMPT, STEPS)
    print(f"[{name} int4] {sum(a == b for a, b in zip(ids, expected_ids)) - len(PROMPT)} of {STEPS} tokens equal fp32's")
    return out, ids


def test_int4_runs_like_ort(family):
    name, config, tensors, hf = family
    out, ids = int4_greedy(name, config, tensors, hf, reference_greedy)
    assert_ort_agrees(config, out, ids)


@pytest.mark.parametrize("family,changes,message", [
    ("qwen3_moe", {"num_experts": None}, "missing 'num_experts'"),
    ("qwen3_moe", {"num_experts_per_tok": 9}, "'num_experts_per_tok' is 9, expected 1..4"),
    ("qwen3_moe", {"mlp_only_layers": [5]}, "'mlp_only_layers' entries should be layer indices 0..1"),
    ("phimoe", {"num_experts_per_tok": 1},
     "'num_experts_per_tok' is 1; Phi-3.5-MoE's sparse mixer routes exactly 2 experts"),
    ("phimoe", {"router_jitter_noise": 0.05},
     "'router_jitter_noise' is 0.05; the sparse mixer of com.microsoft MoE uses 0.01"),
    ("phimoe", {"num_local_experts": None}, "missing 'num_local_experts'"),
    ("phimoe", {"hidden_act": "gelu"},
     "activation 'gelu' is not supported for the experts of a mixture-of-experts model"),
    ("mixtral", {"num_local_experts": None}, "missing 'num_local_experts'"),
    ("mixtral", {"num_experts_per_tok": 5}, "'num_experts_per_tok' is 5, expected 1..4"),
    # A checkpoint that disagrees with config.json: the message names Mixtral's fields.
    ("mixtral", {"intermediate_size": 128}, "tensor 'model.layers.0.block_sparse_moe.experts.0.w1.weight' in "
     "model.safetensors has shape [96,64], expected [128,64] from config.json (intermediate_size, hidden_size)"),
    ("mixtral", {"num_local_experts": 5}, "tensor 'model.layers.0.block_sparse_moe.gate.weight' in model.safetensors "
     "has shape [4,64], expected [5,64] from config.json (num_local_experts, hidden_size)"),
])
def test_bad_moe_configs_name_the_field(tmp_path, family, changes, message):
    config = dict(CASES[family])
    config.update(changes)
    config = {k: v for k, v in config.items() if v is not None}
    hf = tmp_path / "hf"
    tensors = TENSORS.get(CASES[family]["model_type"], moe_tensors)
    write_checkpoint(hf, config, tensors(CASES[family]))
    assert message in build_error(hf, tmp_path / "out")

"""gpt-oss (GptOssForCausalLM) against an independent reference: random-weights Hugging Face
checkpoints are written here, with the experts as float tensors and in the MXFP4 form OpenAI ships
(`*_blocks` / `*_scales`), built with `onnxllm build` and run by onnxllm and ONNX Runtime. The
reference is a numpy forward pass written below from transformers' modeling_gpt_oss.py and its
YaRN rotary (modeling_rope_utils._compute_yarn_parameters): learned sinks in every softmax, sliding
and full layers by layer_types, q/k/v/o biases, a router with a bias choosing the top k logits and
weighting them by their softmax, and experts that clamp gate and up before
(up + 1) * gate * sigmoid(1.702 gate).
"""

import json
import math

import numpy as np
import pytest

from test_builder_families import (PROMPT, STEPS, assert_matches_reference, base_config, build, build_error,
                                   greedy_with, rms_norm, rotate_half)
from test_builder_moe import graph_ops, int4_greedy, ort_greedy_unaliased


def gptoss_config(**overrides):
    c = base_config("GptOssForCausalLM", "gpt_oss", hidden_size=64, intermediate_size=32, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=3,
                    layer_types=["sliding_attention", "full_attention"], attention_bias=True, rms_norm_eps=1e-5,
                    swiglu_limit=1.5, rope_theta=150000.0,
                    rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "truncate": False, "original_max_position_embeddings": 4096})
    c.update(overrides)
    return c


def gptoss_tensors(c, seed=0, std=0.1):
    """GptOssForCausalLM's state dict with float experts: gate_up_proj [E, hidden, 2 x inter] (gate
    and up in alternate columns), down_proj [E, inter, hidden], each with a bias."""
    rng = np.random.default_rng(seed)
    d, v, e_n, inter = c["hidden_size"], c["vocab_size"], c["num_local_experts"], c["intermediate_size"]
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def normal(*shape, scale=std):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + normal(d)
        for name, rows, cols in (("q_proj", nh * hd, d), ("k_proj", nkv * hd, d), ("v_proj", nkv * hd, d),
                                 ("o_proj", d, nh * hd)):
            t[p + f"self_attn.{name}.weight"], t[p + f"self_attn.{name}.bias"] = normal(rows, cols), normal(rows)
        t[p + "self_attn.sinks"] = normal(nh, scale=1.0)  # sinks that matter next to logits of about 1
        t[p + "post_attention_layernorm.weight"] = 1 + normal(d)
        t[p + "mlp.router.weight"] = normal(e_n, d) * 10  # routing decisively away from ties
        t[p + "mlp.router.bias"] = normal(e_n)
        # gate/up of about 2, so swiglu_limit 1.5 clamps a good share of them
        t[p + "mlp.experts.gate_up_proj"] = normal(e_n, d, 2 * inter, scale=0.25)
        t[p + "mlp.experts.gate_up_proj_bias"] = normal(e_n, 2 * inter)
        t[p + "mlp.experts.down_proj"] = normal(e_n, inter, d)
        t[p + "mlp.experts.down_proj_bias"] = normal(e_n, d)
    t["model.norm.weight"] = 1 + normal(d)
    t["lm_head.weight"] = normal(v, d)
    return t


# ---- MXFP4 (the OCP microscaling format gpt-oss's experts ship in) ----
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4_quantize(w):
    """w [..., rows, cols] -> (blocks uint8 [..., rows, cols / 32, 16], scales uint8 [..., rows, cols / 32]):
    per block of 32 an E8M0 exponent putting its largest value at most 6, each value the nearest E2M1."""
    blocks_f = w.reshape(*w.shape[:-1], w.shape[-1] // 32, 32).astype(np.float64)
    amax = np.abs(blocks_f).max(-1)
    exp = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), 0).astype(np.int64)
    scaled = blocks_f / np.exp2(exp)[..., None]
    codes = np.abs(scaled[..., None] - E2M1[:8]).argmin(-1) + 8 * (scaled < 0)  # 8..15: negative
    codes = codes.astype(np.uint8)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed, (exp + 127).astype(np.uint8)


def mxfp4_dequantize(blocks, scales):
    lo, hi = E2M1[blocks & 0x0F], E2M1[blocks >> 4]
    values = np.stack([lo, hi], -1).reshape(*blocks.shape[:-1], 32)
    values = values * np.exp2(scales.astype(np.float64) - 127)[..., None]
    return values.reshape(*values.shape[:-2], -1).astype(np.float32)


def mxfp4_checkpoint(t):
    """The state dict as OpenAI ships it: each expert matrix as `_blocks` / `_scales` of its
    [E, out, in] transpose; and the float state dict holding exactly the dequantized values."""
    stored, exact = {}, dict(t)
    for name, a in t.items():
        if name.endswith(("gate_up_proj", "down_proj")):
            blocks, scales = mxfp4_quantize(a.transpose(0, 2, 1))
            stored[name + "_blocks"], stored[name + "_scales"] = blocks, scales
            exact[name] = mxfp4_dequantize(blocks, scales).transpose(0, 2, 1).copy()
        else:
            stored[name] = a
    return stored, exact


def write_mixed_checkpoint(folder, config, tensors):
    """config.json and a model.safetensors with F32 and U8 tensors."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    header, offset, data = {"__metadata__": {"format": "pt"}}, 0, []
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype=np.uint8 if a.dtype == np.uint8 else "<f4").tobytes()
        header[name] = {"dtype": "U8" if a.dtype == np.uint8 else "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data.append(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for raw in data:
            f.write(raw)


# ---- the reference ----
def yarn(c):
    """transformers' _compute_yarn_parameters: (inv_freq [head_dim / 2], attention_factor)."""
    r, dim, base = c["rope_scaling"], c["head_dim"], c["rope_theta"]
    factor, original = r["factor"], r["original_max_position_embeddings"]
    attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

    def correction_dim(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(r["beta_fast"]), correction_dim(r["beta_slow"])
    if r.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extrapolation = 1 - ramp
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation
    return inv_freq, attention_factor


def gptoss_forward(c, t, ids):
    """Logits [len(ids), vocab] of GptOssForCausalLM (no cache), in float64."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    eps, s, limit = c["rms_norm_eps"], len(ids), c["swiglu_limit"]
    inv_freq, attention_factor = yarn(c)
    freqs = np.arange(s, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], -1)
    cos, sin = np.cos(emb) * attention_factor, np.sin(emb) * attention_factor

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def attend(q, k, v, sinks, window):  # eager_attention_forward with its sink column
        k, v = np.repeat(k, nh // nkv, axis=0), np.repeat(v, nh // nkv, axis=0)
        mask = np.triu(np.full((s, s), -np.inf), k=1)
        if window:
            mask += np.tril(np.full((s, s), -np.inf), k=-window)
        logits = q @ k.transpose(0, 2, 1) * hd ** -0.5 + mask
        combined = np.concatenate([logits, np.broadcast_to(sinks[:, None, None], (nh, s, 1))], -1)
        probs = np.exp(combined - combined.max(-1, keepdims=True))
        probs = (probs / probs.sum(-1, keepdims=True))[..., :-1]
        return (probs @ v).transpose(1, 0, 2).reshape(s, nh * hd)

    def experts(x, p):  # GptOssTopKRouter + GptOssExperts
        logits = linear(x, p + "router")
        out = np.zeros_like(x)
        for r in range(s):
            top = np.argsort(-logits[r], kind="stable")[:c["num_experts_per_tok"]]
            weights = np.exp(logits[r, top] - logits[r, top].max())
            weights /= weights.sum()
            for e, wt in zip(top, weights):
                gate_up = x[r] @ w[p + "experts.gate_up_proj"][e] + w[p + "experts.gate_up_proj_bias"][e]
                gate, up = np.minimum(gate_up[0::2], limit), np.clip(gate_up[1::2], -limit, limit)
                glu = gate / (1.0 + np.exp(-gate * 1.702))
                y = ((up + 1) * glu) @ w[p + "experts.down_proj"][e] + w[p + "experts.down_proj_bias"][e]
                out[r] += wt * y
        return out

    # GptOssConfig's default: sliding, full, sliding, ...
    layer_types = c.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                           for i in range(c["num_hidden_layers"])]
    h = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)

        def heads(name, n):
            return linear(x, p + "self_attn." + name).reshape(s, n, hd).transpose(1, 0, 2)

        q, k, v = heads("q_proj", nh), heads("k_proj", nkv), heads("v_proj", nkv)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        window = c["sliding_window"] if layer_types[i] == "sliding_attention" else None
        h = h + linear(attend(q, k, v, w[p + "self_attn.sinks"], window), p + "self_attn.o_proj")
        h = h + experts(rms_norm(h, w[p + "post_attention_layernorm.weight"], eps), p + "mlp.")
    return rms_norm(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def reference_greedy(c, t, prompt, steps):
    return greedy_with(gptoss_forward, c, t, prompt, steps)


CASES = {
    "float": gptoss_config(),
    # No layer_types: GptOssConfig alternates, sliding first.
    "default_layers": gptoss_config(layer_types=None, num_hidden_layers=3),
}


@pytest.fixture(scope="module", params=sorted(CASES) + ["mxfp4"])
def family(request, tmp_path_factory):
    """(name, config, float tensors the reference reads, the checkpoint folder)."""
    config = CASES.get(request.param, CASES["float"])
    config = {k: v for k, v in config.items() if v is not None}
    tensors = gptoss_tensors(config, seed=len(request.param))
    stored = tensors
    if request.param == "mxfp4":  # as OpenAI's config.json says it
        stored, tensors = mxfp4_checkpoint(tensors)
        config = dict(config, quantization_config={
            "quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                       "lm_head"]})
    hf = tmp_path_factory.mktemp(request.param) / "hf"
    write_mixed_checkpoint(hf, config, stored)
    return request.param, config, tensors, hf


def test_fp32_matches_the_numpy_reference(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "fp32")
    genai = json.loads((out / "genai_config.json").read_text())
    assert genai["model"]["type"] == "gptoss"
    assert "MoE" in graph_ops(out)
    if name == "mxfp4":  # the experts could only have been read from their blocks
        raw = (hf / "model.safetensors").read_bytes()
        names = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
        assert "model.layers.0.mlp.experts.down_proj_blocks" in names
        assert "model.layers.0.mlp.experts.down_proj" not in names
    ids = assert_matches_reference(name, config, tensors, out, ort=False, reference=reference_greedy)
    assert ort_greedy_unaliased(out, PROMPT, STEPS)[:len(ids)] == ids, name


def test_reference_needs_sinks_clamp_and_window():
    """The reference's features change its tokens, so matching it tests them."""
    config, tensors = CASES["float"], gptoss_tensors(CASES["float"], seed=len("float"))
    base, _ = reference_greedy(config, tensors, PROMPT, STEPS)
    no_sinks = dict(tensors)
    for i in range(config["num_hidden_layers"]):
        no_sinks[f"model.layers.{i}.self_attn.sinks"] = np.full(config["num_attention_heads"], -1e4, np.float32)
    for changed_config, changed_tensors in ((config, no_sinks), (dict(config, swiglu_limit=100.0), tensors),
                                            (dict(config, sliding_window=64), tensors)):
        assert reference_greedy(changed_config, changed_tensors, PROMPT, STEPS)[0] != base


def test_int4_runs_like_ort(family):
    name, config, tensors, hf = family
    out, ids = int4_greedy(name, config, tensors, hf, reference_greedy)
    assert ort_greedy_unaliased(out, PROMPT, STEPS)[:len(ids)] == ids, name


@pytest.mark.parametrize("change,message", [
    ("blocks_dtype", "tensor 'model.layers.0.mlp.experts.down_proj_blocks' in model.safetensors has dtype F32; "
                     "MXFP4 blocks and scales are U8"),
    ("scales_shape", "tensor 'model.layers.0.mlp.experts.gate_up_proj_scales' in model.safetensors has shape "
                     "[4,64,1], expected [4,64,2] (MXFP4 of [4,64,64]"),
    ("no_sinks", "the checkpoint has no tensor 'model.layers.0.self_attn.sinks' (expected [4] from config.json "
                 "(num_attention_heads))"),
    ("swiglu_limit", "'swiglu_limit' should be positive"),
])
def test_bad_checkpoints_name_the_tensor(tmp_path, change, message):
    config = {k: v for k, v in CASES["float"].items() if v is not None}
    stored, _ = mxfp4_checkpoint(gptoss_tensors(config))
    if change == "blocks_dtype":
        name = "model.layers.0.mlp.experts.down_proj_blocks"
        stored[name] = stored[name].astype(np.float32)
    elif change == "scales_shape":
        name = "model.layers.0.mlp.experts.gate_up_proj_scales"
        stored[name] = stored[name][..., :1].copy()
    elif change == "no_sinks":
        del stored["model.layers.0.self_attn.sinks"]
    else:
        config["swiglu_limit"] = -1.0
    write_mixed_checkpoint(tmp_path / "hf", config, stored)
    assert message in build_error(tmp_path / "hf", tmp_path / "out")


def test_mxfp4_quantization_config_is_gpt_oss_only(tmp_path):
    config = base_config("LlamaForCausalLM", "llama", hidden_size=64, intermediate_size=96,
                         quantization_config={"quant_method": "mxfp4"})
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    assert ("quantization_config.quant_method 'mxfp4' is read only for gpt-oss's experts, not for LlamaForCausalLM"
            in build_error(tmp_path / "hf", tmp_path / "out"))

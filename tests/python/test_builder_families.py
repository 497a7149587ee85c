"""Builder families against an independent reference: for each family a random-weights Hugging Face
checkpoint is written here (config.json + model.safetensors), built with `onnxllm build`, and run by
onnxllm (the Python package) and ONNX Runtime (the oracle, tests/unit/builder/ort_greedy.js). The
reference is a numpy forward pass written below from transformers' modeling code (modeling_phi.py),
not from the builder: fp32 logits must match it within tolerance at every step and the greedy tokens
exactly; ONNX Runtime must give the same greedy tokens on the built graph; int4 builds must run.
"""

import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import CLI, SHARED_DIR, SOURCE_DIR, run_python, tutorial_source

sys.path.insert(0, str(SOURCE_DIR / "benchmarks"))
from make_model import safetensors_header  # noqa: E402  (the repository's safetensors writer)

import onnxllm as og  # noqa: E402

ORACLE_DIR = pathlib.Path(os.environ.get("ONNXLLM_ORACLE_DIR", SOURCE_DIR / "build/oracle"))
ORT_GREEDY = SOURCE_DIR / "tests/unit/builder/ort_greedy.js"
PROMPT = [1, 17, 42, 99, 5]
STEPS = 16


# ---- checkpoints ----

def write_checkpoint(folder, config, tensors):
    """config.json and one F32 model.safetensors holding `tensors` (name -> array) in order."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    shapes = [(name, a.shape) for name, a in tensors.items()]
    header, _ = safetensors_header(shapes)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def phi_config(**overrides):
    """A tiny config with Phi-2's fields (microsoft/phi-2's config.json, smaller sizes)."""
    c = {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": 160, "intermediate_size": 640,
         "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 256,
         "max_position_embeddings": 128, "partial_rotary_factor": 0.4, "rope_theta": 10000.0,
         "layer_norm_eps": 1e-5, "hidden_act": "gelu_new", "qk_layernorm": False, "tie_word_embeddings": False,
         "resid_pdrop": 0.1, "embd_pdrop": 0.0, "attention_dropout": 0.0, "initializer_range": 0.02,
         "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32", "use_cache": True}
    c.update(overrides)
    return c


def phi_tensors(c, seed=0, std=0.1):
    """Random weights named and shaped as transformers' PhiForCausalLM state dict."""
    rng = np.random.default_rng(seed)
    d, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
        t[p + "input_layernorm.bias"] = normal(d)
        for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            t[p + f"self_attn.{name}.weight"] = normal(rows, d)
            t[p + f"self_attn.{name}.bias"] = normal(rows)
        t[p + "self_attn.dense.weight"] = normal(d, q)
        t[p + "self_attn.dense.bias"] = normal(d)
        t[p + "mlp.fc1.weight"] = normal(inter, d)
        t[p + "mlp.fc1.bias"] = normal(inter)
        t[p + "mlp.fc2.weight"] = normal(d, inter)
        t[p + "mlp.fc2.bias"] = normal(d)
    t["model.final_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
    t["model.final_layernorm.bias"] = normal(d)
    t["lm_head.weight"] = normal(v, d)
    t["lm_head.bias"] = normal(v)
    return t


# ---- the numpy reference (transformers' modeling_phi.py, in float64) ----

def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def phi_forward(c, t, ids):
    """Logits [len(ids), vocab] of PhiForCausalLM over the whole sequence (no cache)."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c["hidden_size"] // nh
    rot = int(hd * c["partial_rotary_factor"])
    eps = c["layer_norm_eps"]
    s = len(ids)
    inv_freq = 1.0 / (c["rope_theta"] ** (np.arange(0, rot, 2, dtype=np.float64) / rot))
    freqs = np.arange(s, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rope(x):  # [heads, s, hd]: rotary on the first `rot` dims of each head, the rest passes
        x_rot, x_pass = x[..., :rot], x[..., rot:]
        return np.concatenate([x_rot * cos + rotate_half(x_rot) * sin, x_pass], axis=-1)

    causal = np.triu(np.full((s, s), -np.inf), k=1)
    h = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = layer_norm(h, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)

        def proj(name, heads):
            y = x @ w[p + f"self_attn.{name}.weight"].T + w[p + f"self_attn.{name}.bias"]
            return y.reshape(s, heads, hd).transpose(1, 0, 2)

        q, k, v = rope(proj("q_proj", nh)), rope(proj("k_proj", nkv)), proj("v_proj", nkv)
        k, v = np.repeat(k, nh // nkv, axis=0), np.repeat(v, nh // nkv, axis=0)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + causal
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attn = (scores / scores.sum(-1, keepdims=True)) @ v
        attn = attn.transpose(1, 0, 2).reshape(s, nh * hd)
        attn = attn @ w[p + "self_attn.dense.weight"].T + w[p + "self_attn.dense.bias"]
        mlp = gelu_new(x @ w[p + "mlp.fc1.weight"].T + w[p + "mlp.fc1.bias"])
        mlp = mlp @ w[p + "mlp.fc2.weight"].T + w[p + "mlp.fc2.bias"]
        h = h + attn + mlp  # attention and MLP in parallel on the same normed input
    h = layer_norm(h, w["model.final_layernorm.weight"], w["model.final_layernorm.bias"], eps)
    return h @ w["lm_head.weight"].T + w["lm_head.bias"]


def greedy_with(forward, c, t, prompt, steps):
    """prompt + up to `steps` greedy tokens of forward(c, t, ids) -> logits (ending after EOS, as
    generation does), and the logits each token was chosen from."""
    ids, all_logits = list(prompt), []
    for _ in range(steps):
        logits = forward(c, t, ids)[-1]
        all_logits.append(logits)
        ids.append(int(np.argmax(logits)))
        if ids[-1] == c["eos_token_id"]:
            break
    return ids, all_logits


def reference_greedy(c, t, prompt, steps):
    forward = {"phi": phi_forward, "internlm2": internlm2_forward, "chatglm": chatglm_forward}.get(
        c["model_type"], decoder_forward)
    return greedy_with(forward, c, t, prompt, steps)


# ---- Llama-derived families (transformers' modeling_granite.py, ...), in float64 ----

def base_config(architecture, model_type, **overrides):
    c = {"architectures": [architecture], "model_type": model_type, "hidden_size": 128, "intermediate_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
         "max_position_embeddings": 128, "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
         "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False, "initializer_range": 0.02,
         "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    c.update(overrides)
    return c


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def decoder_tensors(c, seed=0, std=0.1):
    """Random weights named and shaped as the family's transformers state dict."""
    rng = np.random.default_rng(seed)
    kind = c["model_type"]
    d, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = head_dim(c)
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm(t, name, size=d):
        if kind == "nemotron":  # LayerNorm1P: weight stored as w (scale 1 + w), with a bias
            t[name + ".weight"] = normal(size)
            t[name + ".bias"] = normal(size)
        elif kind != "olmo":  # OlmoLayerNorm has no parameters
            t[name + ".weight"] = (1 + normal(size)).astype(np.float32)

    t = {"model.embed_tokens.weight": normal(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        if kind not in ("olmo2", "olmo3"):  # OLMo 2 (and 3) norms the attention and MLP outputs instead
            norm(t, p + "input_layernorm")
        for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            t[p + f"self_attn.{name}.weight"] = normal(rows, d)
            if c.get("attention_bias"):
                t[p + f"self_attn.{name}.bias"] = normal(rows)
        t[p + "self_attn.o_proj.weight"] = normal(d, q)
        if c.get("attention_bias"):
            t[p + "self_attn.o_proj.bias"] = normal(d)
        if kind in ("olmo2", "olmo3"):
            norm(t, p + "self_attn.q_norm", q)
            norm(t, p + "self_attn.k_norm", kv)
            norm(t, p + "post_feedforward_layernorm")
        norm(t, p + "post_attention_layernorm")
        mlp = (("up_proj", (inter, d)), ("down_proj", (d, inter)))
        if kind != "nemotron":  # Nemotron's MLP has no gate
            mlp = (("gate_proj", (inter, d)),) + mlp
        for name, shape in mlp:
            t[p + f"mlp.{name}.weight"] = normal(*shape)
            if c.get("mlp_bias"):
                t[p + f"mlp.{name}.bias"] = normal(shape[0])
    norm(t, "model.norm")
    if not c["tie_word_embeddings"]:
        t["lm_head.weight"] = normal(v, d)
    return t


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def attend(q, k, v, scale, window=None):
    """Causal attention of q [nh, s, hd] over k, v [nkv, s, hd] (grouped heads) -> [s, nh * hd];
    with a window, query i sees keys i - window < j <= i."""
    nh, s, hd = q.shape
    k, v = np.repeat(k, nh // k.shape[0], axis=0), np.repeat(v, nh // v.shape[0], axis=0)
    mask = np.triu(np.full((s, s), -np.inf), k=1)
    if window:
        mask += np.tril(np.full((s, s), -np.inf), k=-window)
    scores = q @ k.transpose(0, 2, 1) * scale + mask
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    return ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(s, nh * hd)


def rope(x, rot, theta, interleaved=False):
    """Rotary on the first `rot` dims of each head of x [heads, s, hd]: rotate_half over the two
    halves, or (interleaved, modeling_ernie4_5.py) over (even, odd) pairs."""
    s = x.shape[1]
    inv_freq = 1.0 / (theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot))
    freqs = np.arange(s, dtype=np.float64)[:, None] * inv_freq[None, :]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if interleaved:
        emb = np.repeat(freqs, 2, axis=-1)
        rotated = np.stack([-x_rot[..., 1::2], x_rot[..., 0::2]], axis=-1).reshape(x_rot.shape)
    else:
        emb = np.concatenate([freqs, freqs], axis=-1)
        rotated = rotate_half(x_rot)
    return np.concatenate([x_rot * np.cos(emb) + rotated * np.sin(emb), x_pass], axis=-1)


def decoder_forward(c, t, ids):
    """Logits [len(ids), vocab] over the whole sequence (no cache), per the family's modeling file."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    kind = c["model_type"]
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], head_dim(c)
    s = len(ids)
    granite = kind == "granite"  # modeling_granite.py: four multipliers on a Llama layer

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def norm(x, name):
        if kind == "olmo":  # modeling_olmo.py OlmoLayerNorm: F.layer_norm without weight or bias, eps 1e-5
            return layer_norm(x, 1.0, 0.0, 1e-5)
        if kind == "nemotron":  # modeling_nemotron.py NemotronLayerNorm1P: F.layer_norm(x, w + 1, b, norm_eps)
            return layer_norm(x, w[name + ".weight"] + 1, w[name + ".bias"], c["norm_eps"])
        return rms_norm(x, w[name + ".weight"], c["rms_norm_eps"])

    h = w["model.embed_tokens.weight"][ids] * (c.get("embedding_multiplier", 1.0) if granite else 1.0)
    residual_scale = c.get("residual_multiplier", 1.0) if granite else 1.0
    scale = c.get("attention_multiplier", 1.0) if granite else 1.0 / math.sqrt(hd)
    layers = c["num_hidden_layers"]
    rot = int(hd * c.get("partial_rotary_factor", 1.0))  # Nemotron: rotary on the first `rot` dims
    use_rope, window = [True] * layers, [None] * layers
    if kind == "smollm3":  # configuration_smollm3.py: NoPE layers, sliding attention only on them
        use_rope = c.get("no_rope_layers") or [(i + 1) % c.get("no_rope_layer_interval", 4) != 0 for i in range(layers)]
        use_rope = [bool(r) for r in use_rope]
        if c.get("use_sliding_window") and c.get("sliding_window"):
            window = [None if r else c["sliding_window"] for r in use_rope]
    olmo2_layer = kind in ("olmo2", "olmo3")  # modeling_olmo3.py: OLMo 2's layer ...
    if kind == "olmo3":  # ... with sliding attention on the layers layer_types names
        window = [c["sliding_window"] if t == "sliding_attention" else None for t in c["layer_types"]]
    for i in range(layers):
        p = f"model.layers.{i}."
        x = h if olmo2_layer else norm(h, p + "input_layernorm")

        def project(name):
            y = linear(x, p + "self_attn." + name)
            if kind == "olmo" and c.get("clip_qkv"):  # modeling_olmo.py clamps q, k and v
                y = np.clip(y, -c["clip_qkv"], c["clip_qkv"])
            if olmo2_layer and name != "v_proj":  # modeling_olmo2.py: q_norm / k_norm over the projection
                y = norm(y, p + "self_attn." + name[0] + "_norm")
            return y

        def heads(name, n):
            return project(name).reshape(s, n, hd).transpose(1, 0, 2)

        q, k, v = heads("q_proj", nh), heads("k_proj", nkv), heads("v_proj", nkv)
        if use_rope[i]:
            interleaved = kind == "ernie4_5"
            q, k = rope(q, rot, c["rope_theta"], interleaved), rope(k, rot, c["rope_theta"], interleaved)
        attn = linear(attend(q, k, v, scale, window[i]), p + "self_attn.o_proj")
        if olmo2_layer:  # post-norm: h + norm(attn(h)), then h + norm(mlp(h))
            h = h + norm(attn, p + "post_attention_layernorm")
            x = h
        else:
            h = h + attn * residual_scale
            x = norm(h, p + "post_attention_layernorm")
        if kind == "nemotron":  # NemotronMLP: down(relu(up(x)) ** 2)
            mlp = linear(np.maximum(linear(x, p + "mlp.up_proj"), 0.0) ** 2, p + "mlp.down_proj")
        else:
            mlp = linear(silu(linear(x, p + "mlp.gate_proj")) * linear(x, p + "mlp.up_proj"), p + "mlp.down_proj")
        if olmo2_layer:
            mlp = norm(mlp, p + "post_feedforward_layernorm")
        h = h + mlp * residual_scale
    h = norm(h, "model.norm")
    lm = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    logits = h @ lm.T
    return logits / c.get("logits_scaling", 1.0) if granite else logits


# InternLM2 (remote code modeling_internlm2.py) names its tensors differently and packs q/k/v per
# KV head: wqkv rows are, for each KV head, its query heads, then its key, then its value.
INTERNLM2_NAMES = {"model.embed_tokens": "model.tok_embeddings", "self_attn.o_proj": "attention.wo",
                   "input_layernorm": "attention_norm", "post_attention_layernorm": "ffn_norm",
                   "mlp.gate_proj": "feed_forward.w1", "mlp.up_proj": "feed_forward.w3",
                   "mlp.down_proj": "feed_forward.w2", "lm_head": "output"}


def internlm2_tensors(c, seed=0):
    t = decoder_tensors(dict(c, attention_bias=c.get("bias", True)), seed)
    nkv, hd = c["num_key_value_heads"], head_dim(c)
    group = c["num_attention_heads"] // nkv
    out = {}
    for name, value in t.items():
        for llama, intern in INTERNLM2_NAMES.items():
            name = name.replace(llama, intern)
        if ".self_attn.q_proj." in name:
            kind = name.rsplit(".", 1)[1]
            base = name.split(".self_attn.")[0]
            q = value.reshape(nkv, group, hd, -1)
            k = t[name.replace("q_proj", "k_proj")].reshape(nkv, 1, hd, -1)
            v = t[name.replace("q_proj", "v_proj")].reshape(nkv, 1, hd, -1)
            packed = np.concatenate([q, k, v], axis=1).reshape(nkv * (group + 2) * hd, -1)
            out[f"{base}.attention.wqkv.{kind}"] = packed.reshape(-1) if kind == "bias" else packed
        elif ".self_attn.k_proj." not in name and ".self_attn.v_proj." not in name:
            out[name] = value
    return out


def internlm2_forward(c, t, ids):
    """modeling_internlm2.py: qkv = wqkv(x) viewed as (kv head, group + 2, head dim); the query
    heads are [:group], the key [-2], the value [-1]. Otherwise a Llama layer."""
    nkv, hd = c["num_key_value_heads"], head_dim(c)
    group = c["num_attention_heads"] // nkv
    llama = {}
    for name, value in t.items():
        if ".attention.wqkv." in name:
            base, kind = name.split(".attention.wqkv.")
            qkv = value.reshape(nkv, group + 2, hd, -1)
            for proj, rows in (("q_proj", qkv[:, :group]), ("k_proj", qkv[:, -2]), ("v_proj", qkv[:, -1])):
                rows = rows.reshape(-1, qkv.shape[-1])
                llama[f"{base}.self_attn.{proj}.{kind}"] = rows.reshape(-1) if kind == "bias" else rows
            continue
        for hf, intern in INTERNLM2_NAMES.items():
            name = name.replace(intern, hf)
        llama[name] = value
    return decoder_forward(dict(c, model_type="llama"), llama, ids)


# ChatGLM 2/3, GLM-4 (remote code modeling_chatglm.py): its own config keys and tensor names.

def chatglm_config(**overrides):
    c = {"architectures": ["ChatGLMForConditionalGeneration"], "model_type": "chatglm", "hidden_size": 128,
         "ffn_hidden_size": 256, "num_layers": 2, "num_attention_heads": 4, "multi_query_attention": True,
         "multi_query_group_num": 2, "kv_channels": 32, "padded_vocab_size": 256, "seq_length": 128,
         "layernorm_epsilon": 1e-5, "rmsnorm": True, "apply_residual_connection_post_layernorm": False,
         "post_layer_norm": True, "add_bias_linear": False, "add_qkv_bias": True, "original_rope": True,
         "rope_ratio": 1, "eos_token_id": 2, "pad_token_id": 0, "torch_dtype": "float32"}
    c.update(overrides)
    return c


def chatglm_heads(c):
    return c["num_attention_heads"], (c["multi_query_group_num"] if c["multi_query_attention"]
                                      else c["num_attention_heads"]), c["kv_channels"]


def chatglm_tensors(c, seed=0, std=0.1):
    rng = np.random.default_rng(seed)
    d, ffn, v = c["hidden_size"], c["ffn_hidden_size"], c["padded_vocab_size"]
    nh, groups, hd = chatglm_heads(c)
    qkv = (nh + 2 * groups) * hd

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    t = {"transformer.embedding.word_embeddings.weight": normal(v, d)}
    for i in range(c["num_layers"]):
        p = f"transformer.encoder.layers.{i}."
        t[p + "input_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
        t[p + "self_attention.query_key_value.weight"] = normal(qkv, d)
        if c["add_qkv_bias"]:
            t[p + "self_attention.query_key_value.bias"] = normal(qkv)
        t[p + "self_attention.dense.weight"] = normal(d, nh * hd)
        t[p + "post_attention_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
        t[p + "mlp.dense_h_to_4h.weight"] = normal(2 * ffn, d)
        t[p + "mlp.dense_4h_to_h.weight"] = normal(d, ffn)
        if c["add_bias_linear"]:
            t[p + "self_attention.dense.bias"] = normal(d)
            t[p + "mlp.dense_h_to_4h.bias"] = normal(2 * ffn)
            t[p + "mlp.dense_4h_to_h.bias"] = normal(d)
    t["transformer.encoder.final_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
    t["transformer.output_layer.weight"] = normal(v, d)
    t["transformer.rotary_pos_emb.inv_freq"] = np.zeros(hd // 4, dtype=np.float32)  # a buffer checkpoints carry
    return t


def chatglm_forward(c, t, ids):
    """modeling_chatglm.py: a pre-norm RMSNorm block; query_key_value splits into Q (heads x kv_channels)
    then K and V (multi_query_group_num x kv_channels); rotary on the first half of each head in
    (even, odd) pairs with base 10000 * rope_ratio; dense_h_to_4h chunks into gate and up (swiglu)."""
    w = {k: v.astype(np.float64) for k, v in t.items()}
    nh, groups, hd = chatglm_heads(c)
    s, eps = len(ids), c["layernorm_epsilon"]
    theta = 10000.0 * c.get("rope_ratio", 1)

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    h = w["transformer.embedding.word_embeddings.weight"][ids]
    for i in range(c["num_layers"]):
        p = f"transformer.encoder.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        qkv = linear(x, p + "self_attention.query_key_value")
        q, k, v = np.split(qkv, [nh * hd, (nh + groups) * hd], axis=-1)
        q, k, v = (y.reshape(s, -1, hd).transpose(1, 0, 2) for y in (q, k, v))
        q, k = rope(q, hd // 2, theta, interleaved=True), rope(k, hd // 2, theta, interleaved=True)
        h = h + linear(attend(q, k, v, 1.0 / math.sqrt(hd)), p + "self_attention.dense")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = np.split(linear(x, p + "mlp.dense_h_to_4h"), 2, axis=-1)
        h = h + linear(silu(gate) * up, p + "mlp.dense_4h_to_h")
    h = rms_norm(h, w["transformer.encoder.final_layernorm.weight"], eps)
    return h @ w["transformer.output_layer.weight"].T


# ---- running built folders ----

def build(hf_dir, out, precision="fp32", *extra):
    subprocess.run([str(CLI), "build", "-i", hf_dir, "-o", out, "-p", precision, "-q", "--overwrite", *extra],
                   check=True, capture_output=True, text=True)
    config_path = out / "genai_config.json"
    config = json.loads(config_path.read_text())
    config["model"]["decoder"].setdefault("session_options", {})["intra_op_num_threads"] = 1
    config_path.write_text(json.dumps(config, indent=2))
    return out


def onnxllm_greedy(model_dir, prompt, steps):
    """prompt + `steps` greedy tokens from the onnxllm package, with the logits of each step."""
    model = og.Model(str(model_dir))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + steps, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    ids, all_logits = list(prompt), []
    while not generator.is_done():
        all_logits.append(np.array(generator.get_logits(), dtype=np.float32).reshape(-1))
        generator.generate_next_token()
        ids.append(int(generator.get_next_tokens()[0]))
    return ids, all_logits


def ort_greedy(model_dir, prompt, steps):
    if not (ORACLE_DIR / "node_modules/onnxruntime-node/package.json").exists():
        pytest.skip(f"onnxruntime-node is not installed in {ORACLE_DIR} (run scripts/setup_oracle.sh)")
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    r = subprocess.run(["node", str(ORT_GREEDY), str(ORACLE_DIR), str(model_dir), str(steps),
                        ",".join(map(str, prompt)), "--threads", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return [int(x) for x in r.stdout.strip().split(",")]


def assert_matches_reference(name, config, tensors, out, ort=None, reference=None, min_steps=8):
    """The built model in `out` against the numpy reference over `tensors`: logits at every step
    within 2e-4 of the largest, the same greedy tokens, and ONNX Runtime's greedy tokens equal too
    (`ort`: ort_greedy or a variant, False where ONNX Runtime computes something else and the
    caller compares with it its own way; `reference`: reference_greedy or another family's)."""
    expected_ids, expected_logits = (reference or reference_greedy)(config, tensors, PROMPT, STEPS)
    assert len(expected_ids) >= len(PROMPT) + min_steps, f"{name}: EOS after {len(expected_ids) - len(PROMPT)} tokens"
    ids, logits = onnxllm_greedy(out, PROMPT, STEPS)
    assert len(logits) == len(expected_logits), (ids, expected_ids)
    for step, (got, want) in enumerate(zip(logits, expected_logits)):
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got - want).max())
        assert err <= 2e-4 * scale, f"{name} step {step}: max |logit error| {err} (logits up to {scale})"
    assert ids == expected_ids, name
    # ort_greedy.js does not stop at EOS: its first tokens are the ones to compare.
    if ort is not False:
        assert (ort or ort_greedy)(out, PROMPT, STEPS)[:len(expected_ids)] == expected_ids, name
    return expected_ids


def build_error(hf_dir, out, *args):
    r = subprocess.run([str(CLI), "build", "-i", hf_dir, "-o", out, "-q", *args], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert not out.exists()
    return r.stderr


# ---- each family: fp32 against the reference, int4 against ONNX Runtime ----

CASES = {
    # Phi (PhiForCausalLM: Phi-1.5, Phi-2). Phi-2's head geometry: head size 80, rotary on 32 dims.
    "phi2": phi_config(),
    "phi_gqa": phi_config(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2,
                          partial_rotary_factor=0.5),
    # Granite (GraniteForCausalLM): granite-3.x's multipliers, shape scaled down.
    "granite": base_config("GraniteForCausalLM", "granite", embedding_multiplier=12.0, residual_multiplier=0.22,
                           attention_multiplier=0.015625, logits_scaling=8.0, rms_norm_eps=1e-5),
    "granite_tied_bias": base_config("GraniteForCausalLM", "granite", embedding_multiplier=4.0,
                                     residual_multiplier=0.5, attention_multiplier=0.1, logits_scaling=0.5,
                                     tie_word_embeddings=True, attention_bias=True, mlp_bias=True),
    # OLMo (OlmoForCausalLM): parameter-free LayerNorm, q/k/v clamped (OLMo-7B-0424's clip_qkv 8, here 0.2
    # so that the clamp bites on these weights), tied embeddings as in OLMo-1B-hf.
    "olmo": base_config("OlmoForCausalLM", "olmo", clip_qkv=0.2, tie_word_embeddings=True),
    "olmo_noclip": base_config("OlmoForCausalLM", "olmo", clip_qkv=None),
    # OLMo 2 (Olmo2ForCausalLM): output norms only, q/k norms over the whole projection.
    "olmo2": base_config("Olmo2ForCausalLM", "olmo2", rms_norm_eps=1e-6),
    # OLMo 3 (Olmo3ForCausalLM): OLMo 2's layer, sliding attention (a window shorter than the
    # prompt and the generated tokens) on the layers layer_types names.
    "olmo3": base_config("Olmo3ForCausalLM", "olmo3", num_hidden_layers=4, sliding_window=4,
                         layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"]),
    # SmolLM3 (SmolLM3ForCausalLM): every 4th layer without rotary (NoPE), tied embeddings ...
    "smollm3": base_config("SmolLM3ForCausalLM", "smollm3", num_hidden_layers=4, tie_word_embeddings=True,
                           rope_theta=5000000.0),
    # ... or as no_rope_layers lists them, with sliding-window attention on the NoPE layers.
    "smollm3_window": base_config("SmolLM3ForCausalLM", "smollm3", num_hidden_layers=4, no_rope_layers=[1, 0, 1, 0],
                                  use_sliding_window=True, sliding_window=3),
    # Nemotron (NemotronForCausalLM, Minitron-4B's layout): LayerNorm1P, relu^2 MLP, rotary on half of each head.
    "nemotron": base_config("NemotronForCausalLM", "nemotron", hidden_act="relu2", partial_rotary_factor=0.5,
                            norm_eps=1e-5, head_dim=64, num_attention_heads=4, num_key_value_heads=2),
    "nemotron_bias": base_config("NemotronForCausalLM", "nemotron", hidden_act="relu2", partial_rotary_factor=0.25,
                                 norm_eps=1e-5, num_attention_heads=2, num_key_value_heads=1, attention_bias=True,
                                 mlp_bias=True),
    # InternLM2 (InternLM2ForCausalLM): wqkv packed per KV head, `bias` on wqkv and wo.
    "internlm2": base_config("InternLM2ForCausalLM", "internlm2", bias=False, rope_theta=1000000.0,
                             rope_scaling={"type": "dynamic", "factor": 2.0}),  # InternLM2.5 ships dynamic NTK
    "internlm2_bias": base_config("InternLM2ForCausalLM", "internlm2", bias=True, num_attention_heads=8,
                                  num_key_value_heads=2),
    # ERNIE 4.5 (Ernie4_5ForCausalLM, the 0.3B's layout): interleaved rotary, tied embeddings, use_bias.
    "ernie4_5": base_config("Ernie4_5ForCausalLM", "ernie4_5", use_bias=False, tie_word_embeddings=True,
                            rope_theta=500000.0, head_dim=64, rms_norm_eps=1e-5),
    "ernie4_5_bias": base_config("Ernie4_5ForCausalLM", "ernie4_5", use_bias=True),
    # ChatGLM 3 / GLM-4 (ChatGLMForConditionalGeneration): multi-query groups, qkv bias, rope_ratio as GLM-4 ...
    "chatglm": chatglm_config(rope_ratio=500),
    # ... and every head its own KV (multi_query_attention false), add_bias_linear, head size 64.
    "chatglm_mha": chatglm_config(multi_query_attention=False, add_bias_linear=True, add_qkv_bias=False,
                                  num_attention_heads=2, kv_channels=64),
}


def tensors_for(config, seed):
    if config["model_type"] == "ernie4_5":  # use_bias switches every projection's bias
        return decoder_tensors(dict(config, attention_bias=config["use_bias"], mlp_bias=config["use_bias"]), seed)
    return {"phi": phi_tensors, "internlm2": internlm2_tensors, "chatglm": chatglm_tensors}.get(
        config["model_type"], decoder_tensors)(config, seed)


@pytest.fixture(scope="module", params=sorted(CASES))
def family(request, tmp_path_factory):
    config = CASES[request.param]
    tensors = tensors_for(config, seed=len(request.param))
    hf = tmp_path_factory.mktemp(request.param) / "hf"
    write_checkpoint(hf, config, tensors)
    return request.param, config, tensors, hf


def test_fp32_matches_the_numpy_reference(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "fp32")
    genai = json.loads((out / "genai_config.json").read_text())
    assert genai["model"]["type"] == {"olmo2": "olmo", "olmo3": "olmo"}.get(config["model_type"], config["model_type"])
    assert genai["model"]["decoder"]["head_size"] == (config.get("kv_channels") or head_dim(config))

    assert_matches_reference(name, config, tensors, out)


def test_int4_runs_like_ort(family):
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "int4", "int4")
    ids, _ = onnxllm_greedy(out, PROMPT, STEPS)
    vocab = config.get("vocab_size") or config["padded_vocab_size"]
    assert len(ids) > len(PROMPT) and all(0 <= t < vocab for t in ids)
    assert len(ids) == len(PROMPT) + STEPS or ids[-1] == config["eos_token_id"]
    expected_ids, _ = reference_greedy(config, tensors, PROMPT, STEPS)
    print(f"[{name} int4] {sum(a == b for a, b in zip(ids, expected_ids)) - len(PROMPT)} of {STEPS} tokens equal fp32's")
    ort = ort_greedy(out, PROMPT, STEPS)[:len(ids)]
    if ort != ids:
        # ORT's accuracy_level 4 quantizes activations to int8 its own way, which can flip a near
        # tie; with exact float compute (level 0) it must give onnxllm's tokens for the same weights.
        acc0 = build(hf, hf.parent / "int4_acc0", "int4", "--accuracy-level", "0")
        ours = onnxllm_greedy(acc0, PROMPT, STEPS)[0]
        assert ort_greedy(acc0, PROMPT, STEPS)[:len(ours)] == ours, name


def test_phi_bad_configs_name_the_field(tmp_path):
    config = phi_config()
    tensors = phi_tensors(config)

    missing = dict(config)
    del missing["intermediate_size"]
    write_checkpoint(tmp_path / "missing", missing, tensors)
    assert "missing 'intermediate_size'" in build_error(tmp_path / "missing", tmp_path / "out1")

    # config.json contradicting the weights: the message names the tensor and the field.
    write_checkpoint(tmp_path / "contradicts", phi_config(intermediate_size=512), tensors)
    msg = build_error(tmp_path / "contradicts", tmp_path / "out2")
    assert "model.layers.0.mlp.fc1.weight" in msg and "intermediate_size" in msg, msg
    assert "[640,160]" in msg and "[512,160]" in msg, msg

    write_checkpoint(tmp_path / "heads", phi_config(num_attention_heads=3), tensors)
    assert "num_attention_heads" in build_error(tmp_path / "heads", tmp_path / "out3")

    write_checkpoint(tmp_path / "qk", phi_config(qk_layernorm=True), tensors)
    assert "'qk_layernorm'" in build_error(tmp_path / "qk", tmp_path / "out4")

    no_bias = {k: v for k, v in tensors.items() if k != "model.layers.1.input_layernorm.bias"}
    write_checkpoint(tmp_path / "nobias", config, no_bias)
    assert "'model.layers.1.input_layernorm.bias'" in build_error(tmp_path / "nobias", tmp_path / "out5")

    write_checkpoint(tmp_path / "rotary", phi_config(partial_rotary_factor=1.5), tensors)
    assert "'partial_rotary_factor'" in build_error(tmp_path / "rotary", tmp_path / "out6")


def test_fp16_runs_like_fp32(family):
    # fp16 weights and activations (attention in float32): the first greedy tokens stay the
    # reference's, in onnxllm and in ONNX Runtime.
    name, config, tensors, hf = family
    out = build(hf, hf.parent / "fp16", "fp16")
    expected_ids, _ = reference_greedy(config, tensors, PROMPT, 8)
    ids, _ = onnxllm_greedy(out, PROMPT, 8)
    assert ids == expected_ids, name
    assert ort_greedy(out, PROMPT, 8)[:len(ids)] == ids, name


BAD_CONFIGS = [  # (case, config.json changes, what the message must say)
    ("granite", {"logits_scaling": 0}, "'logits_scaling' should be positive"),
    ("granite", {"attention_multiplier": -0.5}, "'attention_multiplier' should be positive"),
    ("granite", {"residual_multiplier": "0.22"}, "'residual_multiplier' should be a number"),
    ("granite", {"num_key_value_heads": 4}, "num_key_value_heads x head_dim"),  # k_proj is [64, 128]
    ("granite", {"num_hidden_layers": None}, "missing 'num_hidden_layers'"),
    ("olmo", {"clip_qkv": -1.0}, "'clip_qkv' should be positive"),
    ("olmo", {"hidden_size": 96}, "hidden_size"),
    ("olmo2", {"num_key_value_heads": 1}, "model.layers.0.self_attn.k_proj.weight"),
    ("olmo2", {"rms_norm_eps": 0}, "'rms_norm_eps' should be positive"),
    ("smollm3", {"no_rope_layers": [1, 0, 1]}, "'no_rope_layers' should list one 0 or 1 per layer (4)"),
    ("smollm3", {"no_rope_layers": [1, 0, 2, 1]}, "'no_rope_layers' entries should be 0 or 1"),
    ("smollm3", {"no_rope_layer_interval": 0}, "'no_rope_layer_interval' is 0"),
    ("smollm3_window", {"sliding_window": 0}, "'sliding_window' is 0"),
    ("nemotron", {"hidden_act": "relu3"}, "activation 'relu3' is not supported"),
    ("nemotron", {"norm_eps": "1e-5"}, "'norm_eps' should be a number"),
    ("nemotron", {"head_dim": 32}, "num_attention_heads x head_dim"),
    ("nemotron", {"partial_rotary_factor": 0.0}, "'partial_rotary_factor' should be in (0, 1]"),
    ("internlm2", {"bias": "no"}, "'bias' should be true or false"),
    ("internlm2", {"num_key_value_heads": 4}, "(num_attention_heads + 2 x num_key_value_heads) x head_dim"),
    ("ernie4_5", {"use_bias": 1}, "'use_bias' should be true or false"),
    ("ernie4_5", {"head_dim": 32}, "model.layers.0.self_attn.q_proj.weight"),
    ("chatglm", {"ffn_hidden_size": None}, "missing 'ffn_hidden_size'"),
    ("chatglm", {"ffn_hidden_size": 128}, "(2 x ffn_hidden_size, hidden_size)"),
    ("chatglm", {"multi_query_group_num": 1}, "multi_query_group_num) x kv_channels"),
    ("chatglm", {"padded_vocab_size": 300}, "(padded_vocab_size, hidden_size)"),
    ("chatglm", {"rmsnorm": False}, "'rmsnorm' false (LayerNorm) is not supported"),
    ("chatglm", {"apply_residual_connection_post_layernorm": True}, "'apply_residual_connection_post_layernorm'"),
    ("chatglm", {"rope_ratio": 0}, "'rope_ratio' should be positive"),
]


@pytest.mark.parametrize("case,changes,message", BAD_CONFIGS)
def test_bad_configs_name_the_field(tmp_path, case, changes, message):
    config = dict(CASES[case])
    tensors = tensors_for(config, seed=0)
    for key, value in changes.items():
        if value is None:
            del config[key]
        else:
            config[key] = value
    write_checkpoint(tmp_path / "hf", config, tensors)
    msg = build_error(tmp_path / "hf", tmp_path / "out")
    assert message in msg, msg


# ---- acceptance: a Phi-2-shaped int4 model through the tutorial ----

PHI2_TOKENIZER = "models/tiny-random-gpt2-fp32"  # the CodeGen / Phi-2 BPE (50257 + 38 whitespace tokens)
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] | capitalize }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}Output:{% endif %}")


@pytest.fixture(scope="module")
def phi2_int4(tmp_path_factory):
    """microsoft/phi-2's config.json with 2 layers of width 160 (head size 80, rotary 32, vocab 51200),
    random weights, int4, its tokenizer and a chat template in tokenizer_config.json."""
    tokenizer = SHARED_DIR / PHI2_TOKENIZER
    if not tokenizer.exists():
        pytest.skip(f"../shared not found ({tokenizer})")
    src = tmp_path_factory.mktemp("phi2") / "hf"
    src.mkdir()
    config = phi_config(vocab_size=51200, max_position_embeddings=2048, bos_token_id=50256, eos_token_id=50256,
                        torch_dtype="float16", initializer_range=0.02)
    (src / "config.json").write_text(json.dumps(config, indent=2))
    for name in ("tokenizer.json", "vocab.json"):
        shutil.copy(tokenizer / name, src / name)
    tokenizer_config = json.loads((tokenizer / "tokenizer_config.json").read_text())
    tokenizer_config["chat_template"] = CHAT_TEMPLATE
    (src / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    out = src.parent / "phi-2-int4"
    subprocess.run([str(CLI), "build", "--config", src / "config.json", "--random-weights", "-o", out, "-p", "int4",
                    "-q"], check=True, capture_output=True, text=True)
    return out


def test_phi2_int4_runs_the_tutorial(phi2_int4):
    genai = json.loads((phi2_int4 / "genai_config.json").read_text())
    assert genai["model"]["type"] == "phi" and genai["model"]["vocab_size"] == 51200
    assert genai["model"]["eos_token_id"] == 50256
    result = run_python(tutorial_source(phi2_int4), timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) > 0
    # Greedy, the tutorial prints exactly what `onnxllm generate` prints for its prompt.
    greedy = run_python(tutorial_source(phi2_int4, do_sample=False, max_length=40), timeout=300)
    assert greedy.returncode == 0, greedy.stderr
    cli = subprocess.run([str(CLI), "generate", "-m", phi2_int4, "--prompt", "Write a short haiku about autumn leaves:",
                          "--max-length", "40", "--no-timings"], check=True, capture_output=True, text=True).stdout
    assert greedy.stdout == cli.rstrip("\n")


def test_phi2_chat_template_is_carried_over(phi2_int4, tmp_path):
    assert json.loads((phi2_int4 / "tokenizer_config.json").read_text())["chat_template"] == CHAT_TEMPLATE
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": "Hello"}]))
    rendered = subprocess.run([str(CLI), "template", "--tokenizer", phi2_int4, "--messages", messages,
                               "--add-generation-prompt"], check=True, capture_output=True, text=True).stdout
    assert rendered.rstrip("\n") == "User: Hello\nOutput:"


def test_random_weights_from_a_bare_config_name(tmp_path):
    """`--config config.json` given from the config's own folder (an empty parent path) builds, with
    that folder as the one tokenizer files come from; it used to crash looking for a GGUF vocabulary."""
    (tmp_path / "config.json").write_text(json.dumps(base_config("LlamaForCausalLM", "llama", hidden_size=64,
                                                                 intermediate_size=96)))
    r = subprocess.run([str(CLI), "build", "--config", "config.json", "--random-weights", "-o", "out", "-q"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((tmp_path / "out" / "genai_config.json").read_text())["model"]["type"] == "llama"

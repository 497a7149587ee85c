"""Optimum-layout decoder exports written with python3-onnx (no torch on the test machines).

The graphs follow what `optimum-cli export onnx --task text-generation-with-past` gets from
torch.onnx.export of transformers' modeling code (modeling_llama.py, modeling_gpt2.py), op for op:
RMSNorm as Pow / ReduceMean / Add / Sqrt / Reciprocal / Mul, LayerNorm decomposed as opset-14
exports have it, rotary as Slice / Neg / Concat (rotate_half) with cos/sin computed from
position_ids, eager attention as MatMul(Q, K^T) / sqrt(d) + mask, Softmax, MatMul(V) with the past
Concat-ed in front, repeat_kv as Unsqueeze / Expand / Reshape, SiLU as x * Sigmoid(x), gelu_new
with Tanh. The mask is transformers' 4-D mask: causal (j <= i + past) and padding (attention_mask),
0 where attended and float32's lowest elsewhere.

Layouts (what the folder holds besides config.json, generation_config.json, tokenizer files):
  "single": model.onnx (+ model.onnx_data), past inputs of any length, 0 included;
  "merged": decoder_model_merged.onnx with the bool input use_cache_branch and an If whose then
            branch is the with-past graph and else branch the no-past graph (weights shared at the
            top level, as Optimum's merge writes them);
  "pair":   decoder_model.onnx (no past inputs) + decoder_with_past_model.onnx.
"""

import json
import math
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14
LOWEST = float(np.finfo(np.float32).min)


def llama_config(**overrides):
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
         "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
         "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    c.update(overrides)
    return c


def gpt2_config(**overrides):
    c = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
         "n_positions": 128, "n_ctx": 128, "vocab_size": 256, "layer_norm_epsilon": 1e-5,
         "activation_function": "gelu_new", "bos_token_id": 0, "eos_token_id": 0}
    c.update(overrides)
    return c


def llama_weights(c, seed=0, std=0.08):
    """Random weights under transformers' LlamaForCausalLM state-dict names ([out, in] matrices)."""
    rng = np.random.default_rng(seed)
    d, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = c.get("head_dim", d // c["num_attention_heads"])
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {"model.embed_tokens.weight": normal(v, d) * 8}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
        w[p + "self_attn.q_proj.weight"] = normal(q, d)
        w[p + "self_attn.k_proj.weight"] = normal(kv, d)
        w[p + "self_attn.v_proj.weight"] = normal(kv, d)
        w[p + "self_attn.o_proj.weight"] = normal(d, q)
        w[p + "post_attention_layernorm.weight"] = (1 + normal(d)).astype(np.float32)
        w[p + "mlp.gate_proj.weight"] = normal(inter, d)
        w[p + "mlp.up_proj.weight"] = normal(inter, d)
        w[p + "mlp.down_proj.weight"] = normal(d, inter)
    w["model.norm.weight"] = (1 + normal(d)).astype(np.float32)
    w["lm_head.weight"] = normal(v, d)
    return w


def gpt2_weights(c, seed=0, std=0.3):
    """Random weights under transformers' GPT2LMHeadModel names (Conv1D: [in, out] matrices)."""
    rng = np.random.default_rng(seed)
    d, v, n = c["n_embd"], c["vocab_size"], c["n_positions"]

    def normal(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {"transformer.wte.weight": normal(v, d), "transformer.wpe.weight": normal(n, d)}
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        w[p + "ln_1.weight"] = (1 + normal(d)).astype(np.float32)
        w[p + "ln_1.bias"] = normal(d)
        w[p + "attn.c_attn.weight"] = normal(d, 3 * d)
        w[p + "attn.c_attn.bias"] = normal(3 * d)
        w[p + "attn.c_proj.weight"] = normal(d, d)
        w[p + "attn.c_proj.bias"] = normal(d)
        w[p + "ln_2.weight"] = (1 + normal(d)).astype(np.float32)
        w[p + "ln_2.bias"] = normal(d)
        w[p + "mlp.c_fc.weight"] = normal(d, 4 * d)
        w[p + "mlp.c_fc.bias"] = normal(4 * d)
        w[p + "mlp.c_proj.weight"] = normal(4 * d, d)
        w[p + "mlp.c_proj.bias"] = normal(d)
    w["transformer.ln_f.weight"] = (1 + normal(d)).astype(np.float32)
    w["transformer.ln_f.bias"] = normal(d)
    return w


class Body:
    """Nodes of one decoder graph; value names get `prefix` so two bodies can share one file."""

    def __init__(self, prefix, consts):
        self.prefix = prefix
        self.nodes = []
        self.consts = consts  # name -> array, shared by every body (become initializers)
        self.count = 0

    def name(self, hint):
        self.count += 1
        return f"{self.prefix}{hint}_{self.count}"

    def op(self, op_type, inputs, hint=None, n_out=1, **attrs):
        outs = [self.name(hint or op_type) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("/" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=np.float32, hint="const"):
        key = f"onnx::{hint}_{len(self.consts)}"
        self.consts[key] = np.asarray(value, dtype=dtype)
        return key

    def ints(self, *values):
        return self.const(list(values), np.int64, "ints")

    def rms_norm(self, x, weight, eps):
        var = self.op("ReduceMean", [self.op("Pow", [x, self.const(2.0)])], axes=[-1], keepdims=1)
        inv = self.op("Reciprocal", [self.op("Sqrt", [self.op("Add", [var, self.const(eps)])])])
        return self.op("Mul", [weight, self.op("Mul", [x, inv])])

    def layer_norm(self, x, weight, bias, eps):
        mean = self.op("ReduceMean", [x], axes=[-1], keepdims=1)
        centered = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [centered, self.const(2.0)])], axes=[-1], keepdims=1)
        normed = self.op("Div", [centered, self.op("Sqrt", [self.op("Add", [var, self.const(eps)])])])
        return self.op("Add", [self.op("Mul", [normed, weight]), bias])

    def heads(self, x, n, d):
        """[B, S, n*d] -> [B, n, S, d]"""
        return self.op("Transpose", [self.op("Reshape", [x, self.ints(0, 0, n, d)])], perm=[0, 2, 1, 3])

    def mask(self, input_ids, attention_mask, past_key=None, window=None):
        """transformers' 4-D mask [B, 1, S, T]: 0 where attended, float32's lowest elsewhere. The past
        length is T - S from the mask's length, or with past_key that input's dim 2, as newer
        transformers read it (DynamicCache.get_seq_length). With a window (Mistral's
        sliding_window), query i also sees only keys j > i - window."""
        s = self.op("Gather", [self.op("Shape", [input_ids]), self.const(1, np.int64)], axis=0)
        if past_key is None:
            t = self.op("Gather", [self.op("Shape", [attention_mask]), self.const(1, np.int64)], axis=0)
            past = self.op("Sub", [t, s])
        else:
            past = self.op("Gather", [self.op("Shape", [past_key]), self.const(2, np.int64)], axis=0)
            t = self.op("Add", [past, s])
        zero, one = self.const(0, np.int64), self.const(1, np.int64)
        rows = self.op("Add", [self.op("Range", [zero, s, one]), past])
        cols = self.op("Range", [zero, t, one])
        causal = self.op("Not", [self.op("Greater", [self.op("Unsqueeze", [cols, self.ints(0)]),
                                                     self.op("Unsqueeze", [rows, self.ints(1)])])])
        pad = self.op("Unsqueeze", [self.op("Cast", [attention_mask], to=TensorProto.BOOL), self.ints(1, 2)])
        ok = self.op("And", [causal, pad])
        if window:
            behind = self.op("Sub", [self.op("Unsqueeze", [rows, self.ints(1)]), self.op("Unsqueeze", [cols, self.ints(0)])])
            ok = self.op("And", [ok, self.op("Less", [behind, self.const(window, np.int64)])])
        return self.op("Where", [ok, self.const(0.0), self.const(LOWEST)]), past, s

    def attention(self, q, k, v, past_k, past_v, n_heads, n_kv, d, mask, li):
        """Eager attention with the past Concat-ed in front; returns ([B, S, n*d], present_k, present_v)."""
        if past_k is not None:
            k = self.op("Concat", [past_k, k], axis=2)
            v = self.op("Concat", [past_v, v], axis=2)
        present_k = self.op("Identity", [k], hint=f"present.{li}.key")
        present_v = self.op("Identity", [v], hint=f"present.{li}.value")
        if n_heads != n_kv:  # repeat_kv
            rep = self.ints(1, 1, n_heads // n_kv, 1, 1)
            k = self.op("Reshape", [self.op("Expand", [self.op("Unsqueeze", [k, self.ints(2)]), rep]),
                                    self.ints(0, n_heads, -1, d)])
            v = self.op("Reshape", [self.op("Expand", [self.op("Unsqueeze", [v, self.ints(2)]), rep]),
                                    self.ints(0, n_heads, -1, d)])
        scores = self.op("Div", [self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                                 self.const(math.sqrt(d))])
        probs = self.op("Softmax", [self.op("Add", [scores, mask])], axis=-1)
        out = self.op("Transpose", [self.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        return self.op("Reshape", [out, self.ints(0, 0, -1)]), present_k, present_v


    def genai_repeat_kv(self, present, n_heads, n_kv, d):
        """onnxruntime-genai's builder.py make_repeat_kv (its MultiHeadAttention exports of GQA models
        for CPU, before ORT had GroupQueryAttention there) after the Concat: present [B, n_kv, T, d]
        -> [B, T, n_heads * d], the Expand shape computed from present's shape through its
        Reshape / ConstantOfShape / Equal / Where chain."""
        rep = n_heads // n_kv
        shape = self.op("Shape", [present])
        dims = [self.op("Unsqueeze", [self.op("Gather", [shape, self.const(i, np.int64)], axis=0), self.ints(0)])
                for i in range(4)]
        five = self.op("Concat", [dims[0], dims[1], self.ints(rep), dims[2], dims[3]], axis=0)
        four = self.op("Concat", [dims[0], self.op("Mul", [dims[1], self.const(rep, np.int64)]), dims[2], dims[3]], axis=0)
        flat = self.op("Reshape", [five, self.ints(-1)])
        ones = self.op("ConstantOfShape", [self.op("Shape", [flat])],
                       value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
        minus = self.op("Mul", [ones, self.const(-1, np.int64)])
        expand_shape = self.op("Where", [self.op("Equal", [flat, minus]), ones, flat])
        repeated = self.op("Reshape", [self.op("Expand", [self.op("Unsqueeze", [present, self.ints(2)]), expand_shape]), four])
        return self.op("Reshape", [self.op("Transpose", [repeated], perm=[0, 2, 1, 3]), self.ints(0, 0, n_heads * d)])

    def genai_mha_attention(self, q, k, v, past_k, past_v, n_heads, n_kv, d, mask, li):
        """genai's MultiHeadAttention layer: the past Concat-ed in front, K and V repeated per query
        head (genai_repeat_kv), com.microsoft.MultiHeadAttention on Q [B, S, n*d] with the 4-D mask
        as attention bias."""
        present_k = self.op("Identity", [self.op("Concat", [past_k, k], axis=2)], hint=f"present.{li}.key")
        present_v = self.op("Identity", [self.op("Concat", [past_v, v], axis=2)], hint=f"present.{li}.value")
        q3 = self.op("Reshape", [self.op("Transpose", [q], perm=[0, 2, 1, 3]), self.ints(0, 0, n_heads * d)])
        out = self.name("MultiHeadAttention")
        self.nodes.append(helper.make_node(
            "MultiHeadAttention", [q3, self.genai_repeat_kv(present_k, n_heads, n_kv, d),
                                   self.genai_repeat_kv(present_v, n_heads, n_kv, d), "", "", mask], [out],
            name=self.name("/MultiHeadAttention"), domain="com.microsoft", num_heads=n_heads, scale=1.0 / math.sqrt(d)))
        return out, present_k, present_v


    def genai_mha_past_attention(self, q, k, v, past_k, past_v, n_heads, n_kv, d, mask, li):
        """genai's MultiHeadAttention layer of a model without GQA: Q, K and V as [B, S, n*d], the
        past passed in and the presents returned by the op, the 4-D mask as attention bias."""
        assert n_heads == n_kv, "genai passes the past into MultiHeadAttention only without GQA"
        flat = [self.op("Reshape", [self.op("Transpose", [t], perm=[0, 2, 1, 3]), self.ints(0, 0, n_heads * d)])
                for t in (q, k, v)]
        out, present_k, present_v = self.name("MultiHeadAttention"), self.name(f"present.{li}.key"), self.name(f"present.{li}.value")
        self.nodes.append(helper.make_node(
            "MultiHeadAttention", flat + ["", "", mask, past_k, past_v], [out, present_k, present_v],
            name=self.name("/MultiHeadAttention"), domain="com.microsoft", num_heads=n_heads, scale=1.0 / math.sqrt(d)))
        return out, present_k, present_v


def llama_body(c, prefix, consts, with_past, past_from_cache=False, attention="eager"):
    """Returns (Body, logits, presents) reading the graph inputs by their Optimum names."""
    b = Body(prefix, consts)
    d, n, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim", d // n)
    eps = c["rms_norm_eps"]
    w = lambda name: name  # weights are top-level initializers under their checkpoint names
    x = b.op("Gather", [w("model.embed_tokens.weight"), "input_ids"], axis=0)
    window = c.get("sliding_window") if c["model_type"] == "mistral" else None  # else a Llama
    mask, _, _ = b.mask("input_ids", "attention_mask", "past_key_values.0.key" if with_past and past_from_cache else None,
                        window)
    if attention != "eager":  # genai's builder tiles its mask to [B, N, S, T], in a node of this name
        tiled = b.name("tiled_mask")
        b.nodes.append(helper.make_node("Tile", [mask, b.ints(1, n, 1, 1)], [tiled],
                                        name=prefix + "/model/attn_mask_reformat/Tile"))
        mask = tiled
    inv_freq = 1.0 / (c["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    freqs = b.op("Mul", [b.op("Unsqueeze", [b.op("Cast", ["position_ids"], to=TensorProto.FLOAT), b.ints(2)]),
                         b.const(inv_freq)])
    emb = b.op("Concat", [freqs, freqs], axis=-1)
    cos = b.op("Unsqueeze", [b.op("Cos", [emb]), b.ints(1)])
    sin = b.op("Unsqueeze", [b.op("Sin", [emb]), b.ints(1)])

    def rotary(t):
        x1 = b.op("Slice", [t, b.ints(0), b.ints(hd // 2), b.ints(-1)])
        x2 = b.op("Slice", [t, b.ints(hd // 2), b.ints(2**62), b.ints(-1)])
        rotated = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
        return b.op("Add", [b.op("Mul", [t, cos]), b.op("Mul", [rotated, sin])])

    def linear(t, name):  # nn.Linear exports as MatMul with the transposed weight folded in
        key = name + ".T"
        if key not in consts:
            consts[key] = np.ascontiguousarray(consts[name].T)
        return b.op("MatMul", [t, key])

    presents = []
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = b.rms_norm(x, p + "input_layernorm.weight", eps)
        q = rotary(b.heads(linear(h, p + "self_attn.q_proj.weight"), n, hd))
        k = rotary(b.heads(linear(h, p + "self_attn.k_proj.weight"), kv, hd))
        v = b.heads(linear(h, p + "self_attn.v_proj.weight"), kv, hd)
        past = (f"past_key_values.{i}.key", f"past_key_values.{i}.value") if with_past else (None, None)
        attend = {"genai_mha": b.genai_mha_attention, "genai_mha_past": b.genai_mha_past_attention}.get(attention, b.attention)
        a, pk, pv = attend(q, k, v, past[0], past[1], n, kv, hd, mask, i)
        x = b.op("Add", [x, linear(a, p + "self_attn.o_proj.weight")])
        h = b.rms_norm(x, p + "post_attention_layernorm.weight", eps)
        gate = linear(h, p + "mlp.gate_proj.weight")
        act = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
        x = b.op("Add", [x, linear(b.op("Mul", [act, linear(h, p + "mlp.up_proj.weight")]), p + "mlp.down_proj.weight")])
        presents += [pk, pv]
    x = b.rms_norm(x, "model.norm.weight", eps)
    head = "model.embed_tokens.weight" if c.get("tie_word_embeddings") else "lm_head.weight"
    return b, linear(x, head), presents


def gpt2_body(c, prefix, consts, with_past, position_ids, past_from_cache=False):
    b = Body(prefix, consts)
    d, n = c["n_embd"], c["n_head"]
    hd = d // n
    eps = c["layer_norm_epsilon"]
    mask, past, s = b.mask("input_ids", "attention_mask",
                           "past_key_values.0.key" if with_past and past_from_cache else None)
    if position_ids:
        pos = "position_ids"
    else:  # GPT2Model: position_ids = arange(past_length, past_length + seq)
        pos = b.op("Unsqueeze", [b.op("Range", [past, b.op("Add", [past, s]), b.const(1, np.int64)]), b.ints(0)])
    x = b.op("Add", [b.op("Gather", ["transformer.wte.weight", "input_ids"], axis=0),
                     b.op("Gather", ["transformer.wpe.weight", pos], axis=0)])

    def conv1d(t, name):
        return b.op("Add", [b.op("MatMul", [t, name + ".weight"]), name + ".bias"])

    presents = []
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = b.layer_norm(x, p + "ln_1.weight", p + "ln_1.bias", eps)
        q, k, v = b.op("Split", [conv1d(h, p + "attn.c_attn"), b.ints(d, d, d)], n_out=3, axis=2)
        past_kv = (f"past_key_values.{i}.key", f"past_key_values.{i}.value") if with_past else (None, None)
        a, pk, pv = b.attention(b.heads(q, n, hd), b.heads(k, n, hd), b.heads(v, n, hd), past_kv[0], past_kv[1], n, n,
                                hd, mask, i)
        x = b.op("Add", [x, conv1d(a, p + "attn.c_proj")])
        h = b.layer_norm(x, p + "ln_2.weight", p + "ln_2.bias", eps)
        f = conv1d(h, p + "mlp.c_fc")
        inner = b.op("Mul", [b.const(math.sqrt(2.0 / math.pi)),
                             b.op("Add", [f, b.op("Mul", [b.const(0.044715), b.op("Pow", [f, b.const(3.0)])])])])
        g = b.op("Mul", [b.op("Mul", [b.const(0.5), f]), b.op("Add", [b.const(1.0), b.op("Tanh", [inner])])])
        x = b.op("Add", [x, conv1d(g, p + "mlp.c_proj")])
        presents += [pk, pv]
    x = b.layer_norm(x, "transformer.ln_f.weight", "transformer.ln_f.bias", eps)
    if "transformer.wte.weight.T" not in consts:
        consts["transformer.wte.weight.T"] = np.ascontiguousarray(consts["transformer.wte.weight"].T)
    return b, b.op("MatMul", [x, "transformer.wte.weight.T"]), presents


def io_values(c, kind, with_past, position_ids, static_kv=True):
    layers = c["num_hidden_layers"] if kind == "llama" else c["n_layer"]
    if kind == "llama":
        kv, hd = c["num_key_value_heads"], c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    else:
        kv, hd = c["n_head"], c["n_embd"] // c["n_head"]
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                         ["batch_size", "past_sequence_length + sequence_length"])]
    if position_ids:
        ins.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    heads_dim = kv if static_kv else "num_kv_heads"
    size_dim = hd if static_kv else "head_dim"
    if with_past:
        for i in range(layers):
            for t in ("key", "value"):
                ins.append(helper.make_tensor_value_info(f"past_key_values.{i}.{t}", f,
                                                         ["batch_size", heads_dim, "past_sequence_length", size_dim]))
    outs = [helper.make_tensor_value_info("logits", f, ["batch_size", "sequence_length", c["vocab_size"]])]
    for i in range(layers):
        for t in ("key", "value"):
            outs.append(helper.make_tensor_value_info(f"present.{i}.{t}", f, ["batch_size", heads_dim,
                                                                           "past_sequence_length + 1", size_dim]))
    return ins, outs


def build_body(kind, c, prefix, consts, with_past, position_ids, past_from_cache=False, attention="eager"):
    if kind == "llama":
        return llama_body(c, prefix, consts, with_past, past_from_cache, attention)
    return gpt2_body(c, prefix, consts, with_past, position_ids, past_from_cache)


def rename_outputs(body, logits, presents, kind, c):
    """Identity nodes giving the body's results their output names (prefix + name inside branches)."""
    layers = c["num_hidden_layers"] if kind == "llama" else c["n_layer"]
    names = ["logits"] + [f"present.{i}.{t}" for i in range(layers) for t in ("key", "value")]
    for src, name in zip([logits] + presents, names):
        body.nodes.append(helper.make_node("Identity", [src], [body.prefix + name], name=body.prefix + "out/" + name))
    return names


def save(model, path, external):
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=path.name + "_data", size_threshold=1024)
    else:
        onnx.save_model(model, str(path))


def initializers(consts, used):
    return [numpy_helper.from_array(a, name) for name, a in consts.items() if name in used]


def used_names(nodes):
    out = set()
    for node in nodes:
        out.update(node.input)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out |= used_names(a.g.node)
    return out


def single_model(kind, c, weights, with_past=True, position_ids=True, static_kv=True, past_from_cache=False,
                 attention="eager"):
    consts = dict(weights)
    body, logits, presents = build_body(kind, c, "", consts, with_past, position_ids, past_from_cache, attention)
    names = rename_outputs(body, logits, presents, kind, c)
    ins, outs = io_values(c, kind, with_past, position_ids, static_kv)
    graph = helper.make_graph(body.nodes, "decoder", ins, outs, initializers(consts, used_names(body.nodes)))
    opsets = [helper.make_opsetid("", OPSET)]
    if any(n.domain == "com.microsoft" for n in body.nodes):
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="pytorch")
    model.ir_version = 8
    return model


def merged_model(kind, c, weights, position_ids=True, past_from_cache=False):
    consts = dict(weights)
    wp, wl, wpres = build_body(kind, c, "wp/", consts, True, position_ids, past_from_cache)
    names = rename_outputs(wp, wl, wpres, kind, c)
    np_, nl, npres = build_body(kind, c, "np/", consts, False, position_ids)
    rename_outputs(np_, nl, npres, kind, c)
    ins, outs = io_values(c, kind, True, position_ids)
    ins.append(helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]))

    def branch(body, graph_name):
        branch_outs = [helper.make_tensor_value_info(body.prefix + o.name, o.type.tensor_type.elem_type, None)
                       for o in outs]
        return helper.make_graph(body.nodes, graph_name, [], branch_outs)

    node = helper.make_node("If", ["use_cache_branch"], [o.name for o in outs], name="optimum::if",
                            then_branch=branch(wp, "with_past"), else_branch=branch(np_, "no_past"))
    used = used_names(wp.nodes) | used_names(np_.nodes)
    graph = helper.make_graph([node], "merged_decoder", ins, outs, initializers(consts, used))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="optimum")
    model.ir_version = 8
    return model


def write_folder(folder, kind, c, layout, seed=0, position_ids=True, external=True, weights=None,
                 static_kv=True, generation_config=None, past_from_cache=False, attention="eager"):
    """An Optimum export folder of a random-weights model; returns the folder. past_from_cache: the
    with-past graph's mask reads the past length from past_key_values.0.key (see Body.mask).
    attention="genai_mha" (Llama, single layout): onnxruntime-genai's MultiHeadAttention layers
    with its repeat_kv instead of eager attention; "genai_mha_past" (no GQA): its
    MultiHeadAttention that takes the past and returns the presents itself."""
    if attention != "eager" and (kind != "llama" or layout != "single"):
        raise ValueError(f"attention={attention!r} is written for the single-file Llama layout only")
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if weights is None:
        weights = llama_weights(c, seed) if kind == "llama" else gpt2_weights(c, seed)
    if layout == "single":
        save(single_model(kind, c, weights, True, position_ids, static_kv, past_from_cache, attention),
             folder / "model.onnx", external)
    elif layout == "merged":
        save(merged_model(kind, c, weights, position_ids, past_from_cache), folder / "decoder_model_merged.onnx",
             external)
    elif layout == "pair":
        save(single_model(kind, c, weights, False, position_ids, static_kv), folder / "decoder_model.onnx", external)
        save(single_model(kind, c, weights, True, position_ids, static_kv, past_from_cache),
             folder / "decoder_with_past_model.onnx",
             external)
    else:
        raise ValueError(layout)
    (folder / "config.json").write_text(json.dumps(c, indent=2))
    gen = {"bos_token_id": c["bos_token_id"], "eos_token_id": c["eos_token_id"], "transformers_version": "4.40.0"}
    if generation_config:
        gen.update(generation_config)
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2))
    write_tokenizer(folder, c["vocab_size"])
    return folder


def write_tokenizer(folder, vocab_size):
    """A character tokenizer.json (BPE without merges: one token per character) and its config."""
    # Code points from '!' on, past the surrogates (not characters: JSON cannot hold them alone),
    # so a 152K vocabulary works too.
    points = (c for c in range(0x21, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    chars = [chr(next(points)) for _ in range(vocab_size - 3)]
    vocab = dict([("<unk>", 0), ("<s>", 1), ("</s>", 2)] + [(ch, i + 3) for i, ch in enumerate(chars)])
    tok = {"version": "1.0",
           "added_tokens": [{"id": i, "content": t, "special": True, "normalized": False, "single_word": False,
                             "lstrip": False, "rstrip": False} for i, t in enumerate(["<unk>", "<s>", "</s>"])],
           "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
           "model": {"type": "BPE", "unk_token": "<unk>", "merges": [], "vocab": vocab}}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "clean_up_tokenization_spaces": False,
        "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}))

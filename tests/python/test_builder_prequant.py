"""Pre-quantized checkpoints (GPTQ, AWQ) through `onnxllm build`.

Each case writes a small Llama- or Qwen2-shaped checkpoint here: random float weights quantized per
group by the quantizer below (written from AutoGPTQ's / AutoAWQ's formulas, not from the builder),
packed in the checkpoint formats (GPTQ qweight packed along K, qzeros along N, v1 zeros minus one;
AWQ GEMM words in the order 0,2,4,6,1,3,5,7), with config.json's quantization_config. The built
model must give logits close to a numpy forward pass over the DEQUANTIZED weights
(test_builder_families.decoder_forward) and the same greedy tokens, ONNX Runtime must give those
tokens on the built graph, and the MatMulNBits initializers must hold exactly the checkpoint's
integers, scales and zero points (nothing re-quantized).
"""

import json
import struct

import numpy as np
import pytest

from test_builder_families import (PROMPT, STEPS, assert_matches_reference, base_config, build, build_error,
                                   decoder_tensors, onnxllm_greedy)

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ's pack order: nibble i of a word holds column AWQ_ORDER[i]
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
           "mlp.up_proj", "mlp.down_proj")


# ---- an independent group quantizer and the checkpoint packings ----

def quantize(w, bits, group, sym, method, rng, act_order):
    """w [N, K] (a Linear weight) -> codes [N, K], zeros [G, N], fp16 scales [G, N], g_idx [K];
    group -1: one group over all of K."""
    n, k = w.shape
    group = k if group == -1 else group
    maxq = 2 ** bits - 1
    g_count = k // group
    if act_order:  # GPTQ desc_act: rows taken in a shuffled order, `group` at a time
        perm = rng.permutation(k)
        g_idx = np.empty(k, dtype=np.int32)
        g_idx[perm] = np.arange(k) // group
    else:
        g_idx = (np.arange(k) // group).astype(np.int32)
    codes = np.zeros((n, k), dtype=np.int64)
    zeros = np.zeros((g_count, n), dtype=np.int64)
    scales = np.zeros((g_count, n), dtype=np.float16)
    for g in range(g_count):
        rows = np.nonzero(g_idx == g)[0]
        x = w[:, rows].astype(np.float64)
        if method == "awq":  # AutoAWQ pseudo_quantize_tensor (zero_point=True)
            hi, lo = x.max(1), x.min(1)
            s = np.maximum(hi - lo, 1e-5) / maxq
            s16 = s.astype(np.float16)
            z = np.clip(-np.round(lo / s16.astype(np.float64)), 0, maxq)
        else:  # AutoGPTQ Quantizer.find_params
            lo, hi = np.minimum(x.min(1), 0), np.maximum(x.max(1), 0)
            if sym:
                hi = np.maximum(np.abs(lo), hi)
                lo = -hi
            s16 = ((hi - lo) / maxq).astype(np.float16)
            z = np.full(n, (maxq + 1) / 2) if sym else np.round(-lo / s16.astype(np.float64))
        q = np.clip(np.round(x / s16.astype(np.float64)[:, None]) + z[:, None], 0, maxq)
        codes[:, rows] = q.astype(np.int64)
        zeros[g], scales[g] = z.astype(np.int64), s16
    return codes, zeros, scales, g_idx


def dequantize(codes, zeros, scales, g_idx):
    return ((codes - zeros[g_idx].T) * scales[g_idx].T.astype(np.float64)).astype(np.float32)


def pack_along(values, bits, axis, order=None):
    """int32 words packing 32/bits values along `axis` (low bits first; `order` = AWQ's column order)."""
    per = 32 // bits
    v = np.moveaxis(values.astype(np.uint32) & (2 ** bits - 1), axis, -1)
    v = v.reshape(*v.shape[:-1], v.shape[-1] // per, per)
    if order is not None:
        v = v[..., order]
    words = np.zeros(v.shape[:-1], dtype=np.uint32)
    for i in range(per):
        words |= v[..., i] << np.uint32(i * bits)
    return np.moveaxis(words, -1, axis).view(np.int32)


def checkpoint_tensors(codes, zeros, scales, g_idx, bits, method, v1):
    if method == "awq":
        return {"qweight": pack_along(codes.T, bits, 1, AWQ_ORDER), "qzeros": pack_along(zeros, bits, 1, AWQ_ORDER),
                "scales": scales}
    stored = (zeros - 1) if v1 else zeros  # checkpoint_format "gptq" stores zero - 1 (0 wraps to 2^bits - 1)
    return {"qweight": pack_along(codes.T, bits, 0), "qzeros": pack_along(stored, bits, 1), "scales": scales,
            "g_idx": g_idx}


def write_safetensors(path, tensors):
    dtypes = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int32): "I32"}
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": dtypes[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_case(folder, arch, method, bits=4, group=32, sym=False, v1=True, act_order=False, seed=0, **sizes):
    """Writes the checkpoint; returns (config, dequantized float tensors, {module: (codes, zeros, scales, g_idx)})."""
    if arch == "qwen2":
        config = base_config("Qwen2ForCausalLM", "qwen2", attention_bias=True, **sizes)
    else:
        config = base_config("LlamaForCausalLM", "llama", **sizes)
    floats = decoder_tensors(config, seed=seed)
    if arch == "qwen2":  # Qwen2 has q/k/v biases only
        for i in range(config["num_hidden_layers"]):
            floats.pop(f"model.layers.{i}.self_attn.o_proj.bias")
        config.pop("attention_bias")
    rng = np.random.default_rng(seed + 100)
    if method == "gptq":
        qc = {"quant_method": "gptq", "bits": bits, "group_size": group, "sym": sym, "desc_act": act_order,
              "damp_percent": 0.01, "true_sequential": True, "lm_head": False}
        if not v1:
            qc["checkpoint_format"] = "gptq_v2"
    else:
        qc = {"quant_method": "awq", "bits": bits, "group_size": group, "zero_point": True, "version": "gemm",
              "modules_to_not_convert": None}
    config["quantization_config"] = qc
    stored, reference, integers = {}, dict(floats), {}
    for name, w in floats.items():
        module = name[:-len(".weight")]
        if not (name.endswith(".weight") and module.split("layers.")[-1].split(".", 1)[-1] in LINEARS):
            stored[name] = w
            continue
        if module.endswith("layers.0.mlp.up_proj") and v1 and not sym:
            w = w.copy()
            w[0, :] = np.abs(w[0, :])  # a zero point of 0: v1 stores it as -1, which must wrap back
        codes, zeros, scales, g_idx = quantize(w, bits, group, sym, method, rng, act_order)
        integers[module] = (codes, zeros, scales, g_idx)
        reference[name] = dequantize(codes, zeros, scales, g_idx)
        for suffix, t in checkpoint_tensors(codes, zeros, scales, g_idx, bits, method, v1).items():
            stored[f"{module}.{suffix}"] = t
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    write_safetensors(folder / "model.safetensors", stored)
    return config, reference, integers


# ---- reading the built initializers ----

def initializers(model_dir):
    """name -> numpy array of every initializer (external data included), and node name -> (op type,
    integer attributes)."""
    import onnx  # Debian's python3-onnx
    from onnx import numpy_helper
    graph = onnx.load(str(model_dir / "model.onnx")).graph
    tensors = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes = {n.name: (n.op_type, {a.name: a.i for a in n.attribute if a.type == onnx.AttributeProto.INT})
             for n in graph.node}
    return tensors, nodes


def block_for(group, k):
    """MatMulNBits' block: the group, or the largest power of two up to 256 dividing it (group -1 = K)."""
    group = k if group == -1 else group
    return next(b for b in (256, 128, 64, 32, 16) if group % b == 0)


def expected_matmul_nbits(parts, bits, block):
    """MatMulNBits B, scales and zero points (None when all are 2^(bits-1)) for the stacked parts, from
    the test's own integers: K reordered so each group is contiguous, blocks of `block` rows (a group
    wider than a block repeats its scale and zero point in each)."""
    codes = np.concatenate([p[0] for p in parts])
    zeros = np.concatenate([p[1] for p in parts], axis=1)
    scales = np.concatenate([p[2] for p in parts], axis=1)
    g_idx = parts[0][3]
    order = np.argsort(g_idx, kind="stable")
    n, k = codes.shape
    n_blk = k // block
    group_of_block = g_idx[order][::block]
    q = codes[:, order].astype(np.uint8).reshape(n, n_blk, block)
    if bits == 4:
        q = q[..., 0::2] | (q[..., 1::2] << 4)
    s = scales[group_of_block].T.astype(np.float32).reshape(-1)
    z = zeros[group_of_block].T.astype(np.uint8)
    if np.all(z == 2 ** (bits - 1)):
        return q, s, None, order
    if bits == 4:
        if n_blk % 2:
            z = np.concatenate([z, np.full((n, 1), 8, np.uint8)], axis=1)
        z = z[:, 0::2] | (z[:, 1::2] << 4)
    return q, s, z.reshape(-1), order


# ---- the cases ----

CASES = {
    "gptq_sym_g128_llama": dict(arch="llama", method="gptq", group=128, sym=True),
    "gptq_asym_v1_g32_qwen2": dict(arch="qwen2", method="gptq", group=32, sym=False, v1=True),
    "gptq_asym_v2_g128_llama": dict(arch="llama", method="gptq", group=128, sym=False, v1=False),
    "gptq_desc_act_g32_llama": dict(arch="llama", method="gptq", group=32, sym=False, act_order=True),
    "gptq_desc_act_g64_sym_qwen2": dict(arch="qwen2", method="gptq", group=64, sym=True, v1=False, act_order=True),
    # group_size -1 (one scale per column): K 128 -> block 128; down_proj's K 512 -> two 256 blocks
    "gptq_per_column_llama": dict(arch="llama", method="gptq", group=-1, sym=False, intermediate_size=512),
    "gptq_8bit_g32_qwen2": dict(arch="qwen2", method="gptq", bits=8, group=32, sym=True, v1=False),
    "awq_gemm_g32_qwen2": dict(arch="qwen2", method="awq", group=32),
    "awq_gemm_g128_llama": dict(arch="llama", method="awq", group=128),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    spec = CASES[request.param]
    hf = tmp_path_factory.mktemp(request.param) / "hf"
    config, reference, integers = make_case(hf, seed=len(request.param), **spec)
    precision = "int8" if spec.get("bits", 4) == 8 else "int4"
    # accuracy level 0: the weights' exact products in float, so the comparison is with the reference's
    out = build(hf, hf.parent / "built", precision, "--accuracy-level", "0")
    return request.param, spec, config, reference, integers, out


def test_logits_and_tokens_match_the_dequantized_reference(case):
    name, _, config, reference, _, out = case
    assert_matches_reference(name, config, reference, out, min_steps=0)


def test_initializers_hold_the_checkpoint_integers(case):
    name, spec, config, _, integers, out = case
    bits, group = spec.get("bits", 4), spec["group"]
    tensors, nodes = initializers(out)
    act_order = spec.get("act_order", False)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        attn = [(f"self_attn.{m}",) for m in ("q_proj", "k_proj", "v_proj")] if act_order else \
            [tuple(f"self_attn.{m}" for m in ("q_proj", "k_proj", "v_proj"))]
        projections = {"attn." + (g[0].split(".")[1] if act_order else "qkv_proj"): g for g in attn}
        projections["attn.o_proj"] = ("self_attn.o_proj",)
        for m in ("gate_proj", "up_proj", "down_proj"):
            projections["mlp." + m] = ("mlp." + m,)
        for graph_name, modules in projections.items():
            base = f"model.layers.{i}.{graph_name}.MatMul.weight"
            k = integers[p + modules[0]][0].shape[1]
            q, s, z, order = expected_matmul_nbits([integers[p + m] for m in modules], bits, block_for(group, k))
            assert np.array_equal(tensors[f"{base}_Q{bits}"].reshape(q.shape), q), f"{name}: {base}_Q{bits}"
            assert np.array_equal(tensors[f"{base}_scales"], s), f"{name}: {base}_scales"
            if z is None:
                assert f"{base}_zero_points" not in tensors, name
            else:
                assert np.array_equal(tensors[f"{base}_zero_points"], z), f"{name}: {base}_zero_points"
            node = f"/model/layers.{i}/{graph_name.replace('.', '/')}/MatMul_Q{bits}"
            op, attrs = nodes[node]
            assert op == "MatMulNBits" and attrs["block_size"] == block_for(group, k) and attrs["bits"] == bits, (node, attrs)
            gather = f"model.layers.{i}.{graph_name}.MatMul.k_order"
            if np.array_equal(order, np.arange(len(order))):
                assert gather not in tensors, name
            else:
                assert np.array_equal(tensors[gather], order), name
    # embeddings, norms and the (unquantized) LM head stay float
    assert tensors["lm_head.MatMul.weight"].dtype == np.float32
    assert tensors["model.embed_tokens.weight"].dtype == np.float32


def test_default_accuracy_level_keeps_the_same_weights(case):
    name, spec, config, _, _, out = case
    precision = "int8" if spec.get("bits", 4) == 8 else "int4"
    level4 = build(out.parent / "hf", out.parent / "level4", precision)
    assert (level4 / "model.onnx.data").read_bytes() == (out / "model.onnx.data").read_bytes(), name
    ids, _ = onnxllm_greedy(level4, PROMPT, STEPS)
    assert len(ids) > len(PROMPT) and all(0 <= t < config["vocab_size"] for t in ids), ids
    reference = onnxllm_greedy(out, PROMPT, STEPS)[0]
    print(f"[{name} level 4] {sum(a == b for a, b in zip(ids, reference)) - len(PROMPT)} of {STEPS} tokens equal level 0's")


# ---- bad checkpoints ----

def rewrite(hf, change_config=None, change_tensors=None):
    config = json.loads((hf / "config.json").read_text())
    if change_config:
        change_config(config)
    (hf / "config.json").write_text(json.dumps(config))
    if change_tensors:
        raw = (hf / "model.safetensors").read_bytes()
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + size])
        types = {"F32": np.float32, "F16": np.float16, "I32": np.int32}
        tensors = {n: np.frombuffer(raw[8 + size + h["data_offsets"][0]:8 + size + h["data_offsets"][1]],
                                    dtype=types[h["dtype"]]).reshape(h["shape"]) for n, h in header.items()}
        change_tensors(tensors)
        write_safetensors(hf / "model.safetensors", tensors)


def qc(**changes):
    return lambda c: c["quantization_config"].update(changes)


BAD = {
    "bits3": (qc(bits=3), None, "quantization_config.bits 3 is not supported for gptq (4 or 8)"),
    "method": (qc(quant_method="bitsandbytes"), None,
               "quantization_config.quant_method 'bitsandbytes' is not supported (pre-quantized checkpoints: gptq, awq; mxfp4 for gpt-oss)"),
    "format": (qc(checkpoint_format="marlin"), None, "quantization_config.checkpoint_format 'marlin' is not supported"),
    "awq_bits8": (qc(quant_method="awq", bits=8), None, "quantization_config.bits 8 is not supported for awq (4)"),
    "awq_gemv": (qc(quant_method="awq", version="gemv"), None, "quantization_config.version 'gemv' is not supported"),
    "group_size": (qc(group_size=24), None, "quantization_config.group_size 24 is not a multiple of 16"),
    "shape": (None, lambda t: t.update({"model.layers.1.mlp.up_proj.qweight": t["model.layers.1.mlp.up_proj.qweight"][:, :128]}),
              "tensor 'model.layers.1.mlp.up_proj.qweight' in model.safetensors has shape [16,128], expected [16,256] "
              "from config.json (intermediate_size, hidden_size) and quantization_config (gptq, bits 4, group_size 32)"),
    "config_shape": (lambda c: c.update(intermediate_size=512), None,
                     "tensor 'model.layers.0.mlp.gate_proj.qweight' in model.safetensors has shape [16,256], expected [16,512]"),
    "qzeros": (None, lambda t: t.pop("model.layers.0.self_attn.k_proj.qzeros"),
               "the checkpoint has no tensor 'model.layers.0.self_attn.k_proj.qzeros' (expected [4,8] from config.json"),
    "g_idx": (None, lambda t: t.update({"model.layers.0.mlp.down_proj.g_idx": np.zeros(256, np.int32)}),
              "tensor 'model.layers.0.mlp.down_proj.g_idx' does not give group 0 exactly 32 rows"),
    "qweight_dtype": (None, lambda t: t.update({"model.layers.0.mlp.down_proj.qweight":
                                                t["model.layers.0.mlp.down_proj.qweight"].view(np.float32)}),
                      "tensor 'model.layers.0.mlp.down_proj.qweight' in model.safetensors has dtype F32; expected I32"),
}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_bad_checkpoints_name_what_is_wrong(tmp_path, bad):
    change_config, change_tensors, message = BAD[bad]
    hf = tmp_path / "hf"
    make_case(hf, "llama", "gptq", group=32)
    rewrite(hf, change_config, change_tensors)
    err = build_error(hf, tmp_path / "out", "-p", "int4")
    assert message in err, err


def test_precision_must_match_the_checkpoint_bits(tmp_path):
    hf = tmp_path / "hf"
    make_case(hf, "llama", "awq", group=32)
    err = build_error(hf, tmp_path / "out", "-p", "fp32")
    assert "the checkpoint is awq 4-bit (config.json quantization_config): build it with -p int4" in err, err

#!/usr/bin/python3
"""Write a random-weights Hugging Face Llama checkpoint: config.json + model.safetensors (fp32).

The default shape is Qwen2.5-0.5B's (hidden 896, intermediate 4864, 24 layers, 14 heads, 2 KV heads,
head 64, vocab 151936, tied embeddings, rope_theta 1e6, rms_norm_eps 1e-6) in the Llama architecture
(no q/k/v biases), so the same weights feed `onnxllm build -p int4|fp32` and llama.cpp's
`hf_to_gguf.py` (F32 or --q4_0). Matrices are N(0, std^2) with std 0.02, as in a trained model's
initialisation, and norm weights are 1, so activations stay far from overflow. No tokenizer is
written (benchmarks feed token ids).

usage: make_model.py OUT_DIR [--hidden 896] [--intermediate 4864] [--layers 24] [--heads 14]
                     [--kv-heads 2] [--head-dim 64] [--vocab 151936] [--context 32768]
                     [--rope-theta 1e6] [--rms-norm-eps 1e-6] [--untied] [--std 0.02] [--seed 0]
Needs only numpy (Debian's python3-numpy). Tensors are generated and written one at a time
(in chunks), so memory stays far below the file size (~2 GB for the default shape).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

CHUNK_ELEMENTS = 1 << 24  # 64 MiB of float32 at a time


def tensor_shapes(a):
    """(name, shape) in the order HF Llama checkpoints list them."""
    q_out, kv_out = a.heads * a.head_dim, a.kv_heads * a.head_dim
    shapes = [("model.embed_tokens.weight", (a.vocab, a.hidden))]
    for i in range(a.layers):
        p = f"model.layers.{i}."
        shapes += [(p + "input_layernorm.weight", (a.hidden,)),
                   (p + "self_attn.q_proj.weight", (q_out, a.hidden)),
                   (p + "self_attn.k_proj.weight", (kv_out, a.hidden)),
                   (p + "self_attn.v_proj.weight", (kv_out, a.hidden)),
                   (p + "self_attn.o_proj.weight", (a.hidden, q_out)),
                   (p + "post_attention_layernorm.weight", (a.hidden,)),
                   (p + "mlp.gate_proj.weight", (a.intermediate, a.hidden)),
                   (p + "mlp.up_proj.weight", (a.intermediate, a.hidden)),
                   (p + "mlp.down_proj.weight", (a.hidden, a.intermediate))]
    shapes.append(("model.norm.weight", (a.hidden,)))
    if not a.tied:
        shapes.append(("lm_head.weight", (a.vocab, a.hidden)))
    return shapes


def safetensors_header(shapes):
    """The JSON header (F32, tensors back to back in list order), padded with spaces to 8 bytes."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes:
        n = int(np.prod(shape)) * 4
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return text, offset


def write_safetensors(path, shapes, std, seed):
    rng = np.random.default_rng(seed)
    header, data_bytes = safetensors_header(shapes)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for name, shape in shapes:
            n = int(np.prod(shape))
            if len(shape) == 1:  # RMSNorm weights
                np.ones(n, dtype="<f4").tofile(f)
                continue
            for start in range(0, n, CHUNK_ELEMENTS):
                chunk = rng.standard_normal(min(CHUNK_ELEMENTS, n - start), dtype=np.float32)
                chunk *= np.float32(std)
                chunk.astype("<f4", copy=False).tofile(f)
        assert f.tell() == 8 + len(header) + data_bytes, "safetensors size mismatch"
    return data_bytes


def config_json(a):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.hidden,
            "intermediate_size": a.intermediate, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim, "vocab_size": a.vocab,
            "max_position_embeddings": a.context, "rope_theta": a.rope_theta, "rms_norm_eps": a.rms_norm_eps,
            "tie_word_embeddings": a.tied, "hidden_act": "silu", "bos_token_id": a.bos, "eos_token_id": a.eos,
            "torch_dtype": "float32"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=896)
    ap.add_argument("--intermediate", type=int, default=4864)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--heads", type=int, default=14)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--context", type=int, default=32768, help="max_position_embeddings")
    ap.add_argument("--rope-theta", type=float, default=1e6)
    ap.add_argument("--rms-norm-eps", type=float, default=1e-6)
    ap.add_argument("--untied", dest="tied", action="store_false", help="a separate lm_head.weight")
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bos", type=int, default=None, help="default: Qwen2.5's 151643 when inside the vocab, else 1")
    ap.add_argument("--eos", type=int, default=None, help="default: Qwen2.5's 151645 when inside the vocab, else 2")
    a = ap.parse_args()
    for name in ("hidden", "intermediate", "layers", "heads", "kv_heads", "head_dim", "vocab", "context"):
        if getattr(a, name) < 1:
            sys.exit(f"make_model: --{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    if a.heads % a.kv_heads:
        sys.exit(f"make_model: --heads {a.heads} must be a multiple of --kv-heads {a.kv_heads}")
    if a.head_dim % 2:
        sys.exit(f"make_model: --head-dim {a.head_dim} must be even (rotary pairs)")
    if not (0 < a.std < 1):
        sys.exit(f"make_model: --std must be in (0, 1), got {a.std}")
    for name, qwen, small in (("bos", 151643, 1), ("eos", 151645, 2)):
        if getattr(a, name) is None:
            setattr(a, name, qwen if qwen < a.vocab else min(small, a.vocab - 1))
        if not 0 <= getattr(a, name) < a.vocab:
            sys.exit(f"make_model: --{name} {getattr(a, name)} is outside the vocabulary [0, {a.vocab})")
    os.makedirs(a.out, exist_ok=True)
    shapes = tensor_shapes(a)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config_json(a), f, indent=2)
    data_bytes = write_safetensors(os.path.join(a.out, "model.safetensors"), shapes, a.std, a.seed)
    params = sum(int(np.prod(s)) for _, s in shapes)
    print(f"wrote {a.out}: {len(shapes)} tensors, {params / 1e6:.1f} M parameters, {data_bytes / 2**20:.0f} MiB fp32")


if __name__ == "__main__":
    main()

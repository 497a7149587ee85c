"""`onnxllm build -i model.gguf`: GGUF files (llama.cpp's format) built into model folders.

- stories260K converted by ../shared/tools/llamacpp/hf_to_gguf.py (F32) generates the folder's
  exact expected greedy text; with its real SentencePiece vocabulary written into the GGUF, the
  tokenizer the builder makes from it does too (no --tokenizer).
- Random-weight Llama / Qwen2 GGUFs written here (gguf_writer.py) with Q8_0, Q4_0, Q4_K, Q6_K and
  F16 tensors match a NumPy forward pass over the dequantized blocks (the reference of
  test_builder_families.py): logits close at every step, greedy tokens equal.
- The F32 and Q4_0 stories GGUFs match llama.cpp's greedy tokens (skips when llama.cpp is not set
  up: ONNXLLM_LLAMACPP_DIR, else BUILD/llamacpp from `make llamacpp`).
- Bad files are clear errors naming what is wrong.
"""

import json
import os
import pathlib
import shutil
import struct
import subprocess

import numpy as np
import pytest

from conftest import CLI, SHARED_DIR, SOURCE_DIR, shared
from gguf_writer import (ARR, BOOL, F32, GGML_F16, GGML_F32, GGML_MXFP4, GGML_Q4_0, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K,
                         GGML_Q8_0, I32, QUANTIZERS, STR, U32, Gguf, hf_to_meta_rows, mxfp4, requantize_asym4)
from test_builder_families import decoder_forward, onnxllm_greedy
from test_builder_prequant import write_safetensors

# llama.cpp: ONNXLLM_LLAMACPP_DIR, else `make llamacpp`'s copy in the CLI's build folder, else build/llamacpp.
LLAMACPP_DIR = pathlib.Path(os.environ.get("ONNXLLM_LLAMACPP_DIR") or next(
    (p for p in (CLI.parent.parent / "llamacpp", SOURCE_DIR / "build/llamacpp") if p.exists()),
    SOURCE_DIR / "build/llamacpp"))
HF_TO_GGUF = SHARED_DIR / "tools/llamacpp/hf_to_gguf.py"


def cli(*args, check=True):
    r = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def one_thread(out):
    config_path = out / "genai_config.json"
    config = json.loads(config_path.read_text())
    config["model"]["decoder"].setdefault("session_options", {})["intra_op_num_threads"] = 1
    config_path.write_text(json.dumps(config, indent=2))
    return out


def build(gguf, out, *extra):
    cli("build", "-i", gguf, "-o", out, "-q", "--overwrite", *extra)
    return one_thread(out)


def hf_to_gguf(hf_dir, out, *flags):
    if not HF_TO_GGUF.exists():
        pytest.skip(f"../shared not found ({HF_TO_GGUF})")
    subprocess.run(["/usr/bin/python3", str(HF_TO_GGUF), str(hf_dir), str(out), *flags], check=True,
                   capture_output=True, text=True)
    return out


def greedy_text(model_dir, steps=200):
    """Greedy text from BOS alone, as expected_greedy_200.txt was made."""
    r = cli("generate", "-m", model_dir, "--ids", "1", "-n", steps, "--no-timings")
    return r.stdout


# ---- SentencePiece tokenizer.model pieces (protobuf wire format, just what a vocabulary needs) ----

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def sentencepiece_pieces(path):
    """[(piece, score, type)] of a tokenizer.model."""
    b, i, pieces = path.read_bytes(), 0, []
    while i < len(b):
        tag, i = _varint(b, i)
        field, wire = tag >> 3, tag & 7
        if wire == 2:
            n, i = _varint(b, i)
            body, i = b[i:i + n], i + n
            if field == 1:
                j, piece, score, ptype = 0, "", 0.0, 1
                while j < len(body):
                    t, j = _varint(body, j)
                    if t >> 3 == 1:
                        n2, j = _varint(body, j)
                        piece, j = body[j:j + n2].decode("utf-8"), j + n2
                    elif t >> 3 == 2:
                        score, j = struct.unpack("<f", body[j:j + 4])[0], j + 4
                    elif t >> 3 == 3:
                        ptype, j = _varint(body, j)
                pieces.append((piece, score, ptype))
        elif wire == 0:
            _, i = _varint(b, i)
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
    return pieces


def replace_vocabulary(src, dst, pieces, add_bos):
    """Rewrites hf_to_gguf's GGUF with a real vocabulary: the metadata is re-serialized here and the
    tensor infos and data are copied as they are (the data section moves to the new alignment)."""
    data = src.read_bytes()
    pos = 4

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def skip_string():
        nonlocal pos
        n = take("<Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode()

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_value(t):
        nonlocal pos
        if t == 8:
            skip_string()
        elif t == 9:
            et, n = take("<I"), take("<Q")
            for _ in range(n):
                skip_value(et)
        else:
            pos += sizes[t]

    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    kept = []
    for _ in range(n_kv):
        start = pos
        key = skip_string()
        t = take("<I")
        skip_value(t)
        if not key.startswith("tokenizer."):
            kept.append(data[start:pos])
    infos_start = pos
    for _ in range(n_tensors):
        skip_string()
        nd = take("<I")
        pos += 8 * nd + 12
    infos = data[infos_start:pos]
    old_data = data[pos + (-pos) % 32:]
    g = Gguf()
    g.add("tokenizer.ggml.model", STR, "llama")
    g.add("tokenizer.ggml.tokens", ARR, (STR, [p for p, _, _ in pieces]))
    g.add("tokenizer.ggml.scores", ARR, (F32, [s for _, s, _ in pieces]))
    g.add("tokenizer.ggml.token_type", ARR, (I32, [t for _, _, t in pieces]))
    g.add("tokenizer.ggml.bos_token_id", U32, 1)
    g.add("tokenizer.ggml.eos_token_id", U32, 2)
    g.add("tokenizer.ggml.unknown_token_id", U32, 0)
    g.add("tokenizer.ggml.add_bos_token", BOOL, add_bos)
    g.add("tokenizer.chat_template", STR, "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    from gguf_writer import value_bytes, gguf_string
    kv = b"".join(kept) + b"".join(gguf_string(k) + struct.pack("<I", t) + value_bytes(t, v) for k, t, v in g.kv)
    head = b"GGUF" + struct.pack("<IQQ", version, n_tensors, len(kept) + len(g.kv)) + kv + infos
    dst.write_bytes(head + b"\0" * ((-len(head)) % 32) + old_data)
    return dst


# ---- stories260K through hf_to_gguf.py ----

@pytest.fixture(scope="module")
def stories_hf():
    return shared("models/stories260K-hf")


@pytest.fixture(scope="module")
def stories_f32(stories_hf, tmp_path_factory):
    return hf_to_gguf(stories_hf, tmp_path_factory.mktemp("gguf") / "stories-f32.gguf")


@pytest.fixture(scope="module")
def stories_q4_0(stories_hf, tmp_path_factory):
    return hf_to_gguf(stories_hf, tmp_path_factory.mktemp("gguf") / "stories-q4_0.gguf", "--q4_0")


def test_f32_gguf_generates_the_expected_text(stories_f32, stories_hf, tmp_path):
    out = build(stories_f32, tmp_path / "m", "--tokenizer", stories_hf)
    assert greedy_text(out) == (stories_hf / "expected_greedy_200.txt").read_text() + "\n"
    config = json.loads((out / "genai_config.json").read_text())
    assert config["model"]["type"] == "llama" and config["model"]["context_length"] == 512


def test_gguf_vocabulary_becomes_a_working_tokenizer(stories_f32, stories_hf, tmp_path):
    pieces = sentencepiece_pieces(stories_hf / "tokenizer.model")
    assert len(pieces) == 512
    gguf = replace_vocabulary(stories_f32, tmp_path / "vocab.gguf", pieces, add_bos=True)
    out = build(gguf, tmp_path / "m")
    assert (out / "tokenizer.model").exists()
    assert greedy_text(out) == (stories_hf / "expected_greedy_200.txt").read_text() + "\n"
    # The same ids as the original tokenizer, and the chat template carried over.
    text = "Once upon a time, there was a little girl named Lily."
    ref = cli("tokenize", "--tokenizer", stories_hf, "--text", text).stdout
    assert cli("tokenize", "--tokenizer", out, "--text", text).stdout == ref
    assert "chat_template" in json.loads((out / "tokenizer_config.json").read_text())
    chat = cli("generate", "-m", out, "--chat", "Hi", "-n", "5", "--no-timings")
    assert chat.returncode == 0


def test_q4_0_gguf_keeps_its_blocks(stories_q4_0, tmp_path):
    out = build(stories_q4_0, tmp_path / "m", "--tokenizer", shared("models/stories260K-hf"))
    info = json.loads(cli("info", "-m", out, "--json").stdout)
    text = json.dumps(info)
    assert "MatMulNBits" in text and "MatMul" in text  # Q4_0 projections; ffn_down (K=172) stays F32
    ids = [int(x) for x in cli("generate", "-m", out, "--ids", "1,2,3", "-n", 20, "--print-ids",
                               "--no-timings").stdout.split(";")[0].split(",")]
    assert len(ids) == 23


def llamacpp_greedy(gguf, prompt, n):
    if not (LLAMACPP_DIR / "node_modules/node-llama-cpp/package.json").exists():
        pytest.skip(f"llama.cpp is not set up in {LLAMACPP_DIR} (run `make llamacpp`, or set ONNXLLM_LLAMACPP_DIR "
                    "to a copy of ../shared/tools/llamacpp after `npm ci`; see its README)")
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    r = subprocess.run(["node", str(LLAMACPP_DIR / "bench.mjs"), str(gguf), "--prompt", ",".join(map(str, prompt)),
                        "--n", str(n), "--threads", "1"], capture_output=True, text=True, cwd=LLAMACPP_DIR,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return [int(x) for x in r.stdout.strip().splitlines()[-1].replace(";", ",").split(",") if x.strip()]


def onnxllm_ids(model_dir, prompt, n):
    r = cli("generate", "-m", model_dir, "--ids", ",".join(map(str, prompt)), "-n", n, "--print-ids", "--no-timings")
    return [int(x) for x in r.stdout.strip().split(",")]


@pytest.mark.parametrize("flavour", ["f32", "q4_0"])
def test_matches_llamacpp_greedy(flavour, stories_f32, stories_q4_0, stories_hf, tmp_path):
    gguf = stories_f32 if flavour == "f32" else stories_q4_0
    prompt, n = [1, 2, 3], 20
    ref = llamacpp_greedy(gguf, prompt, n)
    out = build(gguf, tmp_path / "m", "--tokenizer", stories_hf)
    got = onnxllm_ids(out, prompt, n)
    assert got[len(prompt):][:n] == ref[-n:], (got, ref)


# ---- random-weight GGUFs against the NumPy reference ----

def llama_like(arch="llama", **overrides):
    c = {"architectures": ["LlamaForCausalLM"], "model_type": arch, "hidden_size": 256, "intermediate_size": 512,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
         "max_position_embeddings": 128, "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
    c.update(overrides)
    return c


def random_gguf(path, c, types, seed=0, bias=False, requantized=False, byte_tokens=False, layer_std=0.1, extra=()):
    """A GGUF of random weights; `types` maps a role (attn, ffn_gate, ffn_up, ffn_down, output, embd) to a
    ggml type. Returns the Hugging Face tensors the file dequantizes to (the reference's weights).
    `byte_tokens`: the vocabulary holds SentencePiece's 256 byte tokens (llama.cpp looks up <0x0A>);
    `layer_std`: the projections' scale; `extra`: more (key, type, value) metadata under the arch's prefix."""
    rng = np.random.default_rng(seed)
    arch, d, inter, v = c["model_type"], c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = d // nh
    g = Gguf()
    g.add("general.architecture", STR, arch)
    g.add("general.alignment", U32, 32)
    for key, value in (("context_length", c["max_position_embeddings"]), ("embedding_length", d),
                       ("block_count", c["num_hidden_layers"]), ("feed_forward_length", inter),
                       ("attention.head_count", nh), ("attention.head_count_kv", nkv), ("rope.dimension_count", hd)):
        g.add(f"{arch}.{key}", U32, value)
    g.add(f"{arch}.rope.freq_base", F32, c["rope_theta"])
    g.add(f"{arch}.attention.layer_norm_rms_epsilon", F32, c["rms_norm_eps"])
    for key, t, value in extra:
        g.add(f"{arch}.{key}", t, value)
    g.add("tokenizer.ggml.model", STR, "llama")
    nb = 256 if byte_tokens else 0
    g.add("tokenizer.ggml.tokens", ARR, (STR, ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(nb)] +
                                         [f"\u2581t{i}" for i in range(3 + nb, v)]))
    g.add("tokenizer.ggml.scores", ARR, (F32, [0.0] * v))
    g.add("tokenizer.ggml.token_type", ARR, (I32, [2, 3, 3] + [6] * nb + [1] * (v - 3 - nb)))
    g.add("tokenizer.ggml.bos_token_id", U32, 1)
    g.add("tokenizer.ggml.eos_token_id", U32, 2)
    hf = {}
    permute = arch in ("llama", "granite", "smollm3", "olmo")  # llama.cpp's interleaved rotary

    def add(gname, hname, w, ttype, heads=None):
        if w.ndim == 1:
            ttype = GGML_F32
        data, deq = QUANTIZERS[ttype](w if w.ndim == 2 else w[None, :])
        deq = deq.reshape(w.shape)
        if heads and permute:  # the file holds llama.cpp's row order; the reference keeps HF's
            data, _ = QUANTIZERS[ttype](hf_to_meta_rows(w, heads) if w.ndim == 2 else hf_to_meta_rows(w, heads)[None])
        g.tensor(gname, list(reversed(w.shape)), ttype, data)
        if requantized and ttype == GGML_Q4_K and gname != "token_embd.weight":  # a MatMul weight: requantized
            deq = requantize_asym4(deq)
        hf[hname] = deq.astype(np.float32)

    def normal(*shape, std=layer_std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.5), types.get("embd", GGML_F32))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d), GGML_F32)
        for gn, hn, rows, heads in (("attn_q", "q_proj", nh * hd, nh), ("attn_k", "k_proj", nkv * hd, nkv),
                                    ("attn_v", "v_proj", nkv * hd, None)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d), types.get("attn", GGML_F32), heads)
            if bias:
                add(b + gn + ".bias", p + f"self_attn.{hn}.bias", normal(rows), GGML_F32, heads)
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd), types.get("attn", GGML_F32))
        add(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d), GGML_F32)
        add(b + "ffn_gate.weight", p + "mlp.gate_proj.weight", normal(inter, d), types.get("ffn_gate", GGML_F32))
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight", normal(inter, d), types.get("ffn_up", GGML_F32))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter), types.get("ffn_down", GGML_F32))
    add("output_norm.weight", "model.norm.weight", 1 + normal(d), GGML_F32)
    if not c["tie_word_embeddings"]:
        add("output.weight", "lm_head.weight", normal(v, d, std=0.5), types.get("output", GGML_F32))
    g.write(path)
    return hf, g


PROMPT, STEPS = [1, 17, 42, 99, 5], 12
CASES = {
    "q8_0": dict(types={"attn": GGML_Q8_0, "ffn_gate": GGML_Q8_0, "ffn_up": GGML_Q8_0, "ffn_down": GGML_Q8_0,
                        "output": GGML_Q8_0}),
    "q4_0": dict(types={"attn": GGML_Q4_0, "ffn_gate": GGML_Q4_0, "ffn_up": GGML_Q4_0, "ffn_down": GGML_Q4_0,
                        "output": GGML_Q4_0, "embd": GGML_Q4_0}),
    "mixed": dict(types={"attn": GGML_Q8_0, "ffn_gate": GGML_Q4_0, "ffn_up": GGML_Q6_K, "ffn_down": GGML_Q6_K,
                         "output": GGML_Q6_K, "embd": GGML_F16}),
    # Q4_K has no exact MatMulNBits form: -p fp32 checks its dequantization alone; the default build
    # requantizes it to asymmetric 4-bit blocks of 32 (the reference does the same to the dequantized values).
    "q4_k-fp32": dict(types={"attn": GGML_Q4_K, "ffn_gate": GGML_Q4_K, "ffn_up": GGML_Q4_K, "ffn_down": GGML_Q4_K,
                             "output": GGML_Q4_K, "embd": GGML_Q4_K}, args=("-p", "fp32")),
    "q4_k": dict(types={"attn": GGML_Q4_K, "ffn_gate": GGML_Q4_K, "ffn_up": GGML_Q4_K, "ffn_down": GGML_Q4_K,
                        "output": GGML_Q4_K}, requantized=True),
    "q4_0-tied": dict(types={"attn": GGML_Q4_0, "ffn_gate": GGML_Q4_0, "ffn_up": GGML_Q4_0, "ffn_down": GGML_Q4_0,
                             "embd": GGML_Q4_0}, tie=True),
    "qwen2-bias": dict(types={"attn": GGML_Q8_0, "ffn_gate": GGML_Q4_0, "ffn_up": GGML_Q4_0, "ffn_down": GGML_Q8_0,
                              "output": GGML_Q4_0}, arch="qwen2", bias=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_quantized_gguf_matches_the_numpy_reference(case, tmp_path):
    spec = CASES[case]
    c = llama_like(spec.get("arch", "llama"), tie_word_embeddings=spec.get("tie", False))
    hf, _ = random_gguf(tmp_path / "m.gguf", c, spec["types"], bias=spec.get("bias", False),
                        requantized=spec.get("requantized", False))
    # accuracy level 1: MatMulNBits in float32 over the stored blocks, so only float rounding differs.
    out = build(tmp_path / "m.gguf", tmp_path / "m", "--accuracy-level", "1", *spec.get("args", ()))
    ids, logits = onnxllm_greedy(out, PROMPT, STEPS)
    ref_logits = decoder_forward(c, hf, ids[:-1])
    for step, got in enumerate(logits):
        ref = ref_logits[len(PROMPT) - 1 + step]
        np.testing.assert_allclose(got, ref, atol=2e-3 * np.abs(ref).max(), err_msg=f"{case} step {step}")
    assert ids[len(PROMPT):] == [int(np.argmax(ref_logits[len(PROMPT) - 1 + s])) for s in range(STEPS)]
    ops = cli("info", "-m", out, "--json").stdout
    assert ("MatMulNBits" in ops) == ("-p" not in spec.get("args", ())), ops[:2000]


def arch_gguf(arch, c, extra=(), rotary_dim=None, layer_norm=False):
    """The metadata of an `arch` file for config `c` (plus `extra` (key, type, value) under the arch's
    prefix; `rotary_dim` when not the head size; LayerNorm's epsilon key with `layer_norm`) and a
    SentencePiece vocabulary with the 256 byte tokens llama.cpp looks up."""
    d, v, nh = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    g = Gguf()
    g.add("general.architecture", STR, arch)
    g.add("general.alignment", U32, 32)
    for key, value in (("context_length", c["max_position_embeddings"]), ("embedding_length", d),
                       ("block_count", c["num_hidden_layers"]), ("feed_forward_length", c["intermediate_size"]),
                       ("attention.head_count", nh), ("attention.head_count_kv", c["num_key_value_heads"]),
                       ("rope.dimension_count", rotary_dim or d // nh)):
        g.add(f"{arch}.{key}", U32, value)
    g.add(f"{arch}.rope.freq_base", F32, c["rope_theta"])
    g.add(f"{arch}.attention." + ("layer_norm_epsilon" if layer_norm else "layer_norm_rms_epsilon"), F32,
          c["rms_norm_eps"])
    for key, t, value in extra:
        g.add(f"{arch}.{key}", t, value)
    g.add("tokenizer.ggml.model", STR, "llama")
    g.add("tokenizer.ggml.tokens", ARR, (STR, ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] +
                                         [f"\u2581t{i}" for i in range(259, v)]))
    g.add("tokenizer.ggml.scores", ARR, (F32, [0.0] * v))
    g.add("tokenizer.ggml.token_type", ARR, (I32, [2, 3, 3] + [6] * 256 + [1] * (v - 259)))
    g.add("tokenizer.ggml.bos_token_id", U32, 1)
    g.add("tokenizer.ggml.eos_token_id", U32, 2)
    return g


def gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, norm_offset=0.0, distinct=4):
    """Builds the GGUF and a Hugging Face folder holding `hf` (norm weights minus `norm_offset`, which
    llama.cpp's converter added) under `config`: the same logits and greedy ids, at least `distinct`
    different new ids, and llama.cpp's greedy ids on the file. Returns the GGUF build."""
    g.write(tmp_path / "m.gguf")
    from_gguf = build(tmp_path / "m.gguf", tmp_path / "from-gguf", "-p", "fp32")
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(config, bos_token_id=1, eos_token_id=2)))
    write_safetensors(folder / "model.safetensors",
                      {k: (v - norm_offset if k.endswith("norm.weight") else v).astype(np.float32) for k, v in hf.items()})
    from_hf = tmp_path / "from-hf"
    cli("build", "-i", str(folder), "-o", str(from_hf), "-p", "fp32", "--tokenizer", str(from_gguf), "-q")
    ids, logits = onnxllm_greedy(from_gguf, PROMPT, STEPS)
    ref_ids, ref_logits = onnxllm_greedy(from_hf, PROMPT, STEPS)
    assert ids == ref_ids
    for step, (got, ref) in enumerate(zip(logits, ref_logits)):
        np.testing.assert_allclose(got, ref, atol=1e-4 * np.abs(ref).max(), err_msg=f"step {step}")
    assert len(set(ids[len(PROMPT):])) >= distinct, ids  # a sequence that says something about the weights
    ref = llamacpp_greedy(tmp_path / "m.gguf", PROMPT, STEPS)
    assert ids[len(PROMPT):] == ref[-STEPS:], (ids, ref)
    return from_gguf


def f32_tensors(g, rng):
    """add(gguf name, HF name, array) writing F32 tensors into g, and normal(*shape, std); the HF tensors."""
    hf = {}

    def add(gname, hname, w):
        g.tensor(gname, list(reversed(w.shape)), GGML_F32, w.astype("<f4").tobytes())
        hf[hname] = w

    def normal(*shape, std=0.6):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    return add, normal, hf


def stacked_experts(g, hf, w, gname, hname, drop_last=False):
    """w [experts, rows, cols] as one F32 GGUF tensor and one HF tensor per expert (hname's {} is its
    index); with drop_last the file holds one expert fewer than the HF side asks for."""
    stored = w[:-1] if drop_last else w
    g.tensor(gname, [w.shape[2], w.shape[1], len(stored)], GGML_F32, stored.astype("<f4").tobytes())
    for e in range(len(w)):
        hf[hname.format(e)] = w[e]


def begin_file(arch, c, seed, **gguf_args):
    """arch_gguf(arch, c, **gguf_args) with the F32 adder of f32_tensors and the token embedding written."""
    g = arch_gguf(arch, c, **gguf_args)
    add, normal, hf = f32_tensors(g, np.random.default_rng(seed))
    add("token_embd.weight", "model.embed_tokens.weight", normal(c["vocab_size"], c["hidden_size"], std=0.5))
    return g, add, normal, hf


def local_windows(model_dir):
    import onnx
    return [onnx.helper.get_attribute_value(a) for n in onnx.load(model_dir / "model.onnx", load_external_data=False).graph.node
            for a in n.attribute if a.name == "local_window_size"]


def test_gemma_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'gemma' architecture: RMSNorm weights stored as 1 + w (its converter adds the 1 that
    Hugging Face's Gemma adds at run time), GeLU-tanh gated MLP, NeoX rotary (rows in Hugging Face's order),
    embeddings scaled by sqrt(hidden), tied LM head."""
    c = llama_like("gemma", tie_word_embeddings=True, vocab_size=320)
    hf, g = random_gguf(tmp_path / "g.gguf", c, {}, byte_tokens=True, layer_std=0.6)  # F32: llama.cpp computes in float
    config = dict(c, architectures=["GemmaForCausalLM"], hidden_activation="gelu_pytorch_tanh",
                  head_dim=c["hidden_size"] // c["num_attention_heads"])
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, norm_offset=1.0)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "gemma"


def test_granite_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'granite': a Llama layer (q/k rows permuted for the interleaved rotary) with GraniteConfig's
    four multipliers under llama.cpp's names (embedding_scale, residual_scale, attention.scale, logit_scale)."""
    c = llama_like("granite", vocab_size=320)
    scales = {"embedding_multiplier": 3.0, "residual_multiplier": 0.5, "attention_multiplier": 0.2, "logits_scaling": 4.0}
    hf, g = random_gguf(tmp_path / "g.gguf", c, {}, byte_tokens=True, layer_std=0.6,
                        extra=[("embedding_scale", F32, 3.0), ("residual_scale", F32, 0.5),
                               ("attention.scale", F32, 0.2), ("logit_scale", F32, 4.0)])
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["GraniteForCausalLM"], **scales))
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "granite"


@pytest.mark.parametrize("arch", ["qwen2moe", "qwen3moe", "qwen3moe-short"])
def test_qwen_moe_gguf_matches_the_hf_build_and_llamacpp(arch, tmp_path):
    """llama.cpp's Qwen MoEs: the router ffn_gate_inp, each expert a slice of the stacked ffn_{gate,up,down}_exps
    ([experts, rows, cols]); Qwen2-MoE with q/k/v biases, unnormalized top-k weights and a shared expert
    gated by ffn_gate_inp_shexp (a vector in the file, [1, hidden] in the checkpoint); Qwen3-MoE with q/k
    norms and renormalized weights. "qwen3moe-short": a stacked tensor with one expert too few is an error
    naming it."""
    short = arch.endswith("-short")
    arch = arch.removesuffix("-short")
    qwen2 = arch == "qwen2moe"
    e_n, k, moe_inter, shared = 4, 2, 64, 96
    c = llama_like(arch, vocab_size=320)
    d, v, nh, nkv = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = d // nh
    extra = [("expert_count", U32, e_n), ("expert_used_count", U32, k), ("expert_feed_forward_length", U32, moe_inter)]
    if qwen2:
        extra.append(("expert_shared_feed_forward_length", U32, shared))
    g = arch_gguf(arch, c, extra)
    add, normal, hf = f32_tensors(g, np.random.default_rng(11))

    def stacked(gname, hname, rows, cols):
        stacked_experts(g, hf, normal(e_n, rows, cols, std=0.3), gname, hname,
                        drop_last=short and "gate_exps" in gname)

    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.5))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d, std=0.1))
        for gn, hn, rows in (("attn_q", "q_proj", nh * hd), ("attn_k", "k_proj", nkv * hd), ("attn_v", "v_proj", nkv * hd)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d, std=0.1))
            if qwen2:
                add(b + gn + ".bias", p + f"self_attn.{hn}.bias", normal(rows, std=0.1))
        if not qwen2:
            add(b + "attn_q_norm.weight", p + "self_attn.q_norm.weight", 1 + normal(hd, std=0.1))
            add(b + "attn_k_norm.weight", p + "self_attn.k_norm.weight", 1 + normal(hd, std=0.1))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "ffn_gate_inp.weight", p + "mlp.gate.weight", normal(e_n, d, std=0.5))
        stacked(b + "ffn_gate_exps.weight", p + "mlp.experts.{}.gate_proj.weight", moe_inter, d)
        stacked(b + "ffn_up_exps.weight", p + "mlp.experts.{}.up_proj.weight", moe_inter, d)
        stacked(b + "ffn_down_exps.weight", p + "mlp.experts.{}.down_proj.weight", d, moe_inter)
        if qwen2:
            add(b + "ffn_gate_shexp.weight", p + "mlp.shared_expert.gate_proj.weight", normal(shared, d, std=0.3))
            add(b + "ffn_up_shexp.weight", p + "mlp.shared_expert.up_proj.weight", normal(shared, d, std=0.3))
            add(b + "ffn_down_shexp.weight", p + "mlp.shared_expert.down_proj.weight", normal(d, shared))
            gate = normal(d, std=0.3)
            g.tensor(b + "ffn_gate_inp_shexp.weight", [d], GGML_F32, gate.astype("<f4").tobytes())
            hf[p + "mlp.shared_expert_gate.weight"] = gate[None, :]
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    config = dict(c, architectures=["Qwen2MoeForCausalLM" if qwen2 else "Qwen3MoeForCausalLM"], num_experts=e_n,
                  num_experts_per_tok=k, moe_intermediate_size=moe_inter, norm_topk_prob=not qwen2, head_dim=hd)
    if qwen2:
        config["shared_expert_intermediate_size"] = shared
    if short:
        g.write(tmp_path / "short.gguf")
        err = build_error(tmp_path, (tmp_path / "short.gguf").read_bytes())
        assert "tensor 'blk.0.ffn_gate_exps.weight' holds 3 experts, expert 3 was asked for" in err, err
        return
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config)
    ops = {o["op"] for o in json.loads(cli("info", "-m", out, "--json").stdout)["ops"]}
    assert "com.microsoft.MoE" in ops, ops


def test_mixtral_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp converts Mixtral as 'llama' plus llama.expert_count / expert_used_count: q/k rows permuted
    as for llama, the router ffn_gate_inp, experts w1 / w3 / w2 as slices of the stacked ffn_gate_exps /
    ffn_up_exps / ffn_down_exps ([experts, rows, cols]), each feed_forward_length wide. llama.cpp
    renormalizes the top-k weights, as MixtralSparseMoeBlock does."""
    e_n, k = 4, 2
    c = llama_like("llama", vocab_size=320, intermediate_size=128)
    d, inter, v, nh, nkv = (c[key] for key in ("hidden_size", "intermediate_size", "vocab_size",
                                               "num_attention_heads", "num_key_value_heads"))
    hd = d // nh
    g = arch_gguf("llama", c, [("expert_count", U32, e_n), ("expert_used_count", U32, k)])
    add, normal, hf = f32_tensors(g, np.random.default_rng(29))

    def stacked(gname, hname, rows, cols):
        stacked_experts(g, hf, normal(e_n, rows, cols, std=0.3), gname, hname)

    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.5))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d, std=0.1))
        for gn, hn, rows, heads in (("attn_q", "q_proj", nh * hd, nh), ("attn_k", "k_proj", nkv * hd, nkv),
                                    ("attn_v", "v_proj", nkv * hd, None)):
            w = normal(rows, d, std=0.1)
            stored = hf_to_meta_rows(w, heads) if heads else w  # the file holds llama.cpp's row order
            g.tensor(b + gn + ".weight", [d, rows], GGML_F32, stored.astype("<f4").tobytes())
            hf[p + f"self_attn.{hn}.weight"] = w
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d, std=0.1))
        # A mild router: the two chosen experts' softmax weights sum well below 1, so renormalizing them
        # changes the tokens (unnormalized routing on this file leaves llama.cpp's ids at the third step).
        add(b + "ffn_gate_inp.weight", p + "block_sparse_moe.gate.weight", normal(e_n, d, std=0.05))
        stacked(b + "ffn_gate_exps.weight", p + "block_sparse_moe.experts.{}.w1.weight", inter, d)
        stacked(b + "ffn_up_exps.weight", p + "block_sparse_moe.experts.{}.w3.weight", inter, d)
        stacked(b + "ffn_down_exps.weight", p + "block_sparse_moe.experts.{}.w2.weight", d, inter)
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    config = dict(c, architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=e_n,
                  num_experts_per_tok=k)
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config)
    genai = json.loads((out / "genai_config.json").read_text())
    assert genai["model"]["type"] == "mistral", genai["model"]["type"]
    ops = {o["op"] for o in json.loads(cli("info", "-m", out, "--json").stdout)["ops"]}
    assert "com.microsoft.MoE" in ops, ops


@pytest.mark.parametrize("form", ["f32", "mxfp4", "mismatched"])
def test_gpt_oss_gguf_matches_the_hf_build_and_llamacpp(form, tmp_path):
    """llama.cpp's 'gpt-oss': q/k/v/o biases, attn_sinks, post_attention_norm before the MoE, a router
    (ffn_gate_inp) with a bias, gate / up / down experts split into ffn_{gate,up,down}_exps with biases
    (the converter de-interleaves gpt-oss's gate_up_proj), every other layer sliding
    (attention.sliding_window), YaRN, and its fixed SwiGLU clamp of 7. "mxfp4": the experts in MXFP4 as
    OpenAI's files are converted, against the HF build of exactly the values they dequantize to.
    "mismatched": an up tensor narrower than its gate is an error naming both."""
    e_n, k, inter = 4, 2, 64
    c = llama_like("gpt-oss", vocab_size=320, rope_theta=150000.0)
    d, v, nh, nkv = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = d // nh
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
            "beta_slow": 1.0, "truncate": True}
    g = arch_gguf("gpt-oss", c, [("expert_count", U32, e_n), ("expert_used_count", U32, k),
                                 ("expert_feed_forward_length", U32, inter), ("attention.sliding_window", U32, 4),
                                 ("attention.key_length", U32, hd), ("attention.value_length", U32, hd),
                                 ("rope.scaling.type", STR, "yarn"), ("rope.scaling.factor", F32, 32.0),
                                 ("rope.scaling.original_context_length", U32, 4096)])
    # llama.cpp multiplies MXFP4 weights with Q8_0-quantized activations (vec_dot_mxfp4_q8_0), so the
    # MXFP4 file's seed keeps its greedy steps clear of near-ties (with seed 31 step 0's two best
    # logits were 22.1385 and 22.1323, and llama.cpp took the second).
    add, normal, hf = f32_tensors(g, np.random.default_rng(37 if form == "mxfp4" else 31))

    def expert_tensor(name, rows, cols):
        """[E, rows, cols] in the file (F32 or MXFP4); returns the values it holds."""
        w = normal(e_n, rows, cols, std=0.3)
        if form == "mxfp4":
            data, w = mxfp4(w.reshape(e_n * rows, cols))
            g.tensor(name, [cols, rows, e_n], GGML_MXFP4, data)
            return w.reshape(e_n, rows, cols)
        g.tensor(name, [cols, rows, e_n], GGML_F32, w.astype("<f4").tobytes())
        return w

    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.5))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d, std=0.1))
        for gn, hn, rows in (("attn_q", "q_proj", nh * hd), ("attn_k", "k_proj", nkv * hd), ("attn_v", "v_proj", nkv * hd)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d, std=0.1))
            add(b + gn + ".bias", p + f"self_attn.{hn}.bias", normal(rows, std=0.1))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "attn_output.bias", p + "self_attn.o_proj.bias", normal(d, std=0.1))
        sinks = normal(nh, std=1.0)
        g.tensor(b + "attn_sinks.weight", [nh], GGML_F32, sinks.astype("<f4").tobytes())
        hf[p + "self_attn.sinks"] = sinks
        add(b + "post_attention_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "ffn_gate_inp.weight", p + "mlp.router.weight", normal(e_n, d, std=0.3))
        add(b + "ffn_gate_inp.bias", p + "mlp.router.bias", normal(e_n, std=0.3))
        gate = expert_tensor(b + "ffn_gate_exps.weight", inter, d)
        up = expert_tensor(b + "ffn_up_exps.weight", inter // 2 if form == "mismatched" else inter, d)
        down = expert_tensor(b + "ffn_down_exps.weight", d, inter)
        gate_b, up_b, down_b = normal(e_n, inter, std=0.3), normal(e_n, inter, std=0.3), normal(e_n, d, std=0.1)
        for name, bias in (("ffn_gate_exps", gate_b), ("ffn_up_exps", up_b), ("ffn_down_exps", down_b)):
            g.tensor(b + name + ".bias", list(reversed(bias.shape)), GGML_F32, bias.astype("<f4").tobytes())
        if form == "mismatched":
            continue
        # GptOssExperts' layout: gate and up in alternate columns of [E, hidden, 2 x inter].
        gate_up = np.empty((e_n, d, 2 * inter), np.float32)
        gate_up[..., 0::2], gate_up[..., 1::2] = gate.transpose(0, 2, 1), up.transpose(0, 2, 1)
        gate_up_b = np.empty((e_n, 2 * inter), np.float32)
        gate_up_b[:, 0::2], gate_up_b[:, 1::2] = gate_b, up_b
        hf[p + "mlp.experts.gate_up_proj"], hf[p + "mlp.experts.gate_up_proj_bias"] = gate_up, gate_up_b
        hf[p + "mlp.experts.down_proj"] = down.transpose(0, 2, 1).copy()
        hf[p + "mlp.experts.down_proj_bias"] = down_b
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    if form == "mismatched":
        err = build_error(tmp_path, g.to_bytes())
        assert "tensors 'blk.0.ffn_gate_exps.weight' and 'blk.0.ffn_up_exps.weight' differ in shape" in err, err
        return
    config = dict(c, architectures=["GptOssForCausalLM"], model_type="gpt_oss", num_local_experts=e_n,
                  num_experts_per_tok=k, intermediate_size=inter, head_dim=hd, sliding_window=4,
                  attention_bias=True, swiglu_limit=7.0, rope_scaling=yarn)
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config)
    genai = json.loads((out / "genai_config.json").read_text())
    assert genai["model"]["type"] == "gptoss", genai["model"]["type"]
    assert local_windows(out) == [4, -1], local_windows(out)


@pytest.mark.parametrize("layout", ["separate", "packed", "packed-q8"])
def test_phi2_gguf_matches_the_hf_build_and_llamacpp(layout, tmp_path):
    """llama.cpp's 'phi2' (the tutorial's model family): LayerNorm with bias, q/k/v, dense, fc1, fc2 and the
    LM head all with biases, attention and MLP in parallel on one norm, gelu_new, half of each head rotated
    (rope.dimension_count) with NeoX rotary. "packed": q/k/v as one attn_qkv tensor (rows q, k, v), as the
    2023 conversions wrote them; "packed-q8": the same in Q8_0, kept as MatMulNBits blocks (each part's
    rows read from its offset) against the float build."""
    c = llama_like("phi2", vocab_size=320, num_key_value_heads=4)
    d, inter, v, nh = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_attention_heads"]
    hd = d // nh
    g, add, normal, hf = begin_file("phi2", c, 13, rotary_dim=hd // 2, layer_norm=True)
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "attn_norm.bias", p + "input_layernorm.bias", normal(d, std=0.1))
        if layout == "separate":
            for gn, hn in (("attn_q", "q_proj"), ("attn_k", "k_proj"), ("attn_v", "v_proj")):
                add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(d, d, std=0.1))
                add(b + gn + ".bias", p + f"self_attn.{hn}.bias", normal(d, std=0.1))
        else:
            w, bias = normal(3 * d, d, std=0.1), normal(3 * d, std=0.1)
            if layout == "packed-q8":
                data, w = QUANTIZERS[GGML_Q8_0](w)
                g.tensor(b + "attn_qkv.weight", [d, 3 * d], GGML_Q8_0, data)
                w = w.reshape(3 * d, d).astype(np.float32)
            else:
                g.tensor(b + "attn_qkv.weight", [d, 3 * d], GGML_F32, w.astype("<f4").tobytes())
            g.tensor(b + "attn_qkv.bias", [3 * d], GGML_F32, bias.astype("<f4").tobytes())
            for j, hn in enumerate(("q_proj", "k_proj", "v_proj")):
                hf[p + f"self_attn.{hn}.weight"] = w[j * d:(j + 1) * d]
                hf[p + f"self_attn.{hn}.bias"] = bias[j * d:(j + 1) * d]
        add(b + "attn_output.weight", p + "self_attn.dense.weight", normal(d, d))
        add(b + "attn_output.bias", p + "self_attn.dense.bias", normal(d, std=0.1))
        add(b + "ffn_up.weight", p + "mlp.fc1.weight", normal(inter, d, std=0.1))
        add(b + "ffn_up.bias", p + "mlp.fc1.bias", normal(inter, std=0.1))
        add(b + "ffn_down.weight", p + "mlp.fc2.weight", normal(d, inter))
        add(b + "ffn_down.bias", p + "mlp.fc2.bias", normal(d, std=0.1))
    add("output_norm.weight", "model.final_layernorm.weight", 1 + normal(d, std=0.1))
    add("output_norm.bias", "model.final_layernorm.bias", normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    add("output.bias", "lm_head.bias", normal(v, std=0.5))
    config = dict(c, architectures=["PhiForCausalLM"], model_type="phi", hidden_act="gelu_new",
                  partial_rotary_factor=0.5, layer_norm_eps=c["rms_norm_eps"])
    if layout != "packed-q8":
        out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, distinct=3)
        assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "phi"
        return
    # The Q8_0 blocks stay MatMulNBits (accuracy level 1: float math over the stored blocks).
    g.write(tmp_path / "m.gguf")
    native = build(tmp_path / "m.gguf", tmp_path / "native", "--accuracy-level", "1")
    assert "MatMulNBits" in cli("info", "-m", native, "--json").stdout
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(config, bos_token_id=1, eos_token_id=2)))
    write_safetensors(folder / "model.safetensors", {k: x.astype(np.float32) for k, x in hf.items()})
    cli("build", "-i", str(folder), "-o", str(tmp_path / "from-hf"), "-p", "fp32", "--tokenizer", str(native), "-q")
    ids, logits = onnxllm_greedy(native, PROMPT, STEPS)
    ref_ids, ref_logits = onnxllm_greedy(tmp_path / "from-hf", PROMPT, STEPS)
    assert ids == ref_ids
    for step, (got, ref) in enumerate(zip(logits, ref_logits)):
        np.testing.assert_allclose(got, ref, atol=2e-3 * np.abs(ref).max(), err_msg=f"step {step}")


def test_olmo2_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'olmo2': no pre-norms; post_attention_norm and post_ffw_norm on the sub-block outputs
    before each residual add; q/k norms over the whole projection (attn_q_norm [heads x head size])."""
    c = llama_like("olmo2", vocab_size=320)
    d, inter, v, nh, nkv = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
                                           "num_key_value_heads"))
    hd = d // nh
    g, add, normal, hf = begin_file("olmo2", c, 17)
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        for gn, hn, rows in (("attn_q", "q_proj", nh * hd), ("attn_k", "k_proj", nkv * hd), ("attn_v", "v_proj", nkv * hd)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d, std=0.3))
        add(b + "attn_q_norm.weight", p + "self_attn.q_norm.weight", 1 + normal(nh * hd, std=0.1))
        add(b + "attn_k_norm.weight", p + "self_attn.k_norm.weight", 1 + normal(nkv * hd, std=0.1))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "post_attention_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "ffn_gate.weight", p + "mlp.gate_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter))
        add(b + "post_ffw_norm.weight", p + "post_feedforward_layernorm.weight", 1 + normal(d, std=0.1))
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["Olmo2ForCausalLM"]), distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "olmo"


def test_smollm3_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'smollm3': a Llama layer (q/k rows permuted) whose every fourth layer has no rotary
    (llama.cpp's fixed step, transformers' default), tied embeddings."""
    c = llama_like("smollm3", vocab_size=320, num_hidden_layers=4, tie_word_embeddings=True)
    hf, g = random_gguf(tmp_path / "g.gguf", c, {}, byte_tokens=True, layer_std=0.6)
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["SmolLM3ForCausalLM"]), distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "smollm3"


def test_nemotron_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'nemotron': LayerNorm1P with biases (weights stored as 1 + w, as its converter writes
    them), an ungated relu^2 MLP (ffn_up, ffn_down), half of each head rotated with NeoX rotary."""
    c = llama_like("nemotron", vocab_size=320)
    d, inter, v, nh, nkv = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
                                           "num_key_value_heads"))
    hd = d // nh
    g, add, normal, hf = begin_file("nemotron", c, 19, rotary_dim=hd // 2, layer_norm=True)
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        for gn, hn in (("attn_norm", "input_layernorm"), ("ffn_norm", "post_attention_layernorm")):
            add(b + gn + ".weight", p + hn + ".weight", 1 + normal(d, std=0.1))
            add(b + gn + ".bias", p + hn + ".bias", normal(d, std=0.1))
        for gn, hn, rows in (("attn_q", "q_proj", nh * hd), ("attn_k", "k_proj", nkv * hd), ("attn_v", "v_proj", nkv * hd)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d, std=0.3))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight", normal(inter, d, std=0.1))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter))
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output_norm.bias", "model.norm.bias", normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    config = dict(c, architectures=["NemotronForCausalLM"], hidden_act="relu2", partial_rotary_factor=0.5,
                  norm_eps=c["rms_norm_eps"])
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, norm_offset=1.0, distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "nemotron"


def test_ernie4_5_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'ernie4_5': a Llama layer whose rotary is interleaved (pairs 2i, 2i + 1) in the checkpoint
    itself, so the file keeps Hugging Face's row order; tied embeddings."""
    c = llama_like("ernie4_5", vocab_size=320, tie_word_embeddings=True)
    hf, g = random_gguf(tmp_path / "g.gguf", c, {}, byte_tokens=True, layer_std=0.6)
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["Ernie4_5ForCausalLM"]), distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "ernie4_5"


def test_olmo_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'olmo': LayerNorms without weights (no norm tensors at all), q/k/v clamped to
    +-attention.clamp_kqv, llama's q/k permutation."""
    c = llama_like("olmo", vocab_size=320)
    g = arch_gguf("olmo", c, extra=[("attention.clamp_kqv", F32, 0.5)], layer_norm=True)
    add, normal, hf = f32_tensors(g, np.random.default_rng(23))
    d, inter, v, nh, nkv = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
                                           "num_key_value_heads"))
    hd = d // nh
    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.5))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        for gn, hn, rows, heads in (("attn_q", "q_proj", nh * hd, nh), ("attn_k", "k_proj", nkv * hd, nkv),
                                    ("attn_v", "v_proj", nkv * hd, None)):
            w = normal(rows, d, std=0.3)
            stored = hf_to_meta_rows(w, heads) if heads else w  # the file holds llama.cpp's row order
            g.tensor(b + gn + ".weight", [d, rows], GGML_F32, stored.astype("<f4").tobytes())
            hf[p + f"self_attn.{hn}.weight"] = w
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_gate.weight", p + "mlp.gate_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["OlmoForCausalLM"], clip_qkv=0.5),
                                       distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "olmo"


def test_phi3_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'phi3' architecture: packed attn_qkv (rows q, k, v) and ffn_up (rows gate, up) as in
    the checkpoint, NeoX rotary, attention.sliding_window on every layer. F32, so llama.cpp computes in
    float. The window is mapped (GroupQueryAttention local_window_size) but wider than the test's
    sequence: llama.cpp disables Phi-3's sliding window ("Phi SWA is currently disabled", its PR 13676)."""
    c = llama_like("phi3", vocab_size=320, sliding_window=64)
    d, inter, v, nh, nkv = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
                                           "num_key_value_heads"))
    hd = d // nh
    g, add, normal, hf = begin_file("phi3", c, 3, extra=[("attention.sliding_window", U32, c["sliding_window"])])
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        add(b + "attn_norm.weight", p + "input_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "attn_qkv.weight", p + "self_attn.qkv_proj.weight", normal((nh + 2 * nkv) * hd, d, std=0.1))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1 + normal(d, std=0.1))
        add(b + "ffn_up.weight", p + "mlp.gate_up_proj.weight", normal(2 * inter, d, std=0.1))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter))
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    add("output.weight", "lm_head.weight", normal(v, d, std=0.5))
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, dict(c, architectures=["Phi3ForCausalLM"], hidden_act="silu"))
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "phi3"
    assert set(local_windows(out)) == {64}


def gemma2_like_gguf(arch, c, extra, seed, qk_norms=False):
    """A random F32 Gemma 2/3 file: four norms per layer (1 + w as llama.cpp stores them; the post norms
    of scale 4 so the sub-blocks outweigh the scaled embedding), optional q/k norms; and its HF tensors."""
    d, inter, v, nh, nkv = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
                                           "num_key_value_heads"))
    hd = d // nh
    g = arch_gguf(arch, c, list(extra) + [("attention.key_length", U32, hd), ("attention.value_length", U32, hd)])
    add, normal, hf = f32_tensors(g, np.random.default_rng(seed))
    add("token_embd.weight", "model.embed_tokens.weight", normal(v, d, std=0.1))
    for i in range(c["num_hidden_layers"]):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        for gn, hn, scale in (("attn_norm", "input_layernorm", 1), ("post_attention_norm", "post_attention_layernorm", 4),
                              ("ffn_norm", "pre_feedforward_layernorm", 1), ("post_ffw_norm", "post_feedforward_layernorm", 4)):
            add(b + gn + ".weight", p + hn + ".weight", scale + normal(d, std=0.1))
        if qk_norms:
            add(b + "attn_q_norm.weight", p + "self_attn.q_norm.weight", 1 + normal(hd, std=0.1))
            add(b + "attn_k_norm.weight", p + "self_attn.k_norm.weight", 1 + normal(hd, std=0.1))
        for gn, hn, rows in (("attn_q", "q_proj", nh * hd), ("attn_k", "k_proj", nkv * hd), ("attn_v", "v_proj", nkv * hd)):
            add(b + gn + ".weight", p + f"self_attn.{hn}.weight", normal(rows, d, std=0.3))
        add(b + "attn_output.weight", p + "self_attn.o_proj.weight", normal(d, nh * hd))
        add(b + "ffn_gate.weight", p + "mlp.gate_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_up.weight", p + "mlp.up_proj.weight", normal(inter, d, std=0.3))
        add(b + "ffn_down.weight", p + "mlp.down_proj.weight", normal(d, inter))
    add("output_norm.weight", "model.norm.weight", 1 + normal(d, std=0.1))
    return g, hf


def test_gemma2_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'gemma2': four norms per layer (attn_norm, post_attention_norm, ffn_norm before the MLP,
    post_ffw_norm), all stored as 1 + w; attention and final soft-capping; the sliding window on even
    layers (4 keys here, inside the test's sequence, which llama.cpp applies too); the attention scale
    1/sqrt(head size) that llama.cpp assumes and Hugging Face reads from query_pre_attn_scalar."""
    c = llama_like("gemma2", vocab_size=320, sliding_window=4, tie_word_embeddings=True)
    hd = c["hidden_size"] // c["num_attention_heads"]
    g, hf = gemma2_like_gguf("gemma2", c, [("attention.sliding_window", U32, 4), ("attn_logit_softcapping", F32, 3.0),
                                           ("final_logit_softcapping", F32, 30.0)], seed=5)
    config = dict(c, architectures=["Gemma2ForCausalLM"], hidden_activation="gelu_pytorch_tanh", head_dim=hd,
                  query_pre_attn_scalar=hd, attn_logit_softcapping=3.0, final_logit_softcapping=30.0)
    # Random Gemma 2 weights settle on a few tokens (the tied, scaled embedding): three ids here.
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, norm_offset=1.0, distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "gemma2"
    assert local_windows(out) == [4, -1], local_windows(out)


def test_gemma3_gguf_matches_the_hf_build_and_llamacpp(tmp_path):
    """llama.cpp's 'gemma3' (text): Gemma 2's norms plus q/k norms (all 1 + w), every sixth layer global
    and the others windowed at rotary base 10000 (llama.cpp's fixed layout), no soft-capping."""
    c = llama_like("gemma3", vocab_size=320, sliding_window=4, tie_word_embeddings=True, num_hidden_layers=6,
                   rope_theta=1000000.0)
    hd = c["hidden_size"] // c["num_attention_heads"]
    g, hf = gemma2_like_gguf("gemma3", c, [("attention.sliding_window", U32, 4)], seed=8, qk_norms=True)
    config = dict(c, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text",
                  hidden_activation="gelu_pytorch_tanh", head_dim=hd, query_pre_attn_scalar=hd,
                  sliding_window_pattern=6, rope_local_base_freq=10000.0)
    out = gguf_against_hf_and_llamacpp(tmp_path, g, hf, config, norm_offset=1.0, distinct=3)
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "gemma3_text"
    assert local_windows(out) == [4, 4, 4, 4, 4, -1], local_windows(out)


def test_quantized_blocks_are_not_requantized(tmp_path):
    """Q4_0 and Q8_0 projections become MatMulNBits holding the file's own blocks (no float round trip):
    the model data holds each block's values verbatim (Q8_0: int8 + 128; Q4_0: nibbles repacked)."""
    c = llama_like(num_hidden_layers=1)
    types = {"attn": GGML_Q8_0, "ffn_gate": GGML_Q4_0, "ffn_up": GGML_Q4_0, "ffn_down": GGML_Q8_0,
             "output": GGML_Q4_0}
    _, g = random_gguf(tmp_path / "m.gguf", c, types)
    out = build(tmp_path / "m.gguf", tmp_path / "m")
    assert "MatMulNBits" in cli("info", "-m", out, "--json").stdout
    model_data = (out / "model.onnx.data").read_bytes()
    tensors = {name: (ttype, data) for name, _, ttype, data in g.tensors}
    for name in ("blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.0.ffn_gate.weight", "output.weight"):
        ttype, data = tensors[name]
        for block in range(3):
            if ttype == GGML_Q8_0:
                raw = np.frombuffer(data[block * 34 + 2:block * 34 + 34], np.uint8) ^ 0x80
            else:
                qs = np.frombuffer(data[block * 18 + 2:block * 18 + 18], np.uint8)
                q = np.concatenate([qs & 15, qs >> 4])
                raw = q[0::2] | (q[1::2] << 4)
            assert raw.astype(np.uint8).tobytes() in model_data, (name, block)
    # -p int8 keeps the Q8_0 blocks too (8 bits, block 32); a requantized weight would not hold them.
    int8 = (build(tmp_path / "m.gguf", tmp_path / "m8", "-p", "int8") / "model.onnx.data").read_bytes()
    ttype, data = tensors["blk.0.attn_q.weight"]
    assert (np.frombuffer(data[2:34], np.uint8) ^ 0x80).astype(np.uint8).tobytes() in int8


def test_int4_build_of_f32_gguf_runs(stories_f32, stories_hf, tmp_path):
    out = build(stories_f32, tmp_path / "m", "-p", "int4", "--tokenizer", stories_hf)
    assert len(greedy_text(out, 20).split()) > 3


def test_gpt2_vocabulary_becomes_a_byte_level_bpe_tokenizer(tmp_path):
    """A 'gpt2' GGUF vocabulary (tokens, token types, merges) becomes a tokenizer.json that encodes and
    decodes the hard strings as Hugging Face tokenizers does with the original files."""
    folder = shared("tokenizers/gpt2-bytelevel")
    tok = json.loads((folder / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    added = {a["id"]: a for a in tok["added_tokens"]}
    n = max(max(vocab.values()), max(added)) + 1
    tokens, types = [""] * n, [1] * n
    for t, i in vocab.items():
        tokens[i] = t
    for i, a in added.items():
        tokens[i], types[i] = a["content"], 3 if a["special"] else 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    g = Gguf()
    d = 32
    for key, t, v in (("general.architecture", STR, "llama"), ("llama.context_length", U32, 64),
                      ("llama.embedding_length", U32, d), ("llama.block_count", U32, 1),
                      ("llama.feed_forward_length", U32, d), ("llama.attention.head_count", U32, 1),
                      ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5), ("tokenizer.ggml.model", STR, "gpt2"),
                      ("tokenizer.ggml.pre", STR, "gpt-2"), ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                      ("tokenizer.ggml.token_type", ARR, (I32, types)), ("tokenizer.ggml.merges", ARR, (STR, merges)),
                      ("tokenizer.ggml.bos_token_id", U32, 50256), ("tokenizer.ggml.eos_token_id", U32, 50256)):
        g.add(key, t, v)
    rng = np.random.default_rng(0)
    for name, shape in (("token_embd.weight", (n, d)), ("output_norm.weight", (d,)), ("blk.0.attn_norm.weight", (d,)),
                        ("blk.0.ffn_norm.weight", (d,)), ("blk.0.attn_q.weight", (d, d)),
                        ("blk.0.attn_k.weight", (d, d)), ("blk.0.attn_v.weight", (d, d)),
                        ("blk.0.attn_output.weight", (d, d)), ("blk.0.ffn_gate.weight", (d, d)),
                        ("blk.0.ffn_up.weight", (d, d)), ("blk.0.ffn_down.weight", (d, d))):
        g.tensor(name, list(reversed(shape)), GGML_F32, rng.standard_normal(shape).astype(np.float32).tobytes())
    g.write(tmp_path / "gpt2.gguf")
    out = build(tmp_path / "gpt2.gguf", tmp_path / "m")
    assert (out / "tokenizer.json").exists()
    cases = json.loads((folder / "expected.json").read_text())["cases"]
    strings = tmp_path / "strings.json"
    strings.write_text(json.dumps([c["text"] for c in cases]))
    got = json.loads(cli("tokenize", "--tokenizer", out, "--strings", strings).stdout)
    for c, r in zip(cases, got):
        assert r["ids"] == c["ids"], c["text"]
        assert r["decoded"] == c["decoded"], c["text"]
    assert len(got) == len(cases) > 40


# ---- bad files ----

def small_gguf(**changes):
    g = Gguf()
    c = llama_like(hidden_size=256, intermediate_size=256, num_hidden_layers=1, vocab_size=32)
    rng = np.random.default_rng(0)
    for key, t, v in (("general.architecture", STR, "llama"), ("llama.context_length", U32, 64),
                      ("llama.embedding_length", U32, 256), ("llama.block_count", U32, 1),
                      ("llama.feed_forward_length", U32, 256), ("llama.attention.head_count", U32, 4),
                      ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5), ("tokenizer.ggml.model", STR, "llama"),
                      ("tokenizer.ggml.tokens", ARR, (STR, [f"t{i}" for i in range(32)]))):
        if key not in changes.get("drop", ()):
            g.add(key, t, v)
    d = 256
    shapes = {"token_embd.weight": (32, d), "output_norm.weight": (d,), "blk.0.attn_norm.weight": (d,),
              "blk.0.ffn_norm.weight": (d,), "blk.0.attn_q.weight": (d, d), "blk.0.attn_k.weight": (d, d),
              "blk.0.attn_v.weight": (d, d), "blk.0.attn_output.weight": (d, d),
              "blk.0.ffn_gate.weight": (d, d), "blk.0.ffn_up.weight": (d, d), "blk.0.ffn_down.weight": (d, d)}
    for name, shape in shapes.items():
        w = rng.standard_normal(shape).astype(np.float32)
        data = w.tobytes()
        g.tensor(name, list(reversed(shape)), GGML_F32, data)
    return g, c


def build_error(tmp_path, data):
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    r = cli("build", "-i", path, "-o", tmp_path / "out", "-q", check=False)
    assert r.returncode != 0 and not (tmp_path / "out").exists(), r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "terminate" not in r.stderr, r.stderr
    return r.stderr


def test_the_small_gguf_builds(tmp_path):
    g, _ = small_gguf()
    g.write(tmp_path / "ok.gguf")
    cli("build", "-i", tmp_path / "ok.gguf", "-o", tmp_path / "out", "-q")


def test_llama_with_no_experts_is_dense(tmp_path):
    """llama.expert_count 0 is a dense Llama, as llama.cpp reads it (only a positive count is Mixtral)."""
    g, _ = small_gguf()
    g.add("llama.expert_count", U32, 0)
    g.write(tmp_path / "dense.gguf")
    out = build(tmp_path / "dense.gguf", tmp_path / "out", "-p", "fp32")
    assert json.loads((out / "genai_config.json").read_text())["model"]["type"] == "llama"
    ops = {o["op"] for o in json.loads(cli("info", "-m", out, "--json").stdout)["ops"]}
    assert "com.microsoft.MoE" not in ops and "MatMul" in ops, ops


def with_tensor_type(g, name, ttype, data):
    g.tensors = [(n, d, ttype, data) if n == name else (n, d, t, b) for n, d, t, b in g.tensors]
    return g


BAD_CASES = {
    "truncated header": (lambda g: g.to_bytes()[:100], "truncated"),
    "truncated data": (lambda g: g.to_bytes()[:-100], "data out of range"),
    "bad magic": (lambda g: b"GGUX" + g.to_bytes()[4:], "bad magic"),
    "bad version": (lambda g: g.to_bytes()[:4] + struct.pack("<I", 7) + g.to_bytes()[8:], "bad GGUF version 7"),
    "version 1": (lambda g: g.to_bytes()[:4] + struct.pack("<I", 1) + g.to_bytes()[8:], "GGUF version 1 is not supported"),
    "tensor count": (lambda g: g.to_bytes()[:8] + struct.pack("<Q", 1 << 60) + g.to_bytes()[16:], "tensor count"),
    "metadata count": (lambda g: g.to_bytes()[:16] + struct.pack("<Q", 1 << 62) + g.to_bytes()[24:], "metadata count"),
    "huge string": (lambda g: g.to_bytes()[:24] + struct.pack("<Q", 1 << 63) + g.to_bytes()[32:], "length"),
    "array count": (lambda g: patch_array_count(g), "element count"),
    "dims overflow": (lambda g: patch_dims(g, [1 << 40, 1 << 40], ), "overflows"),
    "zero dim": (lambda g: patch_dims(g, [0, 64]), "dimensions must be at least 1"),
    "offset out of range": (lambda g: patch_offset(g, 1 << 40), "data out of range"),
    "offset misaligned": (lambda g: patch_offset(g, 4), "not a multiple of the alignment"),
    "unknown tensor type": (lambda g: with_tensor_type(g, "blk.0.ffn_up.weight", 77, b"").to_bytes(), "unknown tensor type 77"),
    "unsupported tensor type": (lambda g: with_tensor_type(g, "blk.0.ffn_up.weight", GGML_Q5_K, b"\0" * 176 * 256).to_bytes(),
                                "tensor 'blk.0.ffn_up.weight' has type Q5_K"),
    "missing key": (None, "missing metadata key 'llama.embedding_length'"),
    "wrong key type": (None, "metadata 'llama.block_count' should be an integer, got string"),
    "unsupported architecture": (None, "general.architecture 'mamba' is not supported"),
    "wrong shape": (None, "tensor 'blk.0.attn_k.weight' has shape"),
    "alignment": (None, "general.alignment"),
    "longrope factors": (None, "tensor 'rope_factors_long.weight' (LongRoPE scaling, Phi-3 128k) is not supported"),
    # llama with experts is Mixtral, which needs the routed count; other dense architectures refuse experts.
    "mixtral without expert_used_count": (None, "missing metadata key 'llama.expert_used_count'"),
    "experts of a dense architecture": (None, "mixture-of-experts models (qwen2.expert_count) of this architecture are "
                                              "not supported (llama (MixtralForCausalLM), qwen2moe, qwen3moe, gpt-oss are)"),
}


def patch_array_count(g):
    data = g.to_bytes()
    key = gguf_key_offset(data, "tokenizer.ggml.tokens")
    # key string, value type (4), element type (4), then the count
    return data[:key + 4 + 4] + struct.pack("<Q", 1 << 59) + data[key + 16:]


def gguf_key_offset(data, key):
    k = key.encode()
    i = data.index(struct.pack("<Q", len(k)) + k)
    return i + 8 + len(k)


def patch_dims(g, dims):
    name = "blk.0.attn_q.weight"
    g.tensors = [(n, dims if n == name else d, t, b) for n, d, t, b in g.tensors]
    return g.to_bytes()


def patch_offset(g, offset):
    h, offs = g.header()
    offs[1] = offset
    h2, _ = g.header(offsets=offs)
    return h2 + g.to_bytes()[len(h):]


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_gguf_is_a_clear_error(case, tmp_path):
    make, message = BAD_CASES[case]
    g, _ = small_gguf(drop=("llama.embedding_length",) if case == "missing key" else ())
    if case == "wrong key type":
        g.kv = [(k, STR, "five") if k == "llama.block_count" else (k, t, v) for k, t, v in g.kv]
    if case == "unsupported architecture":
        g.kv = [(k, t, "mamba") if k == "general.architecture" else (k, t, v) for k, t, v in g.kv]
    if case == "wrong shape":
        k = "blk.0.attn_k.weight"
        g.tensors = [(n, [256, 128] if n == k else d, t, b[:256 * 128 * 4] if n == k else b) for n, d, t, b in g.tensors]
    if case == "alignment":
        g.kv.append(("general.alignment", U32, 24))
    if case == "longrope factors":
        g.tensor("rope_factors_long.weight", [16], GGML_F32, np.ones(16, "<f4").tobytes())
    if case == "mixtral without expert_used_count":
        g.add("llama.expert_count", U32, 4)
    if case == "experts of a dense architecture":
        g.kv = [(k.replace("llama.", "qwen2."), t, "qwen2" if k == "general.architecture" else v) for k, t, v in g.kv]
        g.add("qwen2.expert_count", U32, 4)
    data = make(g) if make else g.to_bytes()
    err = build_error(tmp_path, data)
    assert message in err, err
    assert "bad.gguf" in err, err

"""Optimum exports without genai_config.json: Llama- and GPT-2-style decoders written here in each of
Optimum's three file layouts (tests/python/optimum_export.py: model.onnx, decoder_model_merged.onnx,
decoder_model.onnx + decoder_with_past_model.onnx) run through the CLI, the Python package (the C
API below it) and `onnxllm bench`, with the config inferred from config.json and the graph, and must
give ONNX Runtime's greedy tokens on the same files (tests/oracle/ort_optimum_greedy.js). Bad
folders must fail naming what could not be inferred or what contradicts what.
"""

import json
import os
import pathlib
import shutil
import subprocess

import onnx
import pytest
from onnx import TensorProto, helper

from conftest import CLI, SOURCE_DIR

import onnxllm as og
import optimum_export as oe

ORACLE_DIR = pathlib.Path(os.environ.get("ONNXLLM_ORACLE_DIR", SOURCE_DIR / "build/oracle"))
ORT_GREEDY = SOURCE_DIR / "tests/oracle/ort_optimum_greedy.js"
PROMPT = [1, 17, 42, 99, 5]
STEPS = 12
LAYOUTS = ["single", "merged", "pair"]


def config_of(kind):
    return oe.llama_config() if kind == "llama" else oe.gpt2_config()


def kv_shape(kind, c):
    if kind == "llama":
        return c["num_hidden_layers"], c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"]
    return c["n_layer"], c["n_head"], c["n_embd"] // c["n_head"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("optimum")
    out = {}
    for kind in ("llama", "gpt2"):
        for layout in LAYOUTS:
            # GPT-2 exports may lack position_ids (the graph counts positions from the past length).
            position_ids = kind == "llama" or layout != "single"
            out[kind, layout] = oe.write_folder(root / f"{kind}-{layout}", kind, config_of(kind), layout,
                                                position_ids=position_ids)
    return out


def cli(*args, check=True, **kw):
    p = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"onnxllm {' '.join(map(str, args))} failed:\n{p.stderr}")
    return p


def ort_greedy(folder, kind, steps=STEPS):
    if not (ORACLE_DIR / "node_modules/onnxruntime-node").exists() or shutil.which("node") is None:
        pytest.skip(f"ONNX Runtime oracle not installed in {ORACLE_DIR} (run `make oracle`)")
    layers, kv, hd = kv_shape(kind, json.loads((folder / "config.json").read_text()))
    p = subprocess.run(["node", str(ORT_GREEDY), str(ORACLE_DIR), str(folder), str(steps), ",".join(map(str, PROMPT)),
                        str(layers), str(kv), str(hd)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return [int(t) for t in p.stdout.strip().split(",")]


def until_eos(tokens, eos):
    """Generation stops after the first EOS it produces; ONNX Runtime's loop does not."""
    for i in range(len(PROMPT), len(tokens)):
        if tokens[i] in eos:
            return tokens[: i + 1]
    return tokens


def eos_of(folder):
    e = json.loads((folder / "generation_config.json").read_text())["eos_token_id"]
    return e if isinstance(e, list) else [e]


def generate_ids(folder, steps=STEPS):
    p = cli("generate", "-m", folder, "--ids", ",".join(map(str, PROMPT)), "-n", steps, "--print-ids",
            "--no-timings", "--threads", 1)
    return [int(t) for t in p.stdout.strip().split(",")]


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_greedy_matches_onnx_runtime(folders, kind, layout):
    folder = folders[kind, layout]
    assert not (folder / "genai_config.json").exists()
    expected = until_eos(ort_greedy(folder, kind), eos_of(folder))
    assert len(expected) > len(PROMPT) + 3, "the random model ends too early to compare anything"
    assert generate_ids(folder) == expected


# ---- fusions (runtime/fusion.cc): fused against unfused ----

LOGITS_SCRIPT = """
import sys, numpy as np, onnxllm as og
model = og.Model(sys.argv[1])
params = og.GeneratorParams(model)
params.set_search_options(max_length=32, do_sample=False)
g = og.Generator(model, params)
g.append_tokens([int(t) for t in sys.argv[2].split(",")])
rows = [np.array(g.get_logits())[0, -1]]
for _ in range(6):
    g.generate_next_token()
    rows.append(np.array(g.get_logits())[0, -1])
np.save(sys.argv[3], np.stack(rows))
"""

FUSED_OPS = {"llama": {"SimplifiedLayerNormalization", "com.microsoft.SkipSimplifiedLayerNormalization",
                       "com.microsoft.QuickGelu", "com.onnxllm.ApplyRotaryPosEmb"},
             "gpt2": {"com.microsoft.SkipLayerNormalization", "com.microsoft.FastGelu"}}
# Attention over the pasts appends to the KV cache in place (genai/model/kv_in_place.h): in the
# single file, and in the with-past branch of merged and pair, which then replaces their If.
GQA, MHA = "com.microsoft.GroupQueryAttention", "com.microsoft.MultiHeadAttention"


def ops_of(folder, fusions):
    env = dict(os.environ, ONNXLLM_FUSIONS="1" if fusions else "0")
    return {o["op"] for o in json.loads(cli("info", "-m", folder, "--json", env=env).stdout)["ops"]}


def logits_of(folder, fusions, out):
    env = dict(os.environ, ONNXLLM_FUSIONS="1" if fusions else "0")
    subprocess.run(["/usr/bin/python3", "-c", LOGITS_SCRIPT, str(folder), ",".join(map(str, PROMPT)), str(out)],
                   check=True, env=env, timeout=120)
    import numpy as np
    return np.load(out)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fused_nodes_appear_and_match_unfused(folders, kind, layout, tmp_path):
    import numpy as np
    folder = folders[kind, layout]
    fused, unfused = ops_of(folder, True), ops_of(folder, False)
    assert FUSED_OPS[kind] | {GQA} <= fused, fused  # from inside the If branches of merged and pair
    assert not ((FUSED_OPS[kind] | {GQA, MHA}) & unfused), unfused
    assert MHA not in fused and "If" not in fused and ("If" in unfused) == (layout != "single"), (fused, unfused)
    assert "Softmax" in unfused and "Softmax" not in fused
    if kind == "llama":  # 4 query heads on 2 KV heads: repeat_kv's copies are gone; so are rotate_half's nodes
        assert "Expand" in unfused and "Expand" not in fused
        assert {"Neg", "Slice"} <= unfused and not ({"Neg", "Slice"} & fused)
    on, off = logits_of(folder, True, tmp_path / "on.npy"), logits_of(folder, False, tmp_path / "off.npy")
    assert on.shape == off.shape == (7, 256)
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-4 * np.abs(off).max())
    assert (on.argmax(-1) == off.argmax(-1)).all()


BATCH_SCRIPT = """
import json, sys, onnxllm as og
model = og.Model(sys.argv[1])
out = {}
for beams in (1, 3):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=24, do_sample=False, num_beams=beams, num_return_sequences=beams,
                              batch_size=2, early_stopping=False, min_length=24)
    g = og.Generator(model, params)
    g.append_tokens([[1, 17, 42, 99, 5, 61, 7], [1, 23, 8, 2, 2, 2, 2]])  # the second row right-padded (pad = eos = 2)
    while not g.is_done():
        g.generate_next_token()
    out[beams] = [list(map(int, g.get_sequence(i))) for i in range(2 * beams)]
params = og.GeneratorParams(model)  # a second turn, a rewind, then a prompt in chunks of 3
params.set_search_options(max_length=40, do_sample=False, chunk_size=3)
g = og.Generator(model, params)
g.append_tokens([1, 17, 42, 99, 5, 61, 7])
for _ in range(5):
    g.generate_next_token()
g.append_tokens([33, 44, 55, 66])
for _ in range(5):
    g.generate_next_token()
out["turns"] = list(map(int, g.get_sequence(0)))
g.rewind_to(9)
for _ in range(5):
    g.generate_next_token()
out["rewound"] = list(map(int, g.get_sequence(0)))
json.dump(out, sys.stdout)
"""


def batch_and_beams(folder, fusions):
    env = dict(os.environ, ONNXLLM_FUSIONS="1" if fusions else "0")
    p = subprocess.run(["/usr/bin/python3", "-c", BATCH_SCRIPT, str(folder)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def reads_past_shape(graph):
    for n in graph.node:
        if n.op_type == "Shape" and n.input[0] == "past_key_values.0.key":
            return True
        if any(reads_past_shape(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH):
            return True
    return False


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_kv_in_place(tmp_path, kind, layout):
    """Attention over the pasts becomes GroupQueryAttention appending in place (in merged and pair:
    in the with-past branch, which then replaces the If and also runs the first prompt): tokens stay
    ONNX Runtime's, also when the export reads the past length from past_key_values.0.key (a shared
    buffer holds max_length rows, so those Shape nodes read the logical shape); a padded batch
    (one shared buffer), beam search (two buffers), a second turn, a rewind and a chunked prompt
    give the unfused graph's tokens."""
    folder = oe.write_folder(tmp_path / kind, kind, config_of(kind), layout, past_from_cache=True)
    file = {"single": "model.onnx", "merged": "decoder_model_merged.onnx", "pair": "decoder_with_past_model.onnx"}
    assert reads_past_shape(onnx.load(str(folder / file[layout]), load_external_data=False).graph)
    expected = until_eos(ort_greedy(folder, kind), eos_of(folder))
    assert len(expected) > len(PROMPT) + 3
    assert generate_ids(folder) == expected
    # A float16 cache needs GroupQueryAttention on the pasts, which the rewrite gives (these models'
    # logits are far enough apart to keep the tokens).
    half = cli("generate", "-m", folder, "--ids", ",".join(map(str, PROMPT)), "-n", STEPS, "--print-ids",
               "--no-timings", "--threads", 1, "--kv-cache", "float16")
    assert [int(t) for t in half.stdout.strip().split(",")] == expected
    kv_bytes = [json.loads(cli("bench", "-m", folder, "--prompt-len", 8, "--gen-len", 4, "--reps", 1, "--json",
                               "--no-bandwidth", "--kv-cache", kv).stdout)["kv_bytes_per_position"]
                for kv in ("float32", "float16")]
    assert kv_bytes[1] * 2 == kv_bytes[0], kv_bytes
    info = json.loads(cli("info", "-m", folder, "--json").stdout)
    counts = {o["op"]: o["count"] for o in info["ops"]}
    layers = kv_shape(kind, json.loads((folder / "config.json").read_text()))[0]
    assert counts.get(GQA) == layers and MHA not in counts and "If" not in counts, counts
    model = og.Model(str(folder))  # the engine runs it too, each request as the Generator does
    prompts = [PROMPT, [1, 9, 8, 7, 6, 5, 4, 3]]
    assert engine_tokens(model, prompts, 24) == [greedy_tokens(model, p, 24) for p in prompts]
    fused, unfused = batch_and_beams(folder, True), batch_and_beams(folder, False)
    assert fused == unfused
    assert len(fused["1"]) == 2 and len(fused["3"]) == 6
    assert len(fused["turns"]) == 21 and len(fused["rewound"]) == 14 and len(set(fused["turns"][7:])) > 2
    assert all(len(row) == 24 for row in fused["1"] + fused["3"])


def greedy_tokens(model, prompt, max_length):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=max_length)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    while not generator.is_done():
        generator.generate_next_token()
    return list(generator.get_sequence(0))[len(prompt):]


def engine_tokens(model, prompts, max_length):
    """All prompts in one og.Engine at once (a ragged batch of prefills, then of decodes)."""
    engine = og.Engine(model)
    for i, prompt in enumerate(prompts):
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=max_length)
        request = og.Request(params)
        request.add_tokens(prompt)
        request.set_opaque_data({"index": i})
        engine.add_request(request)
    out = {i: [] for i in range(len(prompts))}
    for _ in range(10 * max_length * len(prompts)):
        if not engine.has_pending_requests():
            break
        request = engine.step()
        if request is None:
            continue
        while request.has_unseen_tokens():
            out[request.get_opaque_data()["index"]].append(request.get_unseen_token())
        if request.is_done():
            engine.remove_request(request)
    return [out[i] for i in range(len(prompts))]


@pytest.mark.parametrize("kind,window", [("llama", None), ("llama", 5), ("gpt2", None), ("qwen2", None)])
def test_engine_serves_an_export(tmp_path, kind, window):
    """The engine runs an export whose family's mask is known (config.json): causal and padding,
    plus Mistral's sliding window, which GroupQueryAttention then applies itself (a paged batch
    leaves the bias out). Each request's greedy tokens equal og.Generator's, which runs the
    exported mask; with the window, also ONNX Runtime's on the file."""
    mistral = {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "sliding_window": window}
    # A newer Qwen2 config: a window it does not use, and every layer's kind listed.
    qwen2 = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "use_sliding_window": False,
             "sliding_window": 4, "layer_types": ["full_attention"] * 2}
    c = {"llama": oe.llama_config(**(mistral if window else {})), "qwen2": oe.llama_config(**qwen2),
         "gpt2": oe.gpt2_config()}[kind]
    folder = oe.write_folder(tmp_path / "export", "gpt2" if kind == "gpt2" else "llama", c, "single")
    if window:
        expected = until_eos(ort_greedy(folder, "llama", steps=16), eos_of(folder))
        assert len(expected) > len(PROMPT) + window
        assert generate_ids(folder, steps=16) == expected
    model = og.Model(str(folder))
    prompts = [PROMPT, [1, 9, 8], [1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39], [1, 50]]
    expected = [greedy_tokens(model, p, 28) for p in prompts]
    assert all(len(t) > 3 for t in expected), expected
    assert engine_tokens(model, prompts, 28) == expected


@pytest.mark.parametrize("attention", ["genai_mha", "genai_mha_past"])
def test_genai_multi_head_attention_export(tmp_path, attention):
    """onnxruntime-genai's older CPU exports, MultiHeadAttention layers: of GQA models, with K and V
    repeated per query head by its builder's repeat_kv chain after the Concat (the fusion
    share_repeated_kv hands the attention the unrepeated cache); of other models, with the past
    passed into the op. Either way each layer becomes GroupQueryAttention appending in place, and
    the engine pages it (refused before); greedy tokens equal ONNX Runtime's on the file, and the
    engine's og.Generator's."""
    config = oe.llama_config() if attention == "genai_mha" else oe.llama_config(num_key_value_heads=4)
    folder = oe.write_folder(tmp_path / attention, "llama", config, "single", attention=attention)
    expected = until_eos(ort_greedy(folder, "llama"), eos_of(folder))
    assert len(expected) > len(PROMPT) + 3, "the random model ends too early to compare anything"
    assert generate_ids(folder) == expected
    model = og.Model(str(folder))
    prompts = [PROMPT, [1, 9, 8], [1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39], [1, 50]]
    expected = [greedy_tokens(model, p, 28) for p in prompts]
    assert all(len(t) > 3 for t in expected), expected
    assert engine_tokens(model, prompts, 28) == expected
    # As genai ships them: genai_config.json and no config.json. The engine knows the mask from
    # genai's builder (its node names), whatever the family; renamed, it is unknown and refused.
    cli("config", "-m", folder, "-o", folder / "genai_config.json")
    (folder / "config.json").unlink()
    model = og.Model(str(folder))
    assert engine_tokens(model, prompts, 28) == expected
    proto = onnx.load(str(folder / "model.onnx"))
    for node in proto.graph.node:
        if node.name.endswith("attn_mask_reformat/Tile"):
            node.name = "/model/some_mask/Tile"
    onnx.save(proto, str(folder / "model.onnx"), save_as_external_data=True, location="model.onnx_data")
    with pytest.raises(Exception, match="cannot apply .* attention_bias"):
        og.Engine(og.Model(str(folder)))


def test_engine_refuses_positions_from_the_past(folders):
    with pytest.raises(Exception, match="needs the decoder's position_ids input"):
        og.Engine(og.Model(str(folders["gpt2", "single"])))  # written without position_ids


@pytest.mark.parametrize("overrides", [
    {"model_type": "mistral", "layer_types": ["sliding_attention"] * 2, "sliding_window": 4},  # per layer
    {"model_type": "qwen2", "use_sliding_window": True, "sliding_window": 4},  # per layer (max_window_layers)
    {"model_type": "mistral", "sliding_window": "4"},  # not a number of tokens
    {"model_type": "falcon"},  # a family whose mask is not known here
])
def test_engine_refuses_masks_it_does_not_know(tmp_path, overrides):
    """A mask config.json does not describe stays with the Generator, by name."""
    folder = oe.write_folder(tmp_path / "export", "llama", oe.llama_config(**overrides), "single")
    (folder / "config.json").write_text(json.dumps(oe.llama_config(**overrides)))
    with pytest.raises(Exception, match="cannot apply .* attention_bias"):
        og.Engine(og.Model(str(folder)))


def test_python_package_and_c_api(folders):
    """onnxllm.Model binds to OgaCreateModel: the same greedy tokens through the C API."""
    folder = folders["llama", "merged"]
    expected = until_eos(ort_greedy(folder, "llama"), eos_of(folder))
    model = og.Model(str(folder))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(PROMPT) + STEPS, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(PROMPT)
    while not generator.is_done():
        generator.generate_next_token()
    assert list(generator.get_sequence(0)) == expected
    tokenizer = og.Tokenizer(model)  # the tokenizer files of the export
    assert list(tokenizer.encode("#$%")) == [5, 6, 7]  # "!" is id 3


def test_config_command(folders, tmp_path):
    folder = folders["gpt2", "pair"]
    p = cli("config", "-m", folder)
    config = json.loads(p.stdout)
    decoder = config["model"]["decoder"]
    assert config["model"]["type"] == "gpt2"
    assert decoder["filename"] == "decoder_with_past_model.onnx"
    assert decoder["no_past_filename"] == "decoder_model.onnx"
    assert (decoder["num_hidden_layers"], decoder["num_key_value_heads"], decoder["head_size"]) == (2, 4, 16)
    assert config["model"]["context_length"] == 128 and config["model"]["vocab_size"] == 256
    # Written into the folder, it is what the folder then runs with.
    copy = tmp_path / "gpt2-pair"
    shutil.copytree(folder, copy)
    cli("config", "-m", copy, "-o", copy / "genai_config.json")
    assert json.loads((copy / "genai_config.json").read_text()) == config
    assert generate_ids(copy) == generate_ids(folder)
    again = cli("config", "-m", copy, "-o", tmp_path / "other.json", check=False)
    assert again.returncode == 1 and "already has a genai_config.json" in again.stderr
    (tmp_path / "x.json").write_text("{}")
    exists = cli("config", "-m", folder, "-o", tmp_path / "x.json", check=False)
    assert exists.returncode == 1 and "--overwrite" in exists.stderr


def test_merged_and_single_configs(folders):
    merged = json.loads(cli("config", "-m", folders["llama", "merged"]).stdout)["model"]
    assert merged["decoder"]["filename"] == "decoder_model_merged.onnx"
    assert (merged["decoder"]["num_key_value_heads"], merged["decoder"]["head_size"]) == (2, 16)
    assert (merged["bos_token_id"], merged["eos_token_id"]) == (1, 2)
    single = json.loads(cli("config", "-m", folders["gpt2", "single"]).stdout)["model"]
    assert "position_ids" not in single["decoder"]["inputs"]


def test_bench_and_chat(folders):
    folder = folders["llama", "single"]
    p = cli("bench", "-m", folder, "--prompt-len", 8, "--gen-len", 4, "--reps", 1, "--threads", 1, "--json")
    assert json.loads(p.stdout)["decode_tokens_per_s"] > 0
    chat = cli("chat", "-m", folder, "-n", 4, input="#$%\n/exit\n")
    assert chat.returncode == 0


def test_info(folders):
    p = cli("info", "-m", folders["llama", "pair"], "--json")
    assert json.loads(p.stdout)


# ---- bad folders ----

def failing(folder, *needles):
    p = cli("generate", "-m", folder, "--ids", "1,2", "-n", 2, "--print-ids", check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr
    return p.stderr


def test_missing_kv_heads_and_no_static_dim(tmp_path):
    c = oe.llama_config()
    folder = oe.write_folder(tmp_path / "m", "llama", c, "single", static_kv=False)
    del c["num_key_value_heads"]
    (folder / "config.json").write_text(json.dumps(c))
    failing(folder, "cannot infer num_key_value_heads: config.json has none and past_key_values.0.key has no "
                    "static head dim")


def test_config_contradicts_graph(tmp_path):
    c = oe.llama_config()
    folder = oe.write_folder(tmp_path / "m", "llama", c, "merged")
    (folder / "config.json").write_text(json.dumps(dict(c, num_key_value_heads=4)))
    failing(folder, "config.json contradicts decoder_model_merged.onnx", "'num_key_value_heads' is 4",
            "past_key_values.0.key declares 2")
    (folder / "config.json").write_text(json.dumps(dict(c, num_hidden_layers=3)))
    failing(folder, "'num_hidden_layers' is 3", "past_key_values for 2 layers")
    (folder / "config.json").write_text(json.dumps(dict(c, vocab_size=300)))
    failing(folder, "'vocab_size' is 300", "logits declares 256")


def test_unknown_input_layout(tmp_path):
    folder = oe.write_folder(tmp_path / "m", "gpt2", oe.gpt2_config(), "single")
    model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    model.graph.input.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "s"]))
    onnx.save(model, str(folder / "model.onnx"))
    failing(folder, "fit no known decoder layout", "input_ids, attention_mask, position_ids, past_key_values.0.key",
            "not expected: token_type_ids")


def test_missing_pieces(tmp_path):
    folder = oe.write_folder(tmp_path / "m", "llama", oe.llama_config(), "pair")
    c = json.loads((folder / "config.json").read_text())
    del c["max_position_embeddings"]
    (folder / "config.json").write_text(json.dumps(c))
    failing(folder, "cannot infer context_length")
    (folder / "decoder_model.onnx").unlink()
    failing(folder, "decoder_model.onnx (its first-step partner) is missing")
    for f in folder.glob("decoder_with_past_model.onnx*"):
        f.unlink()
    failing(folder, "neither genai_config.json nor an Optimum decoder")
    trunc = oe.write_folder(tmp_path / "t", "llama", oe.llama_config(), "single")
    data = (trunc / "model.onnx").read_bytes()
    (trunc / "model.onnx").write_bytes(data[: len(data) // 2])
    failing(trunc, "model.onnx: not a valid ONNX model")


def test_token_ids_from_the_tokenizer_files(tmp_path):
    folder = oe.write_folder(tmp_path / "m", "llama", oe.llama_config(), "single")
    for name in ("config.json", "generation_config.json"):
        j = json.loads((folder / name).read_text())
        del j["eos_token_id"], j["bos_token_id"]
        (folder / name).write_text(json.dumps(j))
    model = json.loads(cli("config", "-m", folder).stdout)["model"]
    # tokenizer_config.json names </s> and <s>; tokenizer.json's added tokens give their ids.
    assert (model["eos_token_id"], model["bos_token_id"], model["pad_token_id"]) == (2, 1, 2)
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": 5}}))
    failing(folder, "cannot infer eos_token_id")

"""The onnxruntime_genai surface of onnxllm: tokenizer, config, params, generator, numpy in/out."""

import gc
import json
import shutil
import threading

import numpy as np
import pytest

import onnxllm as og
from conftest import run_cli


@pytest.fixture(scope="module")
def stories(stories_dir):
    return og.Model(str(stories_dir))


# greedy_batch1 of the conformance cases, on the tiny gpt2.
GPT2_PROMPT = [0, 0, 195, 731]
GPT2_GREEDY = [0, 0, 195, 731, 731, 114, 114, 114, 114, 114]


def greedy(model, prompt_ids, max_length):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt_ids)
    while not generator.is_done():
        generator.generate_next_token()
    return generator.get_sequence(0).tolist()


def test_version_and_model_properties(stories):
    assert og.__version__.count(".") == 2
    assert stories.type == "llama"
    assert stories.device_type == "CPU"
    assert og.is_cuda_available() is False and og.is_dml_available() is False


def test_tokenizer_round_trip_and_properties(stories, stories_dir):
    tokenizer = og.Tokenizer(stories)
    ids = tokenizer.encode("Once upon a time there was a dragon")
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int32 and ids.ndim == 1
    assert ids[0] == tokenizer.bos_token_id == 1
    assert tokenizer.decode(ids) == "Once upon a time there was a dragon"
    assert tokenizer.decode(ids.tolist()) == tokenizer.decode(ids)  # lists work too
    assert 2 in tokenizer.eos_token_ids.tolist()
    assert isinstance(tokenizer.pad_token_id, int)
    # A llama model names no tool-call or reasoning tokens (onnxruntime-genai's getters throw too).
    for tag in ("bot_token_id", "eot_token_id", "bor_token_id", "eor_token_id"):
        with pytest.raises(RuntimeError, match=f"sets no model.{tag} and model type 'llama' has no default"):
            getattr(tokenizer, tag)
    # The CLI tokenizer gives the same ids.
    cli = run_cli("tokenize", "--tokenizer", stories_dir, "--text", "Once upon a time there was a dragon")
    assert [int(t) for t in cli.split(",")] == ids.tolist()[1:]  # the CLI adds no BOS


def test_batch_encode_decode(stories):
    tokenizer = og.Tokenizer(stories)
    texts = ["Once upon a time", "The cat"]
    batch = tokenizer.encode_batch(texts)  # a Tensor, as onnxruntime-genai's
    assert isinstance(batch, og.Tensor) and batch.type() == 6  # int32
    first, second = tokenizer.encode(texts[0]).tolist(), tokenizer.encode(texts[1]).tolist()
    assert batch.shape() == [2, max(len(first), len(second))]
    ids = batch.as_numpy()
    assert ids.dtype == np.int32 and ids[0].tolist()[:len(first)] == first and ids[1].tolist()[:len(second)] == second
    assert np.asarray(batch).tolist() == ids.tolist() and np.asarray(batch, dtype=np.int64).dtype == np.int64
    assert tokenizer.decode_batch(batch) == texts
    assert tokenizer.decode_batch(ids) == texts


def test_stream_decodes_what_decode_gives(stories):
    tokenizer = og.Tokenizer(stories)
    ids = greedy(stories, tokenizer.encode("Once upon a time"), 40)
    stream = tokenizer.create_stream()
    prompt_len = len(tokenizer.encode("Once upon a time"))
    text = "".join(stream.decode(t) for t in ids[prompt_len:])
    assert text == tokenizer.decode(ids[prompt_len:]) or text.strip() == tokenizer.decode(ids[prompt_len:]).strip()
    assert len(text) > 20


def test_chat_template_override_and_options(stories):
    tokenizer = og.Tokenizer(stories)
    messages = [{"role": "user", "content": "Hi"}]
    template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"
    assert tokenizer.apply_chat_template(json.dumps(messages), template_str=template) == "<user>Hi<a>"
    assert tokenizer.apply_chat_template(messages, template_str=template, add_generation_prompt=False) == "<user>Hi"
    tools_template = "{{ tools[0]['name'] }}"
    assert tokenizer.apply_chat_template("[]", template_str=tools_template, tools='[{"name": "f"}]') == "f"
    with pytest.raises(TypeError):
        tokenizer.apply_chat_template(json.dumps(messages), template)  # keyword-only, as in onnxruntime_genai


def test_to_token_id_and_update_options(stories):
    tokenizer = og.Tokenizer(stories)
    assert tokenizer.to_token_id("<s>") == 1
    tokenizer.update_options(add_special_tokens=False)
    assert tokenizer.encode("Once")[0] != 1
    tokenizer.update_options(add_special_tokens=True)
    assert tokenizer.encode("Once")[0] == 1


def test_search_options_and_legacy_attributes(stories):
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=33, top_p=0.5, do_sample=True, top_k=7)
    options = params.get_search_options()
    assert options["max_length"] == 33 and options["top_k"] == 7 and options["do_sample"] is True
    assert options["top_p"] == pytest.approx(0.5)
    params.max_length = 44
    params.temperature = 0.25
    params.do_sample = False
    assert params.max_length == 44 and params.temperature == pytest.approx(0.25) and params.do_sample is False
    params.set_search_options({"max_length": 12})  # the older dict form
    assert params.max_length == 12
    params.try_graph_capture_with_max_batch_size(4)  # accepted, nothing to do on CPU


def test_legacy_input_ids_flow_and_compute_logits(stories):
    tokenizer = og.Tokenizer(stories)
    prompt = tokenizer.encode("Once upon a time")
    params = og.GeneratorParams(stories)
    params.input_ids = prompt
    params.max_length = 30
    generator = og.Generator(stories, params)
    assert generator.token_count() == len(prompt)
    while not generator.is_done():
        generator.compute_logits()
        generator.generate_next_token()
        assert generator.get_output_tokens()[generator.get_current_sequence_length() - 1] == generator.get_next_tokens()[0]
    assert generator.get_output_tokens().tolist() == greedy(stories, prompt, 30)


def test_batched_legacy_input_ids_set_the_batch_size(stories):
    tokenizer = og.Tokenizer(stories)
    params = og.GeneratorParams(stories)
    params.input_ids = tokenizer.encode_batch(["Once upon a time", "The cat sat"])
    params.max_length = 20
    generator = og.Generator(stories, params)
    while not generator.is_done():
        generator.generate_next_token()
    assert len(generator.get_next_tokens()) == 2
    first = tokenizer.encode("Once upon a time")
    assert generator.get_sequence(0).tolist()[:len(first)] == first.tolist()


def test_logits_are_numpy_views_that_keep_the_generator(stories):
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=20)
    generator = og.Generator(stories, params)
    generator.append_tokens([1, 403, 407])
    logits = generator.get_logits()
    assert logits.dtype == np.float32 and logits.shape[-1] == 512
    best = int(np.argmax(logits.reshape(-1)))
    del generator
    gc.collect()
    assert int(np.argmax(logits.reshape(-1))) == best  # still readable: the view holds the generator


def test_set_logits_drives_the_choice(stories):
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=20)
    generator = og.Generator(stories, params)
    generator.append_tokens([1, 403])
    forced = np.zeros((1, 512), dtype=np.float32)
    forced[0, 77] = 100.0
    generator.set_logits(forced)
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [77]
    assert generator.get_sequence(0).tolist() == [1, 403, 77]


def test_model_deleted_while_generating(stories_dir):
    model = og.Model(str(stories_dir))
    tokenizer = og.Tokenizer(model)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=30)
    generator = og.Generator(model, params)
    prompt = tokenizer.encode("Once upon a time")
    generator.append_tokens(prompt)
    del model, params
    gc.collect()
    while not generator.is_done():
        generator.generate_next_token()
    assert tokenizer.decode(generator.get_sequence(0)).startswith("Once upon a time")
    reference = og.Model(str(stories_dir))
    assert generator.get_sequence(0).tolist() == greedy(reference, prompt, 30)


def test_threads_generate_side_by_side(stories):
    prompt = [1, 403, 407, 261]
    expected = greedy(stories, prompt, 60)
    results = [None] * 4

    def work(i):
        results[i] = greedy(stories, prompt, 60)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_terminate_session_runtime_option(stories):
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=30)
    generator = og.Generator(stories, params)
    generator.append_tokens([1, 403])
    generator.set_runtime_option("terminate_session", "1")
    generator.generate_next_token()  # the prompt's logits are current: no model run to stop
    with pytest.raises(RuntimeError, match="terminat"):
        generator.generate_next_token()
    generator.set_runtime_option("terminate_session", "0")
    with pytest.raises(RuntimeError, match="failed"):
        generator.generate_next_token()  # unusable until rewind_to(0)
    generator.rewind_to(0)
    generator.append_tokens([1, 403])
    generator.generate_next_token()
    assert generator.get_sequence(0).tolist() == greedy(stories, [1, 403], 3)
    with pytest.raises(RuntimeError, match="unknown runtime option"):
        generator.set_runtime_option("no_such_option", "1")


def test_terminate_session_from_another_thread(stories):
    """Ctrl-C handlers set terminate_session while generate_next_token runs in another thread."""
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=512)
    generator = og.Generator(stories, params)
    generator.append_tokens([1, 403])
    errors = []
    started = threading.Event()

    def work():
        try:
            while True:  # rewinds so that it never finishes on its own
                started.set()
                while not generator.is_done():
                    generator.generate_next_token()
                generator.rewind_to(2)
        except RuntimeError as e:
            errors.append(str(e))

    thread = threading.Thread(target=work)
    thread.start()
    started.wait()
    generator.set_runtime_option("terminate_session", "1")
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert errors and "terminat" in errors[0]


def test_config_forms(stories_dir):
    config = og.Config(str(stories_dir))
    config.clear_providers()
    config.append_provider("cpu")
    config.overlay(json.dumps({"search": {"max_length": 17}}))
    model = og.Model(config)
    assert og.GeneratorParams(model).max_length == 17
    # The tutorial's keyword form, given with the folder.
    model = og.Model(str(stories_dir), config=og.Config(execution_provider="cpu"))
    assert model.device_type == "CPU"


def test_model_data_from_memory_and_hardware_options(gpt2_dir, tmp_path):
    """Config.add_model_data: the ONNX file's bytes from memory (onnxruntime-genai's
    LoadModelFromMemory), here in a copy of the folder without the file; the buffer is held."""
    folder = tmp_path / "no-onnx"
    shutil.copytree(gpt2_dir, folder)
    (folder / "past.onnx").chmod(0o644)
    data = bytearray((folder / "past.onnx").read_bytes())
    (folder / "past.onnx").unlink()
    with pytest.raises(Exception, match="past.onnx"):
        og.Model(str(folder))
    config = og.Config(str(folder))
    config.add_model_data("past.onnx", data)
    with pytest.raises(BufferError):
        data.extend(b"x")  # held by the config
    with pytest.raises(TypeError, match="contiguous buffer, got str"):
        config.add_model_data("other.onnx", "not bytes")
    with pytest.raises(Exception, match="no model data was added for 'other.onnx'"):
        config.remove_model_data("other.onnx")
    config.set_decoder_provider_options_hardware_device_type("cpu", "CPU")
    config.set_decoder_provider_options_hardware_device_id("cpu", 0)
    config.set_decoder_provider_options_hardware_vendor_id("cpu", 0x1022)
    config.clear_decoder_provider_options_hardware_vendor_id("cpu")
    config.clear_decoder_provider_options_hardware_device_id("cpu")
    config.clear_decoder_provider_options_hardware_device_type("cpu")
    with pytest.raises(Exception, match="cuda"):
        config.set_decoder_provider_options_hardware_device_id("cuda", 0)

    from_memory = greedy(og.Model(config), GPT2_PROMPT, 10)
    assert from_memory == greedy(og.Model(str(gpt2_dir)), GPT2_PROMPT, 10) == GPT2_GREEDY
    # The same bytes given to a Config without a folder, replayed onto the folder's.
    replayed = og.Config()
    replayed.add_model_data("past.onnx", bytes(data))
    assert greedy(og.Model(str(folder), config=replayed), GPT2_PROMPT, 10) == from_memory
    del config
    data.extend(b"x")  # released with the config


def test_ngram_speculative_decoding(stories, stories_dir):
    """onnxruntime-genai's set_speculative_options / get_speculative_stats: the same tokens as
    standard decoding (greedy, and sampled with a seed: n-gram drafts are verified by the search's
    own choice), counters that add up."""
    tokenizer = og.Tokenizer(stories)
    prompt = tokenizer.encode("Once upon a time, there was a little girl. She liked to play. Once upon a time, there")

    def run(sampling, speculative):
        params = og.GeneratorParams(stories)
        params.set_search_options(max_length=120, **sampling)
        if speculative:
            params.set_speculative_options(speculative)
        generator = og.Generator(stories, params)
        generator.append_tokens(prompt)
        while not generator.is_done():
            generator.generate_next_token()
        return list(generator.get_sequence(0)), generator.get_speculative_stats()

    for sampling in ({}, {"do_sample": True, "top_k": 20, "random_seed": 11}):
        standard, none = run(sampling, None)
        assert none["rounds"] == 0 and none["effective_k"] == 0
        tokens, stats = run(sampling, {"ngram_size": 3, "max_draft_tokens": 4, "ngram_chained_lookup": True})
        assert tokens == standard
        assert stats["rounds"] > 0 and stats["draft_tokens_accepted"] > 0, stats
        assert stats["draft_tokens_evaluated"] == stats["draft_tokens_accepted"] + stats["correction_tokens"]
        assert stats["target_forward_passes"] == stats["rounds"] + stats["standard_fallback_steps"]
        assert len(tokens) - len(prompt) - 1 == stats["tokens_emitted"] + stats["standard_fallback_steps"]
        assert stats["acceptance_rate"] == stats["draft_tokens_accepted"] / stats["draft_tokens_evaluated"]
        assert stats["effective_k"] == 4 and isinstance(stats["total_target_verify_ms"], float)

    params = og.GeneratorParams(stories)
    assert params.get_speculative_options() == {"max_draft_tokens": 4, "ngram_size": 0, "ngram_chained_lookup": False,
                                                "min_adaptive_k": 0, "cooldown": False}
    params.set_speculative_options(ngram_size=4, cooldown=True)
    assert params.get_speculative_options()["ngram_size"] == 4
    assert params.get_speculative_options()["cooldown"] is True
    with pytest.raises(Exception, match="must be a boolean"):
        params.set_speculative_options(cooldown=1)
    with pytest.raises(Exception, match="unknown key 'speculative.draft'"):
        params.set_speculative_options(draft=2)
    with pytest.raises(TypeError, match="must be a bool, int or float"):
        params.set_speculative_options(ngram_size="3")
    params.set_speculative_options(ngram_size=17)
    with pytest.raises(Exception, match=r"speculative.ngram_size must be 0 \(off\) or in \[2, 16\], got 17"):
        og.Generator(stories, params)


def with_logits_bias(gpt2_dir, folder, name="logits_bias"):
    """A copy of the tiny gpt2 whose graph adds an extra input, `name` [1000], to its logits."""
    import onnx
    from onnx import TensorProto, helper

    shutil.copytree(gpt2_dir, folder)
    model = onnx.load(str(folder / "past.onnx"))
    graph = model.graph
    for node in graph.node:
        node.output[:] = ["unbiased" if o == "logits" else o for o in node.output]
    graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1000]))
    graph.node.append(helper.make_node("Add", ["unbiased", name], ["logits"]))
    (folder / "past.onnx").chmod(0o644)
    onnx.save(model, str(folder / "past.onnx"))
    return folder


def test_tensors_and_named_tensors():
    """og.Tensor copies its array (onnxruntime-genai's Tensor(np.array)); NamedTensors is a dict of them."""
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensor = og.Tensor(source)
    assert tensor.shape() == [3, 4] and tensor.type() == 1
    view = tensor.as_numpy()
    assert view.dtype == np.float32 and view.tolist() == source.tolist()
    source[0, 0] = 99.0  # a copy: the tensor keeps its values
    assert view[0, 0] == 0.0
    view[0, 1] = 7.0  # a view: the tensor sees it
    assert tensor.as_numpy()[0, 1] == 7.0
    assert tensor.data().nbytes == 48
    assert og.Tensor(np.zeros((2,), np.float16)).type() == 10
    assert og.Tensor(np.asfortranarray(np.ones((2, 3), np.int64))).shape() == [2, 3]
    with pytest.raises(TypeError):
        og.Tensor(np.array(["text"]))

    named = og.NamedTensors()
    named["a"] = tensor
    named["b"] = np.array([1, 2, 3], dtype=np.int32)
    assert len(named) == 2 and sorted(named.keys()) == ["a", "b"]
    assert "a" in named and "c" not in named
    assert named["b"].as_numpy().tolist() == [1, 2, 3]
    assert named["a"].as_numpy()[0, 1] == 7.0  # the same tensor, not a copy
    del named["a"]
    assert named.keys() == ["b"]
    with pytest.raises(KeyError):
        named["a"]
    with pytest.raises(KeyError):
        del named["a"]


def test_model_inputs_feed_the_decoder(gpt2_dir, tmp_path):
    """set_model_input on the params or the generator feeds an input onnxllm does not fill itself
    (arrays are copied, Tensors kept); a name the graph lacks is ignored (onnxruntime-genai's
    Tensor_And_AddExtraInput)."""
    prompt = np.array(GPT2_PROMPT, dtype=np.int32)
    plain = og.Model(str(gpt2_dir))
    params = og.GeneratorParams(plain)
    params.set_search_options(max_length=10)
    params.set_model_input("test_input", np.arange(12, dtype=np.float32).reshape(3, 4))
    generator = og.Generator(plain, params)
    generator.set_model_input("test_input", og.Tensor(np.zeros(3, np.float32)))
    generator.append_tokens(og.Tensor(prompt))  # a Tensor of ids works as an array does
    base_logits = generator.get_logits().copy()
    while not generator.is_done():
        generator.generate_next_token()
    assert generator.get_sequence(0).tolist() == GPT2_GREEDY
    assert generator.get_input("input_ids").tolist() == [[114]]
    with pytest.raises(RuntimeError, match="not supported for model type 'gpt2'"):
        generator.set_inputs(og.NamedTensors())
    with pytest.raises(RuntimeError, match="is an input onnxllm fills itself"):
        generator.set_model_input("input_ids", np.zeros((1, 1), np.int32))
    with pytest.raises(TypeError, match="numpy array or a Tensor"):
        generator.set_model_input("logits_bias", [1.0, 2.0])

    biased = og.Model(str(with_logits_bias(gpt2_dir, tmp_path / "biased")))
    params = og.GeneratorParams(biased)
    params.set_search_options(max_length=12)
    generator = og.Generator(biased, params)
    with pytest.raises(RuntimeError, match="the decoder graph input 'logits_bias' is not set"):
        generator.append_tokens(prompt)
    assert generator.token_count() == 0
    bias = np.zeros(1000, np.float32)
    bias[5] = 1000.0
    generator.set_model_input("logits_bias", bias)
    generator.append_tokens(prompt)
    np.testing.assert_allclose(generator.get_logits(), base_logits + bias, rtol=0, atol=1e-3)
    generator.generate_next_token()
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [5]
    assert generator.get_input("logits_bias").tolist() == bias.tolist()
    # A new value feeds the later runs.
    other = np.zeros(1000, np.float32)
    other[7] = 1000.0
    generator.set_model_input("logits_bias", og.Tensor(other))
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [7]
    with pytest.raises(RuntimeError, match="must be float32 but a float64 tensor"):
        generator.set_model_input("logits_bias", np.zeros(1000))
    gc.collect()  # the failed call left the Tensor's value bound
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [7]
    params.set_model_input("logits_bias", other)  # a generator takes the params' inputs at creation
    fresh = og.Generator(biased, params)
    # Arrays are copied when set: released or changed afterwards, the generator keeps the value.
    other[7] = 0.0
    del params, other
    gc.collect()
    fresh.append_tokens(prompt)
    fresh.generate_next_token()
    assert fresh.get_next_tokens().tolist() == [7]
    # Read-only and big-endian arrays are values like any other.
    swapped = np.zeros(1000, dtype=">f4")
    swapped[9] = 1000.0
    fresh.set_model_input("logits_bias", swapped)
    fresh.generate_next_token()
    assert fresh.get_next_tokens().tolist() == [9]
    readonly = np.frombuffer(np.where(np.arange(1000) == 11, 1000.0, 0.0).astype(np.float32).tobytes(), np.float32)
    fresh.set_model_input("logits_bias", readonly)
    fresh.generate_next_token()
    assert fresh.get_next_tokens().tolist() == [11]


def test_hidden_states_and_snapshot(gpt2_dir, tmp_path):
    """set_hidden_states feeds an input named hidden_states (none: a no-op); snapshot_state has
    no recurrent state to keep."""
    plain = og.Model(str(gpt2_dir))
    params = og.GeneratorParams(plain)
    params.set_search_options(max_length=10)
    generator = og.Generator(plain, params)
    generator.set_hidden_states(np.ones(1000, np.float32))  # no such input: nothing bound
    generator.snapshot_state()
    generator.append_tokens(GPT2_PROMPT)
    while not generator.is_done():
        generator.generate_next_token()
    assert generator.get_sequence(0).tolist() == GPT2_GREEDY
    hidden = og.Model(str(with_logits_bias(gpt2_dir, tmp_path / "hidden", "hidden_states")))
    params = og.GeneratorParams(hidden)
    params.set_search_options(max_length=10)
    generator = og.Generator(hidden, params)
    values = np.zeros(1000, np.float32)
    values[42] = 1000.0
    generator.set_hidden_states(values)
    generator.append_tokens(GPT2_PROMPT)
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [42]


def test_model_package(gpt2_dir, tmp_path):
    """An ONNX Runtime model package: og.Model picks the package's only provider's variant,
    Config.from_package_ep one of several; the tokenizer comes from a shared asset."""
    package = tmp_path / "tiny.ortpackage"
    asset = package / "shared_assets" / "sha256-00aa"
    variant = package / "cpu"
    asset.mkdir(parents=True)
    variant.mkdir()
    for f in gpt2_dir.iterdir():
        target = asset if f.name.startswith("tokenizer") or f.name == "vocab.json" else variant
        shutil.copy(f, target / f.name)
    config = json.loads((gpt2_dir / "genai_config.json").read_text())
    config["model"]["tokenizer_dir"] = "sha256:00aa"
    (variant / "genai_config.json").write_text(json.dumps(config))
    variants = {"cpu": {"ep": "CPUExecutionProvider"}}
    (package / "manifest.json").write_text(json.dumps({"components": {"model": {"variants": variants}}}))

    model = og.Model(str(package))
    assert greedy(model, GPT2_PROMPT, 10) == GPT2_GREEDY
    assert og.Tokenizer(model).decode(GPT2_GREEDY) == og.Tokenizer(og.Model(str(gpt2_dir))).decode(GPT2_GREEDY)
    variants["npu"] = {"ep": "QNNExecutionProvider"}
    (package / "manifest.json").write_text(json.dumps({"components": {"model": {"variants": variants}}}))
    with pytest.raises(RuntimeError, match="several execution providers"):
        og.Model(package)
    assert greedy(og.Model(og.Config.from_package_ep(package, "cpu")), GPT2_PROMPT, 10) == GPT2_GREEDY
    with pytest.raises(RuntimeError, match="not QNNExecutionProvider"):
        og.Config.from_package_ep(str(package), "qnn")
    with pytest.raises(RuntimeError, match="is not a model package"):
        og.Config.from_package_ep(str(gpt2_dir), "cpu")


def test_draft_model_speculation(gpt2_dir, tmp_path, capfd):
    """A genai_config.json with a model.draft decoder (here the tiny gpt2 itself): the same tokens
    as the model alone, greedy and sampled, with the draft's runs counted; a draft that cannot hold
    max_length (its graph's past fixed at 8 positions) leaves speculation off, saying so."""
    import onnx

    folder = tmp_path / "with-draft"
    shutil.copytree(gpt2_dir, folder)
    (folder / "draft").mkdir()
    shutil.copy(gpt2_dir / "past.onnx", folder / "draft" / "past.onnx")
    config = json.loads((gpt2_dir / "genai_config.json").read_text())
    draft = dict(config["model"]["decoder"], filename="draft/past.onnx")
    config["model"]["draft"] = draft
    (folder / "genai_config.json").chmod(0o644)
    (folder / "genai_config.json").write_text(json.dumps(config))

    def run(model, **options):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=10, **options)
        generator = og.Generator(model, params)
        generator.append_tokens(GPT2_PROMPT)
        while not generator.is_done():
            generator.generate_next_token()
        return generator.get_sequence(0).tolist(), generator.get_speculative_stats()

    plain = og.Model(str(gpt2_dir))
    drafted = og.Model(str(folder))
    for options in ({}, {"do_sample": True, "top_k": 5, "random_seed": 3}):
        tokens, stats = run(drafted, **options)
        assert tokens == run(plain, **options)[0]
        assert stats["rounds"] > 0 and stats["draft_forward_passes"] > 0
        assert stats["draft_tokens_accepted"] > 0  # the draft is the model itself
    assert run(drafted)[0] == GPT2_GREEDY

    fixed = onnx.load(str(folder / "draft" / "past.onnx"))
    for value in fixed.graph.input:
        if value.name.startswith("past_"):
            value.type.tensor_type.shape.dim[3].dim_value = 8
    (folder / "draft" / "past.onnx").chmod(0o644)
    onnx.save(fixed, str(folder / "draft" / "past.onnx"))
    capfd.readouterr()
    tokens, stats = run(og.Model(str(folder)))
    assert tokens == GPT2_GREEDY and stats["rounds"] == 0
    assert "no draft model for this generator" in capfd.readouterr().err


def test_unsupported_features_say_so(stories):
    for call in (lambda: og.Images.open("x.png"), lambda: og.Audios.open("x.wav"), lambda: og.Adapters(stories),
                 lambda: stories.create_multimodal_processor(), lambda: og.MultiModalProcessor(),
                 lambda: stories.create_streaming_processor(), lambda: og.MtpGenerator(stories, stories, None)):
        with pytest.raises(NotImplementedError, match="not supported by onnxllm"):
            call()

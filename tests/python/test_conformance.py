"""../shared/conformance/genai-cases.json through the Python API, one test per case (as
tests/unit/genai/conformance_test.cc runs them through the engine)."""

import json
import math

import numpy as np
import pytest

import onnxllm as og
from conftest import shared

COVERED = {"greedy_batch2", "greedy_batch1", "rewind_batch1", "rewind_batch2", "prompt_logits",
           "max_length_enforced", "param_validation", "sampling_top_k_1_is_greedy", "sampling_top_k_2",
           "sampling_distribution", "no_repeat_ngram", "repetition_penalty", "rejects_bad_config"}


@pytest.fixture(scope="module")
def cases():
    return {c["name"]: c for c in json.loads(shared("conformance/genai-cases.json").read_text())["cases"]}


@pytest.fixture(scope="module")
def gpt2_path():
    return str(shared("models/tiny-random-gpt2-fp32"))


def gpt2(path, overlay=None):
    config = og.Config(path)
    if overlay:
        config.overlay(json.dumps({"model": overlay}))
    return og.Model(config)


def params_for(model, case, **extra):
    params = og.GeneratorParams(model)
    params.set_search_options(**case.get("search", {}), **extra)
    return params


def generate_to_end(generator):
    while not generator.is_done():
        generator.generate_next_token()


def expect_sequences(generator, expected):
    for i, row in enumerate(expected):
        assert generator.get_sequence(i).tolist() == row, f"row {i}"
    with pytest.raises(IndexError):
        generator.get_sequence(len(expected))


def test_all_cases_are_covered(cases):
    assert set(cases) == COVERED


@pytest.mark.parametrize("name", ["greedy_batch2", "greedy_batch1"])
def test_greedy(cases, gpt2_path, name):
    case = cases[name]
    model = gpt2(gpt2_path)
    generator = og.Generator(model, params_for(model, case))
    generator.append_tokens(np.array(case["input_ids"], dtype=np.int32))
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])


def test_rewind_batch1(cases, gpt2_path):
    case = cases["rewind_batch1"]
    model = gpt2(gpt2_path)
    generator = og.Generator(model, params_for(model, case))
    generator.append_tokens(case["input_ids"][0])  # a list works as well as numpy
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])
    generator.rewind_to(5)
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])
    generator.rewind_to(3)
    generator.append_tokens([731, 731])
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])


def test_rewind_batch2(cases, gpt2_path):
    case = cases["rewind_batch2"]
    model = gpt2(gpt2_path)
    generator = og.Generator(model, params_for(model, case))
    generator.append_tokens(np.array(case["input_ids"], dtype=np.int64))  # converted to int32
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])
    generator.rewind_to(0)
    generator.append_tokens(case["input_ids"])
    generate_to_end(generator)
    expect_sequences(generator, case["expected_sequences"])


def test_prompt_logits(cases, gpt2_path):
    case = cases["prompt_logits"]
    model = gpt2(gpt2_path)
    generator = og.Generator(model, params_for(model, case))
    generator.append_tokens(case["input_ids"])
    indices = [0, 200, 400, 600, 800]
    logits = generator.get_output("logits")
    assert logits.shape == (2, 4, 1000) and logits.dtype == np.float32
    np.testing.assert_allclose(logits[:, :, indices], case["expected_logits_sampled"], atol=1e-3)
    generator.generate_next_token()
    generator.generate_next_token()
    step = generator.get_output("logits")
    assert step.shape == (2, 1, 1000)
    np.testing.assert_allclose(step[:, 0, indices], case["expected_logits_after_two_steps"], atol=1e-3)


def test_max_length_enforced(cases, gpt2_path):
    case = cases["max_length_enforced"]
    model = gpt2(gpt2_path)
    generator = og.Generator(model, params_for(model, case))
    generator.append_tokens([1, 2, 3, 5, 8])
    with pytest.raises(RuntimeError, match=r"exceed search.max_length \(7\)"):
        generator.append_tokens([13, 21, 34, 55, 89])
    assert generator.token_count() == 5  # unchanged, still usable
    generator.generate_next_token()
    generator.generate_next_token()
    assert generator.is_done()
    generator = og.Generator(model, params_for(model, case, batch_size=3))
    with pytest.raises(RuntimeError, match=r"10 tokens per row after 0 exceed search.max_length \(7\)"):
        generator.append_tokens([1] * 30)


def test_param_validation(cases, gpt2_path):
    model = gpt2(gpt2_path)

    def creation_error(**options):
        params = og.GeneratorParams(model)
        params.set_search_options(**options)
        with pytest.raises(RuntimeError) as error:
            og.Generator(model, params)
        return str(error.value)

    assert "search.num_beams (512) must be in [1, 32]" in creation_error(num_beams=512)
    assert "search.batch_size (512) must be in [1, 32]" in creation_error(batch_size=512)
    assert "search.num_beams (0) must be in [1, 32]" in creation_error(num_beams=0)
    assert "search.batch_size (0) must be in [1, 32]" in creation_error(batch_size=0)
    assert "search.num_return_sequences (8) must be in [1, num_beams = 4]" in creation_error(
        num_beams=4, num_return_sequences=8)
    assert "search.num_return_sequences (0) must be in [1, num_beams = 1]" in creation_error(num_return_sequences=0)
    ok = og.GeneratorParams(model)
    ok.set_search_options(num_beams=4, num_return_sequences=2, max_length=20)
    og.Generator(model, ok)


def test_sampling_top_k_1_is_greedy(cases, gpt2_path):
    case = cases["sampling_top_k_1_is_greedy"]
    model = gpt2(gpt2_path, case["overlay"])
    generator = og.Generator(model, params_for(model, case))
    generator.set_logits(np.array(case["injected_logits"], dtype=np.float32))
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == case["expected_next_tokens"]


def test_sampling_top_k_2(cases, gpt2_path):
    case = cases["sampling_top_k_2"]
    model = gpt2(gpt2_path, {**case["overlay"], "eos_token_id": 0})  # eos must be inside the vocabulary
    logits = np.array(case["injected_logits"], dtype=np.float32)
    for top_p in (0.0, 0.25):
        draws = 0
        for seed in range(100):
            generator = og.Generator(model, params_for(model, case, random_seed=seed, top_p=top_p, max_length=10))
            generator.set_logits(logits)
            generator.generate_next_token()
            for row, token in enumerate(generator.get_next_tokens()):
                assert logits[row, token] > 1.25, f"seed {seed} row {row} top_p {top_p}"
                draws += 1
        assert draws == 400


def check_sampled_distribution(model, vocab, top_k, top_p, temperature):
    row = np.array([1.5 * math.sin(2.3 * i + 0.4) for i in range(vocab)], dtype=np.float32)
    row[vocab - 1] = -100.0  # the EOS id: never chosen, so no row finishes
    order = sorted(range(vocab), key=lambda i: -row[i])
    k = top_k if top_k > 0 else vocab
    expected = np.zeros(vocab)
    for i in order[:k]:
        expected[i] = math.exp(row[i] / temperature)
    total = expected.sum()
    keep = k
    if 0 < top_p < 1:
        cumulative = 0.0
        for n, i in enumerate(order[:k]):
            cumulative += expected[i] / total
            if cumulative >= top_p:
                keep = n + 1
                break
    for i in order[keep:k]:
        expected[i] = 0
    expected /= expected.sum()

    params = og.GeneratorParams(model)
    params.set_search_options(top_k=top_k, temperature=temperature, do_sample=True, batch_size=32, max_length=500,
                              random_seed=5)
    if top_p:
        params.set_search_options(top_p=top_p)
    generator = og.Generator(model, params)
    logits = np.tile(row, (32, 1))
    counts = np.zeros(vocab, dtype=np.int64)
    while not generator.is_done():  # 500 steps x 32 rows
        generator.set_logits(logits)
        generator.generate_next_token()
        np.add.at(counts, generator.get_next_tokens(), 1)
    assert counts.sum() == 16000
    for t in range(vocab):
        if expected[t] == 0:
            assert counts[t] == 0, f"filtered token {t} appeared"
        else:
            assert abs(counts[t] / 16000 - expected[t]) < 0.015, f"token {t}"


def test_sampling_distribution(gpt2_path):
    check_sampled_distribution(gpt2(gpt2_path, {"vocab_size": 13, "eos_token_id": 12}), 13, 5, 0.0, 0.8)
    check_sampled_distribution(gpt2(gpt2_path, {"vocab_size": 21, "eos_token_id": 20}), 21, 7, 0.75, 1.0)
    check_sampled_distribution(gpt2(gpt2_path, {"vocab_size": 21, "eos_token_id": 20}), 21, 0, 0.95, 1.0)


def test_no_repeat_ngram(cases, gpt2_path):
    case = cases["no_repeat_ngram"]
    model = gpt2(gpt2_path, case["overlay"])
    logits = np.full(1000, 5.0, dtype=np.float32)
    logits[7] = 10.0
    logits[42] = 8.0
    for size, expected in ((0, 7), (3, 42)):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=20, no_repeat_ngram_size=size)
        generator = og.Generator(model, params)
        generator.append_tokens(case["prefill"])
        generator.set_logits(logits)
        generator.generate_next_token()
        assert generator.get_next_tokens()[0] == expected, f"no_repeat_ngram_size {size}"


def test_repetition_penalty(cases, gpt2_path):
    case = cases["repetition_penalty"]
    model = gpt2(gpt2_path)
    prompts = np.tile(np.array(case["prefill"], dtype=np.int32), (25, 1))
    flat = np.full((25, 1000), 5.0, dtype=np.float32)
    counts = np.zeros(1000, dtype=np.int64)
    for seed in range(20):  # 500 seeded draws
        generator = og.Generator(model, params_for(model, case, batch_size=25, max_length=11, random_seed=seed))
        generator.append_tokens(prompts)
        generator.set_logits(flat)
        generator.generate_next_token()
        np.add.at(counts, generator.get_next_tokens(), 1)
    penalized = counts[:10].sum() / 10
    others = counts[10:].sum() / 990
    assert others > 3 * penalized, (penalized, others)
    assert counts.sum() == 500


def test_rejects_bad_config(gpt2_path):
    model = gpt2(gpt2_path)
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=True, top_k=1001, max_length=10)
    with pytest.raises(RuntimeError, match=r"search.top_k \(1001\) must be less than or equal to model.vocab_size \(1000\)"):
        og.Generator(model, params)
    model = gpt2(gpt2_path, {"vocab_size": 1, "eos_token_id": 0})
    params = og.GeneratorParams(model)
    params.set_search_options(num_beams=2, max_length=10)
    with pytest.raises(RuntimeError, match="vocab_size"):
        og.Generator(model, params)
    model = gpt2(gpt2_path, {"vocab_size": 50})  # eos 98 is outside
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=10)
    with pytest.raises(RuntimeError, match=r"model.eos_token_id \(98\) must be in \[0, vocab_size = 50\)"):
        og.Generator(model, params)

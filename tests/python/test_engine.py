"""og.Engine / og.Request: onnxruntime-genai's continuous-batching pattern (requests added from
another thread while step() loops) on stories260K; every request's greedy tokens equal
og.Generator's for the same prompt, step() returns the caller's own Request objects, and misuse
raises clear errors."""

import threading
import time

import pytest

import onnxllm as og

PROMPTS = ["Once upon a time", "The little dog", "Lily and Tom went to the park", "One day, a bird",
           "The sun was", "Sam had a big red ball and", "In a small town", "Mom said"]


def greedy_params(model, max_length):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=max_length)
    return params


def generated_tokens(model, params, tokens):
    """What og.Generator makes after `tokens` under `params`."""
    generator = og.Generator(model, params)
    generator.append_tokens(tokens)
    while not generator.is_done():
        generator.generate_next_token()
    return list(generator.get_sequence(0))[len(tokens):]


def generator_tokens(model, tokens, max_length):
    return generated_tokens(model, greedy_params(model, max_length), tokens)


def test_continuous_batching_from_another_thread(stories_dir):
    model = og.Model(str(stories_dir))
    tokenizer = og.Tokenizer(model)
    engine = og.Engine(model)
    prompts = [tokenizer.encode(p) for p in PROMPTS]
    max_length = 48
    lock = threading.Lock()
    requests, outputs, finished = [], {}, []

    def make(i):
        request = og.Request(greedy_params(model, max_length))
        request.add_tokens(prompts[i])
        request.set_opaque_data({"index": i})
        return request

    # A quarter up front, the rest from a producer thread while the engine steps.
    for i in range(2):
        requests.append(make(i))
        engine.add_request(requests[-1])

    def fill():
        for i in range(2, len(prompts)):
            request = make(i)
            with lock:
                requests.append(request)
                engine.add_request(request)
            time.sleep(0.01)

    producer = threading.Thread(target=fill)
    producer.start()
    deadline = time.time() + 120
    while (producer.is_alive() or engine.has_pending_requests()) and time.time() < deadline:
        request = engine.step()
        if request is None:
            continue
        with lock:
            assert any(request is r for r in requests), "step() returns the caller's own Request"
            index = request.get_opaque_data()["index"]
            while request.has_unseen_tokens():
                outputs.setdefault(index, []).append(request.get_unseen_token())
            if request.is_done():
                engine.remove_request(request)
                finished.append(index)
    producer.join()
    assert sorted(finished) == list(range(len(prompts)))
    for i, tokens in enumerate(prompts):
        assert outputs[i] == generator_tokens(model, tokens, max_length), PROMPTS[i]
    assert "Once upon a time" in tokenizer.decode(list(prompts[0]) + outputs[0])


def test_turn_continuation_and_misuse(stories_dir):
    model = og.Model(str(stories_dir))
    tokenizer = og.Tokenizer(model)
    engine = og.Engine(model)
    request = og.Request(greedy_params(model, 64))
    with pytest.raises(Exception, match="has no tokens"):
        engine.add_request(request)
    prompt = tokenizer.encode("Once upon a time")
    request.add_tokens(prompt)
    engine.add_request(request)
    with pytest.raises(Exception, match="already in this engine"):
        engine.add_request(request)
    assert engine.step() is request
    with pytest.raises(Exception, match="is generating"):
        request.add_tokens([5])
    request.get_unseen_token()
    with pytest.raises(Exception, match="no unseen tokens"):
        request.get_unseen_token()
    with pytest.raises(Exception, match="outside the vocabulary"):
        og.Request(greedy_params(model, 64)).add_tokens([10**6])
    with pytest.raises(TypeError):
        og.Request(model)
    engine.remove_request(request)
    assert request.is_done()
    assert engine.step() is None
    assert not engine.has_pending_requests()


def drain(engine, request):
    """Steps until nothing is pending; the request's unseen tokens."""
    out = []
    while engine.has_pending_requests():
        if engine.step() is request:
            while request.has_unseen_tokens():
                out.append(request.get_unseen_token())
    return out


def test_continue_with_keeps_the_turns_cache(stories_dir):
    """onnxruntime-genai's tool-result flow: a turn completes at EOS, continue_with() adds the next
    turn's tokens and the request runs again with its cache; its tokens equal a Generator's given
    the whole conversation at once."""
    plain = og.Model(str(stories_dir))
    tokenizer = og.Tokenizer(plain)
    prompt = list(tokenizer.encode("Once upon a time"))
    # The 4th generated token made the EOS, so the first turn completes there.
    eos = generator_tokens(plain, prompt, 64)[3]
    config = og.Config(str(stories_dir))
    config.overlay('{"model": {"eos_token_id": %d}}' % eos)
    model = og.Model(config)
    engine = og.Engine(model)
    request = og.Request(greedy_params(model, 64))
    request.add_tokens(prompt)
    with pytest.raises(Exception, match="has no completed turn to continue"):
        request.continue_with([5])
    engine.add_request(request)
    turn1 = drain(engine, request)
    assert turn1[-1] == eos and len(turn1) == 4
    assert request.is_turn_complete()
    more = list(tokenizer.encode(" The end. Then"))
    request.continue_with(more)
    assert not request.is_turn_complete()
    assert engine.has_pending_requests()
    turn2 = drain(engine, request)
    assert request.is_turn_complete()
    whole = prompt + turn1 + more
    assert turn2 == generator_tokens(model, whole, 64)
    assert len(whole) + len(turn2) == 64 or turn2[-1] == eos
    engine.remove_request(request)
    with pytest.raises(Exception, match="the request is finished"):
        request.continue_with([5])


def test_gpt2_packed_attention_runs_paged(gpt2_dir):
    """onnxruntime-genai's gpt2 folders (com.microsoft Attention, one combined past per layer) run
    on the engine's paged cache: sampled tokens (seeded per request, so every step's whole
    distribution counts) and greedy ones equal og.Generator's; the last request comes after one
    with the same 40-token prefix has finished, so it starts from that request's cached blocks."""
    import random

    model = og.Model(str(gpt2_dir))
    rng = random.Random(3)
    prefix = [rng.randrange(0, 1000) for _ in range(40)]
    prompts = [[rng.randrange(0, 1000) for _ in range(rng.randrange(1, 60))] for _ in range(10)]
    prompts += [prefix + [5], prefix + [6, 7]]
    for search in ({"do_sample": True, "top_k": 0, "temperature": 1.0, "random_seed": 7}, {"do_sample": False}):
        def params(prompt):
            p = og.GeneratorParams(model)
            p.set_search_options(max_length=len(prompt) + 24, **search)
            return p

        want = [generated_tokens(model, params(prompt), prompt) for prompt in prompts]
        engine = og.Engine(model)
        got = {i: [] for i in range(len(prompts))}
        for batch in (range(len(prompts) - 1), [len(prompts) - 1]):
            for i in batch:
                request = og.Request(params(prompts[i]))
                request.add_tokens(prompts[i])
                request.set_opaque_data(i)
                engine.add_request(request)
            while engine.has_pending_requests():
                request = engine.step()
                if request is None:
                    continue
                while request.has_unseen_tokens():
                    got[request.get_opaque_data()].append(request.get_unseen_token())
        assert [got[i] for i in range(len(prompts))] == want, search
        assert all(len(w) == 24 for w in want)


def test_gpt2_attention_the_engine_cannot_page_is_refused(gpt2_dir, tmp_path):
    """A paged run leaves Attention's mask out, so the engine refuses, by name and when it is
    created, a node that is not causal or whose mask is not the decoder's attention_mask; a
    Generator still runs such a folder."""
    import shutil

    import onnx
    from onnx import helper

    def variant(name, edit):
        folder = tmp_path / name
        shutil.copytree(gpt2_dir, folder)
        model = onnx.load(str(gpt2_dir / "past.onnx"))
        node = [n for n in model.graph.node if n.op_type == "Attention"][2]
        edit(model, node)
        onnx.save(model, str(folder / "past.onnx"))
        return og.Model(str(folder)), node.name

    def bidirectional(model, node):
        for a in node.attribute:
            if a.name == "unidirectional":
                a.i = 0

    def computed_mask(model, node):
        model.graph.node.insert(0, helper.make_node("Identity", ["attention_mask"], ["mask_copy"], name="mask_copy"))
        node.input[3] = "mask_copy"

    for name, edit, message in (("bidirectional", bidirectional, "to be unidirectional"),
                                ("computed_mask", computed_mask, "mask_index to be the decoder's attention_mask")):
        model, node = variant(name, edit)
        with pytest.raises(Exception, match=message) as error:
            og.Engine(model)
        assert node in str(error.value)
        generator_tokens(model, [1, 2, 3], 8)  # the Generator path is unaffected

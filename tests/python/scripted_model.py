"""A genai-layout model whose output is scripted: the next token depends only on the last one
(a lookup table), through a real GroupQueryAttention layer whose contribution is multiplied by zero,
so it runs in the engine's paged cache like any built model. Its character tokenizer has added tokens
that spell a tool call (by default Qwen / Hermes', three tokens), and its chat template ends the
prompt with '~' when tools are offered: from '~' the model writes

    <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></s>

and from any other character a run of lowercase letters. Used by the server's tool-call tests."""

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOOL_CALL = ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]
TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if tools %}~{% endif %}"
# The same call in the other conventions the server reads (src/server/tool_calls.h), each starting
# with that convention's opening as one token, with a template that names the convention as the
# real ones do (Mistral's [TOOL_CALLS], Llama 3's ipython role).
CALLS = {
    "mistral": (["[TOOL_CALLS]", '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'],
                "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if tools %}[AVAILABLE_TOOLS]~{% endif %}"),
    "llama3": (['{"name": "', 'get_weather", "parameters": {"city": "Paris"}}'],
               "{% for m in messages %}{% if m['role'] == 'tool' %}<|start_header_id|>ipython<|end_header_id|>{% endif %}"
               "{{ m['content'] }}{% endfor %}{% if tools %}~{% endif %}"),
}


def write(folder, template=TEMPLATE, call=TOOL_CALL):
    """The model folder; from '~' the model writes the tokens of `call` in turn, then </s>."""
    folder.mkdir(parents=True, exist_ok=True)
    chars = [chr(c) for c in range(0x20, 0x7F)]
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials + chars)}
    added = {t: len(vocab) + i for i, t in enumerate(call)}
    size = len(vocab) + len(added)
    tok = {"version": "1.0",
           "added_tokens": [{"id": i, "content": t, "special": True, "normalized": False, "single_word": False,
                             "lstrip": False, "rstrip": False} for i, t in enumerate(specials)] +
                           [{"id": i, "content": t, "special": False, "normalized": False, "single_word": False,
                             "lstrip": False, "rstrip": False} for t, i in added.items()],
           "normalizer": None, "pre_tokenizer": None, "post_processor": None,
           "decoder": {"type": "Fuse"},  # tokens joined as written (without a decoder, with spaces)
           "model": {"type": "BPE", "unk_token": "<unk>", "merges": [], "vocab": vocab}}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "clean_up_tokenization_spaces": False, "chat_template": template}))

    nxt = np.zeros(size, dtype=np.int64)
    letters = [vocab[chr(ord("a") + i)] for i in range(26)]
    for i in range(size):
        nxt[i] = letters[(i * 7) % 26]
    chain = [vocab["~"]] + [added[t] for t in call] + [vocab["</s>"]]
    for a, b in zip(chain, chain[1:]):
        nxt[a] = b
    table = np.zeros((size, size), dtype=np.float32)
    table[np.arange(size), nxt] = 10.0

    dim = 8
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("EQ", rng.standard_normal((size, dim)).astype(np.float32)),
        ("EK", rng.standard_normal((size, dim)).astype(np.float32)),
        ("EV", rng.standard_normal((size, dim)).astype(np.float32)),
        ("W", np.zeros((dim, size), dtype=np.float32)),
        ("table", table), ("axes1", np.array([1], dtype=np.int64)), ("one", np.array(1, dtype=np.int64))]]
    nodes = [
        helper.make_node("Gather", ["EQ", "input_ids"], ["q"]),
        helper.make_node("Gather", ["EK", "input_ids"], ["k"]),
        helper.make_node("Gather", ["EV", "input_ids"], ["v"]),
        helper.make_node("ReduceSum", ["attention_mask", "axes1"], ["mask_sum"], keepdims=0),
        helper.make_node("Sub", ["mask_sum", "one"], ["seqlens64"]),
        helper.make_node("Cast", ["seqlens64"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "one"], ["total64"]),
        helper.make_node("Cast", ["total64"], ["total_sequence_length"], to=TensorProto.INT32),
        helper.make_node("GroupQueryAttention", ["q", "k", "v", "past_key_values.0.key", "past_key_values.0.value",
                                                 "seqlens_k", "total_sequence_length"],
                         ["attn", "present.0.key", "present.0.value"], domain="com.microsoft", num_heads=1,
                         kv_num_heads=1),
        helper.make_node("MatMul", ["attn", "W"], ["zero"]),
        helper.make_node("Gather", ["table", "input_ids"], ["scripted"]),
        helper.make_node("Add", ["zero", "scripted"], ["logits"]),
    ]
    kv = ["batch", 1, "past", dim]
    graph = helper.make_graph(
        nodes, "scripted",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
         helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT, kv),
         helper.make_tensor_value_info("past_key_values.0.value", TensorProto.FLOAT, kv)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", size]),
         helper.make_tensor_value_info("present.0.key", TensorProto.FLOAT, ["batch", 1, "total", dim]),
         helper.make_tensor_value_info("present.0.value", TensorProto.FLOAT, ["batch", 1, "total", dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "genai_config.json").write_text(json.dumps({
        "model": {"type": "llama", "vocab_size": size, "context_length": 256, "pad_token_id": 0, "eos_token_id": 2,
                  "bos_token_id": 1,
                  "decoder": {"filename": "model.onnx", "head_size": dim, "hidden_size": dim, "num_attention_heads": 1,
                              "num_hidden_layers": 1, "num_key_value_heads": 1,
                              "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                         "past_key_names": "past_key_values.%d.key",
                                         "past_value_names": "past_key_values.%d.value"},
                              "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                          "present_value_names": "present.%d.value"}}},
        "search": {"max_length": 256}}))
    return folder

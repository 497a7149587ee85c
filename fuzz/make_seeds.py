#!/usr/bin/python3
"""Writes the small valid seed inputs of the config, safetensors, gguf, cli_parse and json_schema fuzzers to
fuzz/seeds/<fuzzer>/ (committed; rerun after changing this script)."""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def write(fuzzer, name, data):
    os.makedirs(os.path.join(ROOT, fuzzer), exist_ok=True)
    with open(os.path.join(ROOT, fuzzer, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


HF = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
      "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8, "num_key_value_heads": 4,
      "vocab_size": 512, "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
      "hidden_act": "silu", "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}
GENAI = {"model": {"type": "llama", "context_length": 512, "vocab_size": 512, "bos_token_id": 1,
                   "eos_token_id": [2, 3], "pad_token_id": 0,
                   "decoder": {"filename": "model.onnx", "head_size": 8, "hidden_size": 64,
                               "num_attention_heads": 8, "num_hidden_layers": 5, "num_key_value_heads": 4,
                               "session_options": {"log_id": "x", "intra_op_num_threads": 1,
                                                   "provider_options": [{"cpu": {}}]},
                               "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                          "past_key_names": "past_key_values.%d.key",
                                          "past_value_names": "past_key_values.%d.value"},
                               "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                           "present_value_names": "present.%d.value"}}},
         "search": {"max_length": 64, "do_sample": True, "top_k": 5, "top_p": 0.9, "temperature": 0.7,
                    "num_beams": 1, "repetition_penalty": 1.1, "past_present_share_buffer": True}}

# config_fuzzer: the first byte picks the loader (see fuzz/config_fuzzer.cc).
write("config_fuzzer", "genai", b"\0" + json.dumps(GENAI).encode())
write("config_fuzzer", "overlay", b"\1" + json.dumps({"model": {"vocab_size": 5}, "search": {"max_length": 20}}).encode())
write("config_fuzzer", "search", b"\2" + json.dumps(GENAI["search"]).encode())
write("config_fuzzer", "hf_llama", b"\3" + json.dumps(HF).encode())
for arch, extra in [("Qwen2ForCausalLM", {"use_sliding_window": True, "sliding_window": 64}),
                    ("Phi3ForCausalLM", {"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4,
                                                          "long_factor": [2.0] * 4,
                                                          "original_max_position_embeddings": 256}}),
                    ("Gemma2ForCausalLM", {"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                                           "head_dim": 8, "query_pre_attn_scalar": 8}),
                    ("LlamaForCausalLM", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                                           "original_max_position_embeddings": 256}})]:
    write("config_fuzzer", "hf_" + arch, b"\3" + json.dumps(dict(HF, architectures=[arch], **extra)).encode())
write("config_fuzzer", "generation", b"\4" + json.dumps({"do_sample": True, "temperature": 0.6, "top_p": 0.9,
                                                        "eos_token_id": [2, 7]}).encode())
write("config_fuzzer", "package", b"\5sha256:00ff/tok\n" + json.dumps(
    {"schema_version": "1.0", "components": {"model": {"variants": {
        "cpu": {"ep": "CPUExecutionProvider", "device": "cpu"},
        "ov": {"ep": "OpenVINOExecutionProvider", "variant_directory": "builds/ov", "compatibility_string": "x"}}}}}).encode())


def safetensors(tensors):
    header, blob = {"__metadata__": {"format": "pt"}}, b""
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + blob


write("safetensors_fuzzer", "f32_f16_bf16", safetensors({
    "a.weight": ("F32", [2, 3], struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, 7)),
    "b.weight": ("F16", [4], struct.pack("<4e", 1, -2, 0.5, 65504)),
    "c.weight": ("BF16", [2, 2], bytes([0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00, 0x80, 0x7f])),
    "d": ("I64", [1], struct.pack("<q", 5))}))
write("safetensors_fuzzer", "scalar_and_empty", safetensors({"s": ("F32", [], struct.pack("<f", 2.0)),
                                                             "e": ("F16", [0, 4], b"")}))

# cli_parse_fuzzer: byte 0 even = --ids rows, odd = --dim NAME=N.
write("cli_parse_fuzzer", "ids", "\0" + "0,0,0,52;0,0,195,731")
write("cli_parse_fuzzer", "ids_spaces", "\0" + " 1, 2 ;3 ,4")
write("cli_parse_fuzzer", "dim", "\1" + "batch_size=3")
write("cli_parse_fuzzer", "dim_large", "\1" + "sequence_length=1099511627776")

# gguf_fuzzer: small GGUF files of every tensor type the builder reads, with Llama metadata, a
# nested array and a vocabulary (the writer of the GGUF tests).
import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import numpy as np  # noqa: E402
import gguf_writer as gw  # noqa: E402

rng = np.random.default_rng(0)
g = gw.Gguf()
for key, t, v in (("general.architecture", gw.STR, "llama"), ("llama.context_length", gw.U32, 64),
                  ("llama.embedding_length", gw.U32, 256), ("llama.block_count", gw.U32, 1),
                  ("llama.feed_forward_length", gw.U32, 256), ("llama.attention.head_count", gw.U32, 4),
                  ("llama.attention.layer_norm_rms_epsilon", gw.F32, 1e-5), ("general.alignment", gw.U32, 32),
                  ("nested", gw.ARR, (gw.ARR, [(gw.I16, [1, 2]), (gw.F64, [0.5])])),
                  ("tokenizer.ggml.model", gw.STR, "llama"),
                  ("tokenizer.ggml.tokens", gw.ARR, (gw.STR, ["<unk>", "<s>", "</s>", "\u2581a"])),
                  ("tokenizer.ggml.scores", gw.ARR, (gw.F32, [0.0, 0.0, 0.0, -1.0])),
                  ("tokenizer.ggml.token_type", gw.ARR, (gw.I32, [2, 3, 3, 1])),
                  ("tokenizer.ggml.add_bos_token", gw.BOOL, True)):
    g.add(key, t, v)
for name, ttype in (("token_embd.weight", gw.GGML_F16), ("blk.0.attn_q.weight", gw.GGML_Q8_0),
                    ("blk.0.attn_k.weight", gw.GGML_Q4_0), ("blk.0.ffn_up.weight", gw.GGML_Q4_K),
                    ("blk.0.ffn_down.weight", gw.GGML_Q6_K), ("output_norm.weight", gw.GGML_F32)):
    shape = (256,) if name.endswith("norm.weight") else (2, 256)
    data, _ = gw.QUANTIZERS[ttype](rng.standard_normal(shape).astype(np.float32).reshape(-1, 256))
    g.tensor(name, list(reversed(shape)), ttype, data)
write("gguf_fuzzer", "llama_all_types", g.to_bytes())
write("gguf_fuzzer", "v2_header_only", gw.Gguf().to_bytes(version=2))

# A schema, a NUL, then the bytes fed to its matcher.
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b\"c", 3, None]}}},
          "required": ["name"], "$defs": {"n": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/n"}]}}}
write("json_schema_fuzzer", "person", json.dumps(PERSON) + "\0" + '{"name": "Zo\u00eb \\u00e9", "age": -12, "tags": ["a", 3]}')
write("json_schema_fuzzer", "tree", json.dumps({"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
                                                "$ref": "#/$defs/t"}) + "\0" + "[[], [[]], [ [ ] ]]")
write("json_schema_fuzzer", "any", "{}\0" + '{"a": [1.5e-3, true, null, "x\\ud83d\\ude00"]}')
write("json_schema_fuzzer", "bounds", json.dumps({"type": "array", "items": {"type": "integer", "minimum": -50,
                                                                              "exclusiveMaximum": -19}}) + "\0" + "[-35, -2, -20]")
write("json_schema_fuzzer", "forks_patterns", json.dumps({"type": "array", "items": {"anyOf": [
    {"type": "object", "properties": {"name": {"const": "ab"}, "p": {"type": "string", "pattern": "^[a-z]{2,4}$"}}},
    {"type": "object", "properties": {"name": {"const": "abc"}, "q": {"type": "integer", "maximum": 9}}}]}}) +
      "\0" + '[{"name": "ab", "p": "xyz"}, {"name": "abc", "q": 7}]')

# A Lark grammar (or "re:" and a regex), a NUL, then the bytes fed to its matcher (\x01: the
# special token <a>).
write("lark_grammar_fuzzer", "tools", 'start: TEXT | <a> call <b>\nTEXT: /[^{<](.|\\n)*/\ncall: %json {"type": "array", '
      '"items": {"anyOf": [{"type": "object", "properties": {"name": {"const": "f"}}}]}}\0' + '\x01[{"name": "f"}]')
write("lark_grammar_fuzzer", "regex", "re:(Yes|No), [a-z]+( [a-z]+){2,4}\\.\0No, it is so.")

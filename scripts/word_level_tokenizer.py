"""Writes a word-level tokenizer.json (and tokenizer_config.json) for a random-weight model folder,
so that text scripts can run on it: ids 0-2 are <unk>, <s>, </s>, the rest words of the
tutorial's prompt and numbered filler words. Usage: word_level_tokenizer.py MODEL_DIR VOCAB_SIZE"""

import json
import pathlib
import sys

folder, vocab_size = pathlib.Path(sys.argv[1]), int(sys.argv[2])
words = ["<unk>", "<s>", "</s>"] + "Write a short haiku about autumn leaves :".split()
words += [f"w{i}" for i in range(len(words), vocab_size)]
tokenizer = {
    "version": "1.0",
    "added_tokens": [{"id": i, "content": w, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True} for i, w in enumerate(words[:3])],
    "normalizer": None,
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": None,
    "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)}, "unk_token": "<unk>"},
}
(folder / "tokenizer.json").write_text(json.dumps(tokenizer))
(folder / "tokenizer_config.json").write_text(json.dumps(
    {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "tokenizer_class": "PreTrainedTokenizerFast"}))

"""Builds small tokenizers that exercise the components the shared and fetched real tokenizers
do not: SentencePiece Unigram (nmt_nfkc charsmap) and BPE (byte fallback, user symbols) models
trained with the sentencepiece library, and tokenizer.json files with Unigram + Precompiled +
Metaspace, WordPiece + BertNormalizer, WordLevel, and BPE with affixes and added-token options.
The expected outputs come from the oracles (sentencepiece, Hugging Face tokenizers), not from here.

usage: make_synthetic_tokenizers.py STRINGS.json [MORE.json ...] OUT_DIR
"""
import base64
import collections
import json
import os
import re
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

strings = []
for path in sys.argv[1:-1]:
    strings += json.load(open(path, encoding="utf-8"))
out = sys.argv[-1]
os.makedirs(out, exist_ok=True)

prose = """It was a bright cold day in April, and the clocks were striking thirteen. Tokenizers turn text
into numbers; the numbers go into models, and models write numbers back that become text again.
Müller's café served crème brûlée — naïve coöperation! 東京で会いましょう。Привет, как дела?
Numbers like 42, 3.14 and 2024 appear, as do URLs such as https://example.com/a?b=c&d=e."""
corpus = [s for s in strings if s.strip()] + prose.split("\n") * 20
corpus_file = os.path.join(out, "corpus.txt")
with open(corpus_file, "w", encoding="utf-8") as f:
    for line in corpus:
        f.write(line.replace("\n", " ").replace("\r", " ") + "\n")


def train(name, **kw):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    kw.setdefault("character_coverage", 1.0)
    spm.SentencePieceTrainer.train(input=corpus_file, model_prefix=os.path.join(d, "tokenizer"), hard_vocab_limit=False,
                                   minloglevel=2, **kw)
    return d


uni_dir = train("spm-unigram", model_type="unigram", vocab_size=400, normalization_rule_name="nmt_nfkc",
          user_defined_symbols=["<sep>", "[[x]]"])
train("spm-bpe-bytes", model_type="bpe", vocab_size=700, byte_fallback=True, character_coverage=0.99, normalization_rule_name="identity",
      remove_extra_whitespaces=False, user_defined_symbols=["<tool>"])
train("spm-bpe-nfkc", model_type="bpe", vocab_size=300, normalization_rule_name="nmt_nfkc", character_coverage=0.98)

# tokenizer.json from the Unigram model, as Hugging Face's converter writes it.
m = pb.ModelProto()
m.ParseFromString(open(os.path.join(uni_dir, "tokenizer.model"), "rb").read())
charsmap = base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()
added = [{"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
          "special": True} for i, p in enumerate(m.pieces) if p.type in (2, 3)]
hf_unigram = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Precompiled", "precompiled_charsmap": charsmap},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                                                {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": False,
              "vocab": [[p.piece, p.score] for p in m.pieces]},
}


def write(name, tok):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)


write("hf-unigram-precompiled", hf_unigram)

words = collections.Counter(w for line in corpus for w in re.findall(r"\w+|[^\w\s]", line.lower()))
chars = sorted({c for line in corpus for c in line.lower() if not c.isspace()})

# BERT-style WordPiece: frequent words, their 2-3 letter endings as continuations, all characters.
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
vocab += [w for w, _ in words.most_common(150) if w not in vocab]
for w, _ in words.most_common(300):
    for k in (2, 3):
        if len(w) > k and "##" + w[-k:] not in vocab:
            vocab.append("##" + w[-k:])
vocab += [c for c in chars if c not in vocab] + ["##" + c for c in chars if "##" + c not in vocab]
write("hf-wordpiece-bert", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True} for i, t in enumerate(vocab[:5])],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                   "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}},
})

wl_vocab = ["[UNK]"] + [w for w, _ in words.most_common(200)]
write("hf-wordlevel", {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
                                                       {"type": "Lowercase"}, {"type": "Strip", "strip_left": True,
                                                                               "strip_right": True}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                                            {"type": "Digits", "individual_digits": True}]},
    "post_processor": None, "decoder": None,
    "model": {"type": "WordLevel", "unk_token": "[UNK]", "vocab": {t: i for i, t in enumerate(wl_vocab)}},
})

# BPE with a continuing-subword prefix and an end-of-word suffix, merges learned here.
suffix, prefix = "</w>", "##"
seqs = collections.Counter()
for w, n in words.items():
    cs = list(w)
    seqs[tuple(cs[:1] + [prefix + c for c in cs[1:-1]] + ([prefix + cs[-1] + suffix] if len(cs) > 1 else [])) if len(cs) > 1
         else (cs[0] + suffix,)] += n
bpe_vocab = {"<unk>": 0}
for s in seqs:
    for t in s:
        bpe_vocab.setdefault(t, len(bpe_vocab))
for c in chars:
    for t in (c, prefix + c, c + suffix, prefix + c + suffix):
        bpe_vocab.setdefault(t, len(bpe_vocab))
merges = []
for _ in range(250):
    pairs = collections.Counter()
    for s, n in seqs.items():
        for a, b in zip(s, s[1:]):
            pairs[(a, b)] += n
    if not pairs:
        break
    (a, b), _ = pairs.most_common(1)[0]
    merged = a + b[len(prefix):] if b.startswith(prefix) else a + b
    merges.append([a, b])
    bpe_vocab.setdefault(merged, len(bpe_vocab))
    new = collections.Counter()
    for s, n in seqs.items():
        r, i = [], 0
        while i < len(s):
            if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                r.append(merged)
                i += 2
            else:
                r.append(s[i])
                i += 1
        new[tuple(r)] += n
    seqs = new
n = len(bpe_vocab)
added_opts = [("[MASK]", dict(lstrip=True)), ("<tag>", dict(rstrip=True)), ("cat", dict(single_word=True, normalized=True, special=False)),
              ("<SPECIAL>", dict(special=True)), ("hello world", dict(normalized=True, special=False))]
added = []
for i, (content, opts) in enumerate(added_opts):
    t = {"id": n + i, "content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": False}
    t.update(opts)
    added.append(t)
write("hf-bpe-affixes", {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Punctuation"},
                                                            {"type": "Digits", "individual_digits": False}]},
    "post_processor": {"type": "RobertaProcessing", "sep": ["<tag>", n + 1], "cls": ["<SPECIAL>", n + 3],
                       "trim_offsets": True, "add_prefix_space": False},
    "decoder": {"type": "BPEDecoder", "suffix": suffix},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": prefix,
              "end_of_word_suffix": suffix, "fuse_unk": True, "byte_fallback": False, "vocab": bpe_vocab,
              "merges": merges},
})

#!/usr/bin/python3
"""End-to-end tests of the onnxllm CLI: --version, generate's timings and -n, info, run on LLM
exports, and chat (plain-text and chat-template turns, the KV cache kept between turns, /reset,
SIGINT). Usage: cli_test.py ONNXLLM VERSION SHARED_DIR WORK_DIR. Exits 77 (skip) without SHARED_DIR."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ONNXLLM, VERSION, SHARED, WORK = sys.argv[1:5]
STORIES_HF = os.path.join(SHARED, "models", "stories260K-hf")
GPT2_PAST = os.path.join(SHARED, "models", "tiny-random-gpt2-fp32", "past.onnx")
STORIES = os.path.join(WORK, "stories-fp32")


def cli(*args, stdin=None, check=True, timeout=120):
    # One thread: the model is tiny, and spinning workers on a busy machine only slow it down.
    if args and args[0] in ("generate", "chat", "run") and "-t" not in args and "--threads" not in args:
        args = (*args, "--threads", "1")
    p = subprocess.run([ONNXLLM, *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"onnxllm {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def safetensors_parameters(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    total = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for d in t["shape"]:
            count *= d
        total += count
    return total


def verbose_turns(stderr):
    """(new tokens, cached tokens, prompt ids) per answered turn."""
    return [(int(m[0]), int(m[1]), m[2]) for m in re.findall(r"ran (\d+) new tokens \(cache (\d+)\), prompt ids ([\d,]+)", stderr)]


def wait_ready(proc):
    """Reads stderr up to chat's "ready:" line (the SIGINT handler is installed by then)."""
    while True:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"chat exited before it was ready (rc {proc.wait(timeout=10)})")
        if "ready:" in line:
            return


def stop(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f and not f.closed:
            f.close()


def generate_text(model, ids, n):
    return cli("generate", "-m", model, "--ids", ids, "-n", str(n), "--no-timings").stdout


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cli("build", "-i", STORIES_HF, "-o", STORIES, "--overwrite", "-q")

    def test_version(self):
        self.assertEqual(cli("--version").stdout.strip(), f"onnxllm {VERSION}")

    def test_generate_timings_and_max_new_tokens(self):
        prompt = "1,403,407,261"
        p = cli("generate", "-m", STORIES, "--ids", prompt, "-n", "7", "--print-ids")
        ids = p.stdout.strip().split(",")
        self.assertEqual(len(ids), 4 + 7)
        self.assertEqual(ids[:4], prompt.split(","))
        m = re.search(r"prompt: (\d+) tokens in [\d.]+ ms \(([\d.]+) tokens/s\), time to first token ([\d.]+) ms", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertEqual(int(m[1]), 4)
        self.assertGreater(float(m[2]), 0)
        self.assertGreater(float(m[3]), 0)
        m = re.search(r"decode: (\d+) new tokens, ([\d.]+) tokens/s, total ([\d.]+) ms", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertEqual(int(m[1]), 7)
        self.assertGreater(float(m[2]), 0)
        self.assertNotIn("tokens/s", p.stdout)
        # -n and --max-length together are an error naming both.
        bad = cli("generate", "-m", STORIES, "--ids", prompt, "-n", "3", "--max-length", "9", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--max-length", bad.stderr)
        # -n 0 names the range it is outside (CLI11's PositiveNumber said "not in range 0 to 1.8e308").
        bad = cli("generate", "-m", STORIES, "--ids", prompt, "-n", "0", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("Value 0 not in range 1 to 2147483647", bad.stderr)
        # Past the context: a clear error, not a crash.
        bad = cli("generate", "-m", STORIES, "--ids", prompt, "-n", "600", check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("context length 512", bad.stderr)
        self.assertEqual(cli("generate", "-m", STORIES, "--ids", prompt, "-n", "3", "--no-timings").stderr, "")

    def test_generate_json_schema_and_json(self):
        # Guidance from the CLI (llama.cpp's --json-schema): the text is a value of the schema,
        # ended by EOS; stories260K writes none of it unguided.
        schema = {"type": "object", "properties": {"hero": {"type": "string", "maxLength": 10}, "age": {"type": "integer"},
                                                   "good": {"type": "boolean"}}, "required": ["hero", "age", "good"]}
        path = os.path.join(WORK, "schema.json")
        with open(path, "w") as f:
            json.dump(schema, f)
        for extra in ([], ["--do-sample", "--temperature", "1.3", "--seed", "5"]):
            text = cli("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "200", "--json-schema", path,
                       "--no-timings", *extra).stdout
            value = json.loads(text)
            self.assertEqual(set(value), {"hero", "age", "good"}, text)
            self.assertTrue(isinstance(value["hero"], str) and len(value["hero"]) <= 10, text)
            self.assertTrue(isinstance(value["age"], int) and isinstance(value["good"], bool), text)
        # The schema from standard input, and --json (any object; cut at -n, so only its start).
        text = cli("generate", "-m", STORIES, "-p", "Once", "-n", "200", "--json-schema", "-", "--no-timings",
                   stdin=json.dumps({"enum": ["yes", "no"]})).stdout
        self.assertIn(json.loads(text), ["yes", "no"])
        self.assertTrue(cli("generate", "-m", STORIES, "-p", "Once", "-n", "8", "--json", "--no-timings").stdout.startswith("{"))
        for args, message in [(["--json-schema", os.path.join(WORK, "missing.json")], "--json-schema: cannot open"),
                              (["--json", "--json-schema", path], "excludes"),
                              (["--json", "--num-beams", "2"], "beam search")]:
            self.expect_generate_error(args, message)
        self.expect_generate_error(["--json-schema", "-"], "unsupported keyword 'multipleOf'", stdin='{"multipleOf": 2}')

    def expect_generate_error(self, args, message, stdin=None):
        """`onnxllm generate` on stories260K with args fails, its stderr naming the problem."""
        bad = cli("generate", "-m", STORIES, "-p", "Once", "-n", "8", *args, check=False, stdin=stdin)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn(message, bad.stderr)

    def test_generate_regex_and_grammar(self):
        # --regex and --grammar (Lark): Python's re checks the text; EOS ends it once complete.
        pattern = r"(Yes|No), [a-z]+( [a-z]+){2,4}\."
        for extra in ([], ["--do-sample", "--temperature", "1.3", "--seed", "5"]):
            text = cli("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "100", "--regex", pattern,
                       "--no-timings", *extra).stdout
            self.assertRegex(text, "^" + pattern + "$")
        grammar = 'start: "The " NAME " " VERB "."\nNAME: "cat" | "dog"\nVERB: /[a-z]{3,8}/\n'
        text = cli("generate", "-m", STORIES, "-p", "Once", "-n", "100", "--grammar", "-", "--no-timings",
                   stdin=grammar).stdout
        self.assertRegex(text, r"^The (cat|dog) [a-z]{3,8}\.$")
        for args, message in [(["--regex", "a(?=b)"], "lookahead"),
                              (["--regex", "a", "--json"], "excludes"),
                              (["--grammar", "-", "--json-schema", "-"], "excludes"),
                              (["--grammar", os.path.join(WORK, "missing.lark")], "--grammar: cannot open")]:
            self.expect_generate_error(args, message)
        self.expect_generate_error(["--grammar", "-"], "'a' refers to itself", stdin="start: a\na: a")

    def test_generate_ngram_speculative(self):
        # --ngram: the same ids as standard decoding, greedy and sampled; the rounds on stderr.
        prompt = "Once upon a time, there was a girl. Once upon a time, there"
        for extra in ([], ["--do-sample", "--top-k", "20", "--seed", "3"]):
            plain = cli("generate", "-m", STORIES, "-p", prompt, "-n", "80", "--print-ids", "--no-timings", *extra).stdout
            fast = cli("generate", "-m", STORIES, "-p", prompt, "-n", "80", "--print-ids", "--ngram", "3",
                       "--draft-tokens", "6", *extra)
            self.assertEqual(fast.stdout, plain)
            m = re.search(r"speculative: (\d+) rounds, (\d+) of (\d+) drafts accepted, (\d+) standard steps", fast.stderr)
            self.assertIsNotNone(m, fast.stderr)
            self.assertGreater(int(m[1]), 0)
            self.assertLessEqual(int(m[2]), int(m[3]))
        for args, message in [(["--draft-tokens", "3"], "--draft-tokens needs --ngram or a model with a draft decoder"),
                              (["--ngram", "1"], "--ngram: Value 1 not in range 2 to 16"),
                              (["--ngram", "3", "--num-beams", "2"], "generates one sequence")]:
            self.expect_generate_error(args, message)

    def test_generate_with_a_draft_model(self):
        # A copy of stories260K whose genai_config.json names a draft decoder (here the same
        # weights, in draft/): the same ids, greedy and sampled; the rounds and draft runs on stderr.
        prompt = "Once upon a time, there was a girl"
        with tempfile.TemporaryDirectory() as d:
            folder = os.path.join(d, "stories")
            shutil.copytree(STORIES, folder)
            shutil.copytree(STORIES, os.path.join(folder, "draft"))
            path = os.path.join(folder, "genai_config.json")
            with open(path) as f:
                config = json.load(f)
            draft = dict(config["model"]["decoder"])
            draft["filename"] = "draft/" + draft["filename"]
            config["model"]["draft"] = draft
            with open(path, "w") as f:
                json.dump(config, f)
            for extra in ([], ["--do-sample", "--top-k", "20", "--seed", "3"]):
                plain = cli("generate", "-m", STORIES, "-p", prompt, "-n", "40", "--print-ids", "--no-timings",
                            *extra).stdout
                drafted = cli("generate", "-m", folder, "-p", prompt, "-n", "40", "--print-ids", "--draft-tokens", "3",
                              *extra)
                self.assertEqual(drafted.stdout, plain)
                m = re.search(r"speculative: (\d+) rounds, (\d+) of (\d+) drafts accepted, \d+ standard steps, "
                              r"(\d+) draft model runs", drafted.stderr)
                self.assertIsNotNone(m, drafted.stderr)
                self.assertGreater(int(m[1]), 0)
                self.assertGreater(int(m[2]), 0)
                self.assertGreater(int(m[4]), 0)
            bad = cli("generate", "-m", folder, "-p", prompt, "-n", "8", "--ngram", "3", check=False)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("cannot be combined with the model's draft decoder", bad.stderr)

    def test_llama_cpp_short_options(self):
        # -p, -f and -t as llama.cpp spells them: the same text as --prompt, --prompt-file, --threads.
        long = cli("generate", "-m", STORIES, "--prompt", "Once upon a time", "-n", "12", "--no-timings").stdout
        self.assertGreater(len(long), 20)
        self.assertEqual(cli("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "12", "-t", "1",
                             "--no-timings").stdout, long)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "prompt.txt")
            with open(path, "w") as f:
                f.write("Once upon a time")
            self.assertEqual(cli("generate", "-m", STORIES, "-f", path, "-n", "12", "--no-timings").stdout, long)
        bad = cli("generate", "-m", STORIES, "-p", "x", "-f", path, "-n", "2", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("excludes", bad.stderr)

    def test_help_shows_defaults(self):
        out = cli("generate", "--help").stdout
        self.assertRegex(out, r"--top-k INT=genai_config.json")
        self.assertRegex(out, r"--threads INT[^\n]*=0")
        self.assertRegex(cli("chat", "--help").stdout, r"--max-new-tokens INT\S*=0")

    def test_info_stories(self):
        j = json.loads(cli("info", "-m", STORIES, "--json").stdout)
        self.assertEqual(j["parameters"], safetensors_parameters(os.path.join(STORIES_HF, "model.safetensors")))
        self.assertTrue(250_000 < j["parameters"] < 300_000, j["parameters"])
        self.assertEqual(j["model_type"], "llama")
        self.assertEqual(j["kv_bytes_per_token"], 5 * 2 * 4 * 8 * 4)
        for key, value in {"context_length": 512, "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 5,
                           "num_attention_heads": 8, "num_key_value_heads": 4, "head_size": 8,
                           "kv_dtype": "float32"}.items():
            self.assertEqual(j[key], value, key)
        self.assertEqual(sum(d["elements"] for d in j["dtypes"].values()), j["initializer_elements"])
        self.assertEqual(set(j["dtypes"]), {"float32"} | (set(j["dtypes"]) - {"float32"}))
        files = {f["name"]: f["bytes"] for f in j["files"]}
        self.assertEqual(files["model.onnx"], os.path.getsize(os.path.join(STORIES, "model.onnx")))
        data = [n for n in files if n != "model.onnx"]
        self.assertTrue(data, files)
        for n in data:
            self.assertEqual(files[n], os.path.getsize(os.path.join(STORIES, n)))
        ops = {o["op"]: o for o in j["ops"]}
        self.assertEqual(ops["com.microsoft.GroupQueryAttention"]["count"], 5)
        self.assertEqual(ops["com.microsoft.GroupQueryAttention"]["provider"], "cpu")
        text = cli("info", "-m", STORIES).stdout
        self.assertIn(f"parameters: {j['parameters']} ", text)
        self.assertIn("kv bytes per token: 1280", text)
        bad = cli("info", "-m", os.path.join(WORK, "no-such-model"), check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("does not exist", bad.stderr)

    def test_info_bare_onnx(self):
        j = json.loads(cli("info", "-m", GPT2_PAST, "--json").stdout)
        # From the graph alone: past_N [2, batch, 4 heads, past, 8] x 5 layers, logits [.., 1000].
        self.assertEqual(j["num_hidden_layers"], 5)
        self.assertEqual(j["num_key_value_heads"], 4)
        self.assertEqual(j["head_size"], 8)
        self.assertEqual(j["vocab_size"], 1000)
        self.assertEqual(j["kv_bytes_per_token"], 5 * 2 * 4 * 8 * 4)
        self.assertEqual(j["parameters"], j["initializer_elements"])

    def test_run_llm_exports(self):
        p = cli("run", "-m", os.path.join(STORIES, "model.onnx"))
        self.assertIn("LLM decoder inputs: batch 1, sequence 1, past 0", p.stdout)
        self.assertRegex(p.stdout, r"input  attention_mask int64\[1, ?1\]")
        self.assertRegex(p.stdout, r"output logits float32\[1, ?1, ?512\]")
        p = cli("run", "-m", os.path.join(STORIES, "model.onnx"), "--dim", "sequence_length=3", "--dim",
                "past_sequence_length=2")
        self.assertIn("LLM decoder inputs: batch 1, sequence 3, past 2", p.stdout)
        self.assertRegex(p.stdout, r"input  attention_mask int64\[1, ?5\]")
        self.assertRegex(p.stdout, r"output logits float32\[1, ?3, ?512\]")
        self.assertRegex(p.stdout, r"output present.0.key float32\[1, ?4, ?5, ?8\]")
        p = cli("run", "-m", GPT2_PAST, "--dim", "seq_len=3", "--dim", "past_seq_len=2")
        self.assertIn("LLM decoder inputs: batch 1, sequence 3, past 2", p.stdout)
        self.assertRegex(p.stdout, r"output logits float32\[1, ?3, ?1000\]")
        self.assertRegex(p.stdout, r"output present_0 float32\[2, ?1, ?4, ?5, ?8\]")

    def chat(self, model, lines, *extra):
        return cli("chat", "-m", model, "-n", "8", "--verbose", "--no-timings", *extra, stdin="".join(l + "\n" for l in lines))

    def test_chat_plain_text(self):
        p = self.chat(STORIES, ["Once upon a time", "/reset", "Once upon a time", "Then", "/exit", "never sent"])
        self.assertIn("has no chat template", p.stderr)
        turns = verbose_turns(p.stderr)
        self.assertEqual(len(turns), 3, p.stderr)
        self.assertEqual(turns[0][1], 0)
        self.assertEqual(turns[1], turns[0])  # /reset: the same fresh start
        new, cached, ids = turns[2]
        self.assertGreater(cached, 5)  # turn 2 reuses turn 1's prompt and answer
        self.assertEqual(new + cached, len(ids.split(",")))
        self.assertLess(new, 6)
        expected = "".join(generate_text(STORIES, t[2], 8) for t in turns)
        self.assertEqual(p.stdout, expected)
        self.assertTrue(p.stdout.strip())

    def test_chat_template(self):
        model = os.path.join(WORK, "stories-chat")
        shutil.rmtree(model, ignore_errors=True)
        shutil.copytree(STORIES, model)
        config_path = os.path.join(model, "tokenizer_config.json")
        with open(config_path) as f:
            config = json.load(f)
        config["chat_template"] = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                                   "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
        with open(config_path, "w") as f:
            json.dump(config, f)
        p = self.chat(model, ["Tim had a dog", "The dog ran"], "--system", "A story.")
        self.assertNotIn("no chat template", p.stderr)
        turns = verbose_turns(p.stderr)
        self.assertEqual(len(turns), 2, p.stderr)
        self.assertEqual(turns[0][1], 0)
        # Turn 2 reuses all of turn 1 (its prompt and the 8 answer tokens): only its own tokens run.
        self.assertGreaterEqual(turns[1][1], len(turns[0][2].split(",")))
        self.assertEqual(turns[1][0] + turns[1][1], len(turns[1][2].split(",")))
        expected = "".join(generate_text(model, t[2], 8) for t in turns)
        self.assertEqual(p.stdout, expected)

    def test_chat_sigint(self):
        proc = subprocess.Popen([ONNXLLM, "chat", "-m", STORIES, "-n", "40", "--token-delay-ms", "40", "--verbose",
                                 "--threads", "1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(proc)
            proc.stdin.write("Once upon a time\n")
            proc.stdin.flush()
            time.sleep(0.4)
            proc.send_signal(signal.SIGINT)  # during the first answer (40 x 40 ms)
            proc.stdin.write("Then\n/exit\n")
            proc.stdin.flush()
            out, err = proc.communicate(timeout=60)
        finally:
            stop(proc)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(err.count("[answer interrupted]"), 1, err)
        counts = [int(n) for n in re.findall(r"decode: (\d+) new tokens", err)]
        self.assertEqual(len(counts), 2, err)
        self.assertLess(counts[0], 40)
        self.assertEqual(counts[1], 40)

    def test_chat_sigint_at_prompt_exits(self):
        proc = subprocess.Popen([ONNXLLM, "chat", "-m", STORIES, "--threads", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(proc)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=20)
        finally:
            stop(proc)
        self.assertEqual(proc.returncode, 0)

    def test_chat_context_full(self):
        long_text = " ".join(["Once upon a time there was a little girl."] * 60)
        p = cli("chat", "-m", STORIES, "-n", "4", "--verbose", stdin=long_text + "\nHi\n")
        self.assertIn("no longer fits the context", p.stderr)
        self.assertIn("/reset", p.stderr)
        turns = verbose_turns(p.stderr)  # the second message is still answered, from an empty cache
        self.assertEqual(len(turns), 1, p.stderr)
        self.assertEqual(turns[0][1], 0)
        # An answer that fills max_length says so; the next message is refused with the hint.
        p = cli("chat", "-m", STORIES, "--max-length", "24", "--verbose", stdin="Once upon a time\nThen\n/reset\nHi\n")
        self.assertIn("the context is full (24 tokens); type /reset", p.stderr)
        self.assertIn("no longer fits the context (max_length 24)", p.stderr)
        turns = verbose_turns(p.stderr)
        self.assertEqual(len(turns), 2, p.stderr)  # the first message, then "Hi" after /reset
        self.assertEqual(turns[1][1], 0)


if __name__ == "__main__":
    if not os.path.isdir(STORIES_HF):
        print(f"skipped: {STORIES_HF} is absent")
        sys.exit(77)
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])

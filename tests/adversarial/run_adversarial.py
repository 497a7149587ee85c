#!/usr/bin/python3
"""Adversarial suite: a table of bad inputs run through the onnxllm CLI.

Every case runs one CLI command in its own folder (a copy of a small model folder with one file
broken, or a bad option) and checks:
  - the exit code (1 for bad input) and that the process was not killed by a signal,
  - that stderr names the file or option at fault (and, where given, does not say certain things),
  - no hang: the command finishes within the case's timeout (the process group is killed after),
  - bounded memory: the child's peak RSS (getrusage through os.wait4) is under --max-rss-mb,
  - no input changed: checksums of every file of the case's folder before and after,
  - and, for some cases, a check of what the command left behind (staging folders, outputs).

Models: a random-weights llama (built with `build --config --random-weights`, with a small
tokenizer.json written here) and, when ../shared is present, stories260K built from its HF
folder (tokenizer.model). Groups: `random` (no shared data needed) and `stories` (exit code 77,
ctest's skip, without ../shared).

Usage: run_adversarial.py --cli build/bin/onnxllm --work DIR [--shared DIR] [--group random|stories]
       [--only SUBSTRING] [--jobs N] [--max-rss-mb N] [--timeout-scale X] [--list]
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time

SKIP = 77


# ---------------------------------------------------------------------------------------------
# Inputs written by the suite: a tiny llama config, its safetensors, a character tokenizer.

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, VOCAB, CONTEXT = 32, 48, 2, 4, 2, 64, 128

HF_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
             "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
             "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB, "max_position_embeddings": CONTEXT,
             "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": True,
             "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
GENERATION_CONFIG = {"bos_token_id": 1, "eos_token_id": 2, "max_length": CONTEXT, "do_sample": False}

# 64 tokens: 3 specials, then single characters (letters and digits; anything else is <unk>).
_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?\n"[:VOCAB - 3]
TOKENIZER_JSON = {
    "version": "1.0",
    "added_tokens": [{"id": i, "content": t, "special": True, "normalized": False, "single_word": False,
                      "lstrip": False, "rstrip": False} for i, t in enumerate(["<unk>", "<s>", "</s>"])],
    "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "unk_token": "<unk>", "merges": [],
              "vocab": dict([("<unk>", 0), ("<s>", 1), ("</s>", 2)] + [(c, i + 3) for i, c in enumerate(_CHARS)])},
}
TOKENIZER_CONFIG = {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": True, "add_eos_token": False,
                    "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                    "clean_up_tokenization_spaces": False,
                    "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}


def llama_tensors(rng):
    """name -> (shape) of the tiny llama, weights tied."""
    head = HIDDEN // HEADS
    t = {"model.embed_tokens.weight": [VOCAB, HIDDEN], "model.norm.weight": [HIDDEN]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": [HIDDEN], p + "post_attention_layernorm.weight": [HIDDEN],
                  p + "self_attn.q_proj.weight": [HIDDEN, HIDDEN], p + "self_attn.k_proj.weight": [KV_HEADS * head, HIDDEN],
                  p + "self_attn.v_proj.weight": [KV_HEADS * head, HIDDEN], p + "self_attn.o_proj.weight": [HIDDEN, HIDDEN],
                  p + "mlp.gate_proj.weight": [INTER, HIDDEN], p + "mlp.up_proj.weight": [INTER, HIDDEN],
                  p + "mlp.down_proj.weight": [HIDDEN, INTER]})
    return t


def safetensors_bytes(header, blob):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + blob


def write_safetensors(path, rng, mutate=None):
    """Writes the tiny llama's weights; mutate(header, blob) -> (header, blob) breaks them."""
    header, blob = {"__metadata__": {"format": "pt"}}, bytearray()
    for name, shape in sorted(llama_tensors(rng).items()):
        n = 1
        for d in shape:
            n *= d
        data = struct.pack(f"<{n}f", *[rng.uniform(-0.1, 0.1) if len(shape) > 1 else 1.0 for _ in range(n)])
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    if mutate:
        header, blob = mutate(header, blob)
    with open(path, "wb") as f:
        f.write(safetensors_bytes(header, bytes(blob)))


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)


def deep(n, open_="[", close="]", inner="1"):
    return open_ * n + inner + close * n


# ---------------------------------------------------------------------------------------------
# Cases

class Case:
    """One CLI run. `args` may use {dir} (the case folder), {model} (its model copy), {hf} (its HF
    folder copy); `prepare(case_dir)` breaks what the case is about."""

    def __init__(self, name, args, prepare=None, rc=1, stderr=(), not_stderr=(), model=None, hf=None, stdin=None,
                 timeout=20.0, check=None, max_stderr=None, signal_when=None, stdout_prefix=None):
        self.name, self.args, self.prepare, self.rc = name, args, prepare, rc
        self.stderr, self.not_stderr, self.model, self.hf, self.stdin = stderr, not_stderr, model, hf, stdin
        self.timeout, self.check, self.max_stderr, self.signal_when = timeout, check, max_stderr, signal_when
        self.stdout_prefix = stdout_prefix


def file_digests(root):
    """path -> sha256 (or the kind of a non-regular file) of everything under root, links not followed."""
    out = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(base, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                out[os.path.relpath(p, root)] = h.hexdigest()
            elif stat.S_ISDIR(st.st_mode):
                out[os.path.relpath(p, root) + "/"] = "dir"
            else:
                out[os.path.relpath(p, root)] = "special:" + (os.readlink(p) if stat.S_ISLNK(st.st_mode) else "node")
    return out


class Runner:
    def __init__(self, opts):
        self.opts = opts
        self.cli = os.path.abspath(opts.cli)
        self.work = os.path.abspath(opts.work)

    # The models every case copies.
    def build_models(self, group):
        models = os.path.join(self.work, "models")
        os.makedirs(models, exist_ok=True)
        rng = random.Random(1234)
        hf = os.path.join(models, "hf-random")
        shutil.rmtree(hf, ignore_errors=True)
        os.makedirs(hf)
        write_json(os.path.join(hf, "config.json"), HF_CONFIG)
        write_json(os.path.join(hf, "generation_config.json"), GENERATION_CONFIG)
        write_json(os.path.join(hf, "tokenizer.json"), TOKENIZER_JSON)
        write_json(os.path.join(hf, "tokenizer_config.json"), TOKENIZER_CONFIG)
        write_safetensors(os.path.join(hf, "model.safetensors"), rng)
        self.hf_random = hf
        if group == "random":
            out = os.path.join(models, "random")
            self.cli_ok(["build", "--config", os.path.join(hf, "config.json"), "--random-weights", "-o", out, "-p",
                         "fp32", "--overwrite", "-q"])
            for name in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(hf, name), out)
            self.model = out
        else:
            src = os.path.join(self.opts.shared, "models", "stories260K-hf")
            out = os.path.join(models, "stories")
            self.cli_ok(["build", "-i", src, "-o", out, "-p", "fp32", "--overwrite", "-q"])
            self.model = out
            self.hf_stories = src

    def cli_ok(self, args):
        r = subprocess.run([self.cli] + args, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"setup failed: onnxllm {' '.join(args)}\n{r.stderr}")

    def run_case(self, case):
        d = os.path.join(self.work, "cases", case.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        subs = {"dir": d, "cli": self.cli}
        if case.model:
            subs["model"] = os.path.join(d, "m")
            shutil.copytree(case.model, subs["model"])
        if case.hf:
            subs["hf"] = os.path.join(d, "hf")
            shutil.copytree(case.hf, subs["hf"])
        for base, dirs, files in os.walk(d):  # ../shared is read-only; its copies need not be
            for name in dirs + files:
                os.chmod(os.path.join(base, name), 0o755 if name in dirs else 0o644)
        if case.prepare:
            case.prepare(d)
        before = file_digests(d)
        args = [a.format(**subs) for a in case.args]
        out_path, err_path = os.path.join(self.work, "cases", case.name + ".out"), os.path.join(
            self.work, "cases", case.name + ".err")
        stdin = open(case.stdin.format(**subs), "rb") if case.stdin else subprocess.DEVNULL
        timeout = case.timeout * self.opts.timeout_scale
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen([self.cli] + args, stdin=stdin, stdout=out, stderr=err, cwd=d,
                                    start_new_session=True)
            status, usage, timed_out, signalled = None, None, False, False
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                elapsed = time.monotonic() - start
                if case.signal_when is not None and not signalled and case.signal_when[1](d):
                    os.killpg(proc.pid, case.signal_when[0])
                    signalled = True
                if elapsed > timeout:
                    timed_out = True
                    os.killpg(proc.pid, signal.SIGKILL)
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.005)
            proc.returncode = 0  # reaped above; keeps Popen from waiting again
            seconds = time.monotonic() - start
        if case.stdin:
            stdin.close()
        with open(err_path, "rb") as f:
            stderr = f.read().decode("utf-8", "replace")
        with open(out_path, "rb") as f:
            stdout = f.read().decode("utf-8", "replace")
        problems = []
        rss_mb = usage.ru_maxrss / 1024.0
        if timed_out:
            problems.append(f"hung: killed after {timeout:.0f} s")
        elif os.WIFSIGNALED(status) and not signalled:
            problems.append(f"killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})")
        elif case.rc is not None and not signalled and os.WEXITSTATUS(status) != case.rc:
            problems.append(f"exit code {os.WEXITSTATUS(status)}, expected {case.rc}")
        for s in case.stderr:
            if s.lower() not in stderr.lower():
                problems.append(f"stderr does not mention '{s}'")
        for s in case.not_stderr:
            if s.lower() in stderr.lower():
                problems.append(f"stderr says '{s}'")
        if case.max_stderr is not None and len(stderr) > case.max_stderr:
            problems.append(f"stderr is {len(stderr)} characters (at most {case.max_stderr} expected)")
        if case.stdout_prefix is not None and not stdout.startswith(case.stdout_prefix):
            problems.append(f"stdout {stdout[:60]!r} does not start with {case.stdout_prefix!r}")
        if rss_mb > self.opts.max_rss_mb:
            problems.append(f"peak RSS {rss_mb:.0f} MB > {self.opts.max_rss_mb} MB")
        after = file_digests(d)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if case.check:
            problems += case.check(d, before, after, stdout, status) or []
        else:
            if changed:
                problems.append("inputs changed: " + ", ".join(changed[:5]))
        return case, problems, seconds, rss_mb, stderr.strip().splitlines()[-1:] if stderr.strip() else []

    def run(self, cases):
        failed = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.opts.jobs) as pool:
            for case, problems, seconds, rss_mb, last in pool.map(self.run_case, cases):
                status = "ok  " if not problems else "FAIL"
                print(f"{status} {case.name:48s} {seconds:5.2f} s {rss_mb:5.0f} MB  {last[0][:110] if last else ''}",
                      flush=True)
                for p in problems:
                    print(f"       - {p}", flush=True)
                failed += bool(problems)
        return failed


# ---------------------------------------------------------------------------------------------
# The case table. Helpers that break one file of a case's model copy ({dir}/m) or HF copy ({dir}/hf).

def in_model(name, fn):
    return lambda d: fn(os.path.join(d, "m", name))


def in_hf(name, fn):
    return lambda d: fn(os.path.join(d, "hf", name))


def truncate_to(n):
    def f(p):
        with open(p, "rb") as fh:
            data = fh.read()
        with open(p, "wb") as fh:
            fh.write(data[: n(len(data)) if callable(n) else n])
    return f


def replace_with(content):
    def f(p):
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.remove(p)
        with open(p, "wb") as fh:
            fh.write(content if isinstance(content, bytes) else content.encode())
    return f


def make_dir(p):
    os.remove(p)
    os.makedirs(p)


def make_fifo(p):
    os.remove(p)
    os.mkfifo(p)


def link_to(target):
    def f(p):
        os.remove(p)
        os.symlink(target, p)
    return f


def remove(p):
    os.remove(p)


def edit_json(fn):
    def f(p):
        with open(p) as fh:
            v = json.load(fh)
        v = fn(v) or v
        with open(p, "w") as fh:
            json.dump(v, fh)
    return f


def set_path(path, value):
    def f(v):
        node = v
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return f


def leaves(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list) and v and isinstance(v[0], dict):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))
    else:
        yield path, v


def wrong_type(v):
    """A value of a type the field never takes."""
    if isinstance(v, bool):
        return "yes"
    if isinstance(v, (int, float)):
        return "12"
    if isinstance(v, str):
        return 12
    if isinstance(v, list):
        return {"a": 1}
    return [1]


def gen(model, *extra, max_length="8"):
    return ["generate", "-m", "{model}", "--prompt", "ab", "--max-length", max_length] + list(extra)


def no_leftovers(out_name, expect_output):
    """A check for interrupted or failing builds: no staging folder beside the output, and the output
    present or absent as expected; the case's other files unchanged."""
    def check(d, before, after, stdout, status):
        problems = []
        left = [n for n in os.listdir(d) if ".tmp-" in n]
        if left:
            problems.append("staging folders left: " + ", ".join(left))
        if os.path.exists(os.path.join(d, out_name)) != expect_output:
            problems.append(f"{out_name} {'missing' if expect_output else 'was written'}")
        changed = [k for k in set(before) | set(after)
                   if before.get(k) != after.get(k) and not k.startswith(out_name) and ".tmp-" not in k]
        if changed:
            problems.append("inputs changed: " + ", ".join(sorted(changed)[:5]))
        return problems
    return check


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def model_file_cases(tag, model, tokenizer_file):
    """Truncations and type confusions of every file of a model folder, run through generate."""
    cases = []
    files = ["genai_config.json", "model.onnx", "model.onnx.data", tokenizer_file, "tokenizer_config.json"]
    for f in files:
        is_json = f.endswith(".json")
        variants = [("empty", replace_with(b"")), ("half", truncate_to(lambda n: n // 2)),
                    ("first10", truncate_to(10)), ("dir", make_dir), ("garbage", replace_with(bytes(range(256)) * 8))]
        if f != "tokenizer_config.json":  # optional: a missing tokenizer_config.json is fine
            variants.append(("missing", remove))
        if is_json:
            variants += [("array", replace_with("[1, 2]")), ("string", replace_with('"x"')),
                         ("null", replace_with("null")), ("number", replace_with("1e999")),
                         ("devzero", link_to("/dev/zero")), ("fifo", make_fifo)]
        else:
            variants.append(("json", replace_with('{"model": 1}')))
        for vname, fn in variants:
            # Any variant must fail, naming the file (or, for a missing tokenizer file, the folder's
            # tokenizer files).
            expect = (f,) if not (vname == "missing" and f == tokenizer_file) else ("tokenizer",)
            if f == "model.onnx.data" and vname in ("missing",):
                expect = ("model.onnx.data",)
            # "no tokenizer.json or tokenizer.model" for a broken one hides what is wrong with it.
            hides = ("no tokenizer.json or tokenizer.model",) if f == tokenizer_file and vname != "missing" else ()
            cases.append(Case(f"{tag}.{f}.{vname}", gen(model), in_model(f, fn), model=model, stderr=expect,
                              not_stderr=hides, timeout=10))
    # Every field of genai_config.json, wrongly typed: an error naming the file and the field.
    with open(os.path.join(model, "genai_config.json")) as fh:
        config = json.load(fh)
    for path, value in leaves(config):
        key = ".".join(str(p) for p in path)
        cases.append(Case(f"{tag}.genai_config.type.{key}", gen(model),
                          in_model("genai_config.json", edit_json(set_path(path, wrong_type(value)))), model=model,
                          stderr=("genai_config.json", str(path[-1])), timeout=10))
    # The tokenizer_config.json fields onnxllm reads, wrongly typed.
    for key, value in [("add_bos_token", "yes"), ("add_eos_token", 1), ("bos_token", 5), ("eos_token", [1]),
                       ("clean_up_tokenization_spaces", "no"), ("chat_template", 7)]:
        cases.append(Case(f"{tag}.tokenizer_config.type.{key}",
                          gen(model) if key != "chat_template" else
                          ["generate", "-m", "{model}", "--chat", "ab", "--max-length", "8"],
                          in_model("tokenizer_config.json", edit_json(set_path((key,), value))), model=model,
                          stderr=("tokenizer_config.json", key), timeout=10))
    return cases


def issue_cases(r, model, hf):
    """The issue's list 1-10 (on the given model folder and HF folder)."""
    cases = []
    n = 100000
    # 1. Deeply nested JSON where a wrongly typed value is printed in the message.
    cases += [
        Case("1.genai_config.deep", gen(model),
             in_model("genai_config.json", replace_with('{"model":{"type":' + deep(n) + "}}")), model=model,
             stderr=("genai_config.json",)),
        Case("1.genai_config.deep_object", gen(model),
             in_model("genai_config.json", replace_with('{"search":' + deep(n, '{"a":', "}") + "}")), model=model,
             stderr=("genai_config.json",)),
        Case("1.build.config_json.deep", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             in_hf("config.json", replace_with('{"architectures":' + deep(n) + "}")), hf=hf,
             stderr=("config.json",)),
        Case("1.build.generation_config.deep", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             in_hf("generation_config.json", replace_with('{"eos_token_id":' + deep(n) + "}")), hf=hf,
             stderr=("generation_config.json",)),
        Case("1.tokenize.strings.deep", ["tokenize", "--tokenizer", "{model}", "--strings", "{dir}/s.json"],
             lambda d: replace_with(deep(n))(os.path.join(d, "s.json")), model=model, stderr=("s.json",)),
        Case("1.template.messages.deep", ["template", "--tokenizer", "{model}", "--messages", "{dir}/m.json"],
             lambda d: replace_with('[{"role":"user","content":' + deep(n) + "}]")(os.path.join(d, "m.json")),
             model=model, stderr=("m.json",)),
    ]
    # 2. Outputs that would destroy inputs.
    cases += [
        Case("2.quantize.output_is_input_data",
             ["quantize", "-i", "{model}/model.onnx", "-o", "{model}/model.onnx.data", "--bits", "4", "--overwrite",
              "-q"], model=model, stderr=("model.onnx.data",)),
        Case("2.quantize.output_is_input",
             ["quantize", "-i", "{model}/model.onnx", "-o", "{model}/model.onnx", "--bits", "4", "--overwrite", "-q"],
             model=model, stderr=("model.onnx",)),
        Case("2.build.output_is_regular_file", ["build", "-i", "{hf}", "-o", "{dir}/notes.txt", "--overwrite", "-q"],
             lambda d: replace_with("my notes")(os.path.join(d, "notes.txt")), hf=hf, stderr=("notes.txt",)),
        Case("2.build.output_is_input", ["build", "-i", "{hf}", "-o", "{hf}", "--overwrite", "-q"], hf=hf,
             stderr=("hf",)),
    ]
    # 3. Thread counts no process can have.
    cases += [
        Case("3.generate.threads_100000", gen(model, "--threads", "100000"), model=model, stderr=("threads",),
             timeout=5),
        Case("3.generate.threads_minus_1", gen(model, "--threads", "-1"), model=model, stderr=("threads",),
             timeout=5),
        Case("3.genai_config.intra_op_100000", gen(model),
             in_model("genai_config.json", edit_json(set_path(("model", "decoder", "session_options",
                                                              "intra_op_num_threads"), 100000))),
             model=model, stderr=("intra_op_num_threads",), timeout=5),
        Case("3.build.threads_100000", ["build", "-i", "{hf}", "-o", "{dir}/out", "--threads", "100000", "-q"],
             hf=hf, stderr=("threads",), timeout=5, check=no_leftovers("out", False)),
        Case("3.run.threads_100000", ["run", "-m", "{model}/model.onnx", "--threads", "100000"], model=model,
             stderr=("threads",), timeout=5),
    ]
    # 4. More threads than cores still finish quickly (correct behaviour, exit 0).
    cases.append(Case("4.generate.threads_64", ["generate", "-m", "{model}", "--ids", "1,5,6", "--max-length", "24",
                                                "--print-ids", "--threads", "64"], model=model, rc=0, timeout=10))
    # 5. Endless or blocking JSON inputs.
    for what, target in [("devzero", "/dev/zero"), ("urandom", "/dev/urandom")]:
        cases += [
            Case(f"5.genai_config.{what}", gen(model), in_model("genai_config.json", link_to(target)), model=model,
                 stderr=("genai_config.json",), timeout=10),
            Case(f"5.tokenizer_config.{what}", gen(model), in_model("tokenizer_config.json", link_to(target)),
                 model=model, stderr=("tokenizer_config.json",), timeout=10),
            Case(f"5.tokenize.strings.{what}", ["tokenize", "--tokenizer", "{model}", "--strings", target],
                 model=model, stderr=(target,), timeout=10),
            Case(f"5.template.messages.{what}", ["template", "--tokenizer", "{model}", "--messages", target],
                 model=model, stderr=(target,), timeout=10),
            Case(f"5.build.config_json.{what}", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
                 in_hf("config.json", link_to(target)), hf=hf, stderr=("config.json",), timeout=10),
        ]
    cases += [
        Case("5.genai_config.fifo", gen(model), in_model("genai_config.json", make_fifo), model=model,
             stderr=("genai_config.json",), timeout=10),
        Case("5.tokenize.strings.fifo", ["tokenize", "--tokenizer", "{model}", "--strings", "{dir}/fifo"],
             lambda d: os.mkfifo(os.path.join(d, "fifo")), model=model, stderr=("fifo",), timeout=10),
        Case("5.template.messages.fifo", ["template", "--tokenizer", "{model}", "--messages", "{dir}/fifo"],
             lambda d: os.mkfifo(os.path.join(d, "fifo")), model=model, stderr=("fifo",), timeout=10),
    ]

    # 6. Wrong weights: overlapping safetensors ranges, NaN and inf weights.
    def overlap(header, blob):
        names = [k for k in header if k != "__metadata__"]
        a, b = header[names[0]], header[names[1]]
        size = b["data_offsets"][1] - b["data_offsets"][0]
        if size <= a["data_offsets"][1] - a["data_offsets"][0]:
            b["data_offsets"] = [a["data_offsets"][0], a["data_offsets"][0] + size]
        return header, blob

    def poison(value):
        def f(header, blob):
            name = "model.layers.0.mlp.up_proj.weight"
            begin = header[name]["data_offsets"][0]
            blob[begin + 40:begin + 44] = struct.pack("<f", value)
            return header, blob
        return f

    rng = random.Random(7)
    cases += [
        Case("6.build.safetensors_overlap", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             lambda d: write_safetensors(os.path.join(d, "hf", "model.safetensors"), rng, overlap), hf=r.hf_random,
             stderr=("model.safetensors", "overlap"), check=no_leftovers("out", False)),
        Case("6.build.safetensors_nan", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             lambda d: write_safetensors(os.path.join(d, "hf", "model.safetensors"), rng, poison(float("nan"))),
             hf=r.hf_random, stderr=("model.layers.0.mlp.up_proj.weight",), check=no_leftovers("out", False)),
        Case("6.build.safetensors_inf", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             lambda d: write_safetensors(os.path.join(d, "hf", "model.safetensors"), rng, poison(float("inf"))),
             hf=r.hf_random, stderr=("model.layers.0.mlp.up_proj.weight",), check=no_leftovers("out", False)),
    ]
    # 6b. Hostile GGUF files: counts, lengths and dims far beyond the file, each refused before
    #     anything is sized by it (the RSS bound checks that), naming the field.
    def gstr(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b

    def gguf(n_tensors, n_kv, body):
        return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + body

    arch = gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama")
    hostile = {
        "tensor_count": (gguf(1 << 62, 1, arch), "tensor count"),
        "metadata_count": (gguf(0, 1 << 62, arch), "metadata count"),
        "string_length": (gguf(0, 1, gstr("general.architecture") + struct.pack("<IQ", 8, 1 << 62)), "length"),
        "array_count": (gguf(0, 2, arch + gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 1 << 60)),
                        "element count"),
        "nested_arrays": (gguf(0, 1, gstr("a") + struct.pack("<II", 9, 9) + b"".join(
            struct.pack("<QI", 1, 9) for _ in range(20))), "nested"),
        "dims": (gguf(1, 1, arch + gstr("t") + struct.pack("<I", 4) + struct.pack("<4Q", 1 << 40, 1 << 40, 1, 1)
                      + struct.pack("<IQ", 0, 0)), "overflows"),
        "data_offset": (gguf(1, 1, arch + gstr("t") + struct.pack("<IQ", 1, 64) + struct.pack("<IQ", 0, 1 << 50))
                        + bytes(26 + 256), "data out of range"),
        "tensor_type": (gguf(1, 1, arch + gstr("t") + struct.pack("<IQ", 1, 64) + struct.pack("<IQ", 1 << 30, 0)),
                        "unknown tensor type"),
    }
    for hname, (data, message) in hostile.items():
        cases.append(Case(f"6.build.gguf_{hname}", ["build", "-i", "{dir}/m.gguf", "-o", "{dir}/out", "-q"],
                          lambda d, data=data: open(os.path.join(d, "m.gguf"), "wb").write(data),
                          stderr=("m.gguf", message), check=no_leftovers("out", False)))
    # 7. Hostile chat templates end quickly with an error.
    quadratic = ("{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = ns.a + [i] %}"
                 "{% endfor %}{{ ns.a | length }}")
    endless = "{% for i in range(100000000) %}{{ i }}{% endfor %}"
    for tname, tmpl in [("quadratic", quadratic), ("steps", endless)]:
        cases.append(Case(f"7.chat_template.{tname}", ["generate", "-m", "{model}", "--chat", "ab", "--max-length", "8"],
                          in_model("tokenizer_config.json", edit_json(set_path(("chat_template",), tmpl))),
                          model=model, stderr=("template",), timeout=10))
    # 8. Staging folders: a stale one (dead process) is removed by the next build to the same output;
    #    an interrupted build leaves none.
    stale = f".out.tmp-{dead_pid()}"

    def make_stale(d):
        os.makedirs(os.path.join(d, stale))
        replace_with(b"x" * 1000)(os.path.join(d, stale, "model.onnx.data"))

    cases.append(Case("8.build.stale_staging_removed", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"], make_stale,
                      hf=r.hf_random, rc=0, check=no_leftovers("out", True)))
    # Big enough to take a while (about 250 MB written), interrupted once its staging folder exists.
    big = dict(HF_CONFIG, hidden_size=512, intermediate_size=1536, num_hidden_layers=16, vocab_size=16000,
               num_attention_heads=8, num_key_value_heads=8)

    def staging(d):
        return any(".tmp-" in n for n in os.listdir(d))
    for sig in (signal.SIGINT, signal.SIGTERM):
        cases.append(Case(f"8.build.interrupted_{sig.name}",
                          ["build", "--config", "{dir}/config.json", "--random-weights", "-o", "{dir}/out", "-q",
                           "--threads", "1"],
                          lambda d: write_json(os.path.join(d, "config.json"), big), rc=None,
                          signal_when=(sig, staging), check=no_leftovers("out", False)))
    # 9. Clear messages.
    cases += [
        Case("9.temperature_nan", gen(model, "--temperature", "nan"), model=model, stderr=("temperature",),
             not_stderr=("null",)),
        Case("9.temperature_inf", gen(model, "--temperature", "inf"), model=model, stderr=("temperature",),
             not_stderr=("null",)),
        Case("9.temperature_minus_1", gen(model, "--temperature", "-1"), model=model, stderr=("temperature",)),
        Case("9.top_p_2", gen(model, "--top-p", "2"), model=model, stderr=("top_p",)),
        Case("9.top_k_minus_1", gen(model, "--top-k", "-1"), model=model, stderr=("top_k",)),
        Case("9.repetition_penalty_0", gen(model, "--repetition-penalty", "0"), model=model,
             stderr=("repetition_penalty",)),
        Case("9.num_beams_0", gen(model, "--num-beams", "0"), model=model, stderr=("num_beams",)),
        Case("9.max_length_minus_1", gen(model, max_length="-1"), model=model, stderr=("max_length",)),
        Case("9.pad_token_id_out_of_range", ["generate", "-m", "{model}", "--ids", "1,5;1", "--max-length", "8",
                                             "--print-ids"],
             in_model("genai_config.json", edit_json(set_path(("model", "pad_token_id"), 100000))), model=model,
             stderr=("pad_token_id",)),
        Case("9.genai_config_is_dir", gen(model), in_model("genai_config.json", make_dir), model=model,
             stderr=("genai_config.json",), not_stderr=("unexpected end of input",)),
        # "cannot open X" gives the reason (root reads any file, so a symlink loop stands for it).
        Case("9.cannot_open.genai_config", gen(model), in_model("genai_config.json", link_to("genai_config.json")),
             model=model, stderr=("genai_config.json", "too many levels of symbolic links")),
        Case("9.cannot_open.tokenizer_config", gen(model),
             in_model("tokenizer_config.json", link_to("tokenizer_config.json")), model=model,
             stderr=("tokenizer_config.json", "too many levels of symbolic links")),
        Case("9.cannot_open.build_config", ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"],
             in_hf("config.json", link_to("config.json")), hf=hf,
             stderr=("config.json", "too many levels of symbolic links")),
        Case("9.run.dim_abc", ["run", "-m", "{model}/model.onnx", "--dim", "batch_size=abc"], model=model,
             stderr=("--dim", "abc"), not_stderr=("stoll",)),
        Case("9.run.dim_3x", ["run", "-m", "{model}/model.onnx", "--dim", "batch_size=3x"], model=model,
             stderr=("--dim", "3x")),
        Case("9.run.dim_no_value", ["run", "-m", "{model}/model.onnx", "--dim", "batch_size"], model=model,
             stderr=("--dim",)),
        Case("9.build.max_length_0", ["build", "-i", "{hf}", "-o", "{dir}/out", "--max-length", "0", "-q"], hf=hf,
             stderr=("--max-length",), max_stderr=200),
        Case("9.generate.ids_beyond_vocab", ["generate", "-m", "{model}", "--ids", f"1,{r.vocab + 7}", "--max-length",
                                             "8"], model=model, stderr=(str(r.vocab + 7), str(r.vocab))),
        Case("9.generate.ids_negative", ["generate", "-m", "{model}", "--ids", "1,-3", "--max-length", "8"],
             model=model, stderr=("--ids", "-3")),
        Case("9.generate.ids_not_numbers", ["generate", "-m", "{model}", "--ids", "1,x", "--max-length", "8"],
             model=model, stderr=("--ids", "'x'")),
        Case("9.generate.ids_print_beyond_model_vocab", ["generate", "-m", "{model}", "--ids", "1,999999",
                                                          "--max-length", "8", "--print-ids"],
             model=model, stderr=("999999",)),
        Case("9.tokenizer_config.add_bos_token_string", gen(model),
             in_model("tokenizer_config.json", edit_json(set_path(("add_bos_token",), "yes"))), model=model,
             stderr=("tokenizer_config.json", "add_bos_token")),
    ]
    # 10. Prompt files: any size, '-' for stdin, a clear error past the limit; --print-ids streams.
    long_prompt = "ab " * 100000  # 300 KB, more tokens than the context: a clear max_length error
    cases += [
        Case("10.prompt_file.stdin", ["generate", "-m", "{model}", "--prompt-file", "-", "--max-length", "12",
                                      "--print-ids"],
             lambda d: replace_with("ab ab")(os.path.join(d, "p.txt")), model=model, stdin="{dir}/p.txt", rc=0,
             stdout_prefix="3,4,0,3,4," if r.opts.group == "random" else None),
        Case("10.prompt_file.long", ["generate", "-m", "{model}", "--prompt-file", "{dir}/p.txt"],
             lambda d: replace_with(long_prompt)(os.path.join(d, "p.txt")), model=model, stderr=("max_length",)),
        Case("10.prompt_file.devzero", ["generate", "-m", "{model}", "--prompt-file", "/dev/zero"], model=model,
             stderr=("--prompt-file", "/dev/zero", "limit")),
        Case("10.prompt_file.stdin_devzero", ["generate", "-m", "{model}", "--prompt-file", "-"], model=model,
             stdin="/dev/zero", stderr=("--prompt-file", "standard input", "limit")),
        Case("10.prompt_file.missing", ["generate", "-m", "{model}", "--prompt-file", "{dir}/none.txt"], model=model,
             stderr=("--prompt-file", "none.txt", "No such file")),
        Case("10.prompt_file.dir", ["generate", "-m", "{model}", "--prompt-file", "{dir}"], model=model,
             stderr=("--prompt-file", "directory")),
        Case("10.prompt_file_and_prompt", ["generate", "-m", "{model}", "--prompt-file", "-", "--prompt", "x"],
             model=model, stderr=("--prompt",)),
    ]
    return cases


def print_ids_streams(r, model):
    """--print-ids writes the prompt ids, then each generated id as it comes: a run interrupted after
    the first generated id keeps what it printed (and did not finish)."""
    work = os.path.join(r.work, "cases", "10.print_ids.streamed")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(model, work)
    # Without EOS (ids 2 never wins once suppressed by min_length) it runs to max_length.
    started = time.monotonic()
    proc = subprocess.Popen([r.cli, "generate", "-m", work, "--ids", "1,5,6", "--print-ids", "--max-length",
                             str(r.context), "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    got = b""
    deadline = time.monotonic() + 20 * r.opts.timeout_scale
    while got.count(b",") < 3 and time.monotonic() < deadline:
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        got += chunk
    first_output = time.monotonic() - started
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=20)
    got += rest
    problems = []
    if not got.startswith(b"1,5,6,"):
        problems.append(f"no prompt ids and first generated id before the interrupt: {got[:80]!r}")
    # A model fast enough to finish within a scheduler tick of its first output cannot show the
    # streaming by timing; the prefix check above still holds for it.
    if (proc.returncode == 0 and got.endswith(b"\n") and got.count(b",") + 1 >= r.context
            and first_output > 0.5):
        problems.append("the run finished before any output arrived (ids not streamed)")
    print(f"{'ok  ' if not problems else 'FAIL'} 10.print_ids.streamed {'':26s} {len(got)} bytes before the interrupt",
          flush=True)
    for p in problems:
        print(f"       - {p}", flush=True)
    return bool(problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
    ap.add_argument("--group", choices=["random", "stories"], default="random")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-rss-mb", type=float, default=200)
    ap.add_argument("--timeout-scale", type=float, default=1.0)
    ap.add_argument("--list", action="store_true")
    opts = ap.parse_args()
    if opts.group == "stories" and not os.path.isdir(os.path.join(opts.shared, "models", "stories260K-hf")):
        print(f"skipped: {opts.shared}/models/stories260K-hf not found (the stories group needs ../shared)")
        return SKIP
    r = Runner(opts)
    r.build_models(opts.group)
    with open(os.path.join(r.model, "genai_config.json")) as fh:
        cfg = json.load(fh)["model"]
    r.vocab, r.context = cfg["vocab_size"], cfg["context_length"]
    hf = r.hf_random if opts.group == "random" else r.hf_stories
    tokenizer_file = "tokenizer.json" if opts.group == "random" else "tokenizer.model"
    cases = issue_cases(r, r.model, hf) + model_file_cases(opts.group, r.model, tokenizer_file)
    cases += build_input_cases(r, hf, checkpoint_cases=opts.group == "random")
    cases = [c for c in cases if opts.only in c.name]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    if opts.list:
        print("\n".join(names))
        return 0
    start = time.monotonic()
    failed = r.run(cases)
    if "10.print_ids.streamed".startswith(opts.only) or opts.only in "10.print_ids.streamed":
        failed += print_ids_streams(r, r.model)
        names.append("10.print_ids.streamed")
    print(f"{len(names) - failed} of {len(names)} cases passed in {time.monotonic() - start:.1f} s "
          f"({opts.group}, {opts.jobs} jobs)")
    return 1 if failed else 0


def build_input_cases(r, hf, checkpoint_cases):
    """Truncations and type confusions of the files `build` reads: config.json, generation_config.json
    and the safetensors checkpoint. None may leave an output or staging folder behind."""
    cases = []
    build = ["build", "-i", "{hf}", "-o", "{dir}/out", "-q"]
    for f in ["config.json", "generation_config.json", "model.safetensors"]:
        variants = [("empty", replace_with(b"")), ("half", truncate_to(lambda n: n // 2)), ("first10", truncate_to(10)),
                    ("dir", make_dir), ("garbage", replace_with(bytes(range(256)) * 8))]
        if f.endswith(".json"):
            variants += [("array", replace_with("[1]")), ("string", replace_with('"x"')), ("number", replace_with("1e999"))]
        else:
            variants.append(("missing", remove))
        for vname, fn in variants:
            cases.append(Case(f"build.{f}.{vname}", build, in_hf(f, fn), hf=hf, stderr=(f,),
                              check=no_leftovers("out", False)))
    with open(os.path.join(hf, "config.json")) as fh:
        config = json.load(fh)
    # Keys the builder reads (torch_dtype, model_type and the like are informational).
    for key in ["architectures", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                "hidden_act", "tie_word_embeddings", "bos_token_id", "eos_token_id"]:
        if key in config:
            cases.append(Case(f"build.config.type.{key}", build,
                              in_hf("config.json", edit_json(set_path((key,), wrong_type(config[key])))), hf=hf,
                              stderr=("config.json", key), check=no_leftovers("out", False)))
    for key, value in [("eos_token_id", "x"), ("top_k", "many"), ("do_sample", "yes"), ("temperature", "hot")]:
        cases.append(Case(f"build.generation_config.type.{key}", build,
                          in_hf("generation_config.json", edit_json(set_path((key,), value))), hf=hf,
                          stderr=("generation_config.json", key), check=no_leftovers("out", False)))

    def st(mutate):
        def f(d):
            write_safetensors(os.path.join(d, "hf", "model.safetensors"), random.Random(3), mutate)
        return f

    def header_len(n):
        def f(d):
            p = os.path.join(d, "hf", "model.safetensors")
            with open(p, "rb") as fh:
                data = fh.read()
            with open(p, "wb") as fh:
                fh.write(struct.pack("<Q", n) + data[8:])
        return f

    if not checkpoint_cases:  # the checkpoint cases below write the random model's weights
        return cases
    first = "model.embed_tokens.weight"
    for cname, prep in [
            ("header_len_huge", header_len(1 << 62)), ("header_len_zero", header_len(0)),
            ("dtype_unknown", st(lambda h, b: (set_path((first, "dtype"), "F33")(h), (h, b))[1])),
            ("dtype_int", st(lambda h, b: (set_path((first, "dtype"), 5)(h), (h, b))[1])),
            ("shape_mismatch", st(lambda h, b: (set_path((first, "shape"), [VOCAB, HIDDEN + 1])(h), (h, b))[1])),
            ("shape_negative", st(lambda h, b: (set_path((first, "shape"), [-1, HIDDEN])(h), (h, b))[1])),
            ("offsets_reversed", st(lambda h, b: (set_path((first, "data_offsets"), [100, 0])(h), (h, b))[1])),
            ("offsets_past_end", st(lambda h, b: (set_path((first, "data_offsets"), [0, 1 << 40])(h), (h, b))[1])),
            ("offsets_strings", st(lambda h, b: (set_path((first, "data_offsets"), ["0", "8"])(h), (h, b))[1])),
            ("tensor_missing", st(lambda h, b: (h.pop("model.norm.weight"), (h, b))[1])),
            ("tensor_not_object", st(lambda h, b: (set_path((first,), [1, 2])(h), (h, b))[1]))]:
        cases.append(Case(f"build.safetensors.{cname}", build, prep, hf=r.hf_random,
                          stderr=("model.safetensors",),
                          check=no_leftovers("out", False)))
    return cases


if __name__ == "__main__":
    sys.exit(main())

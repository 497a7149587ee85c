"""benchmarks/batch_ratio.py, context_ratio.py (and their shared alternate.py) and thread_ratio.py
on stories260K: the generators they step make exactly the tokens asked for, the printed ratios are
what the printed step times give, and bad arguments exit with a message naming them
(optimum_bench.py's too); compare.py --batch against ONNX Runtime (ort_generate_batch.js) and
llama.cpp (llamacpp_generate_batch.mjs) where they are installed."""

import json
import os
import pathlib
import re
import statistics
import subprocess
import sys

import onnxllm as og
import pytest
from conftest import CLI, SOURCE_DIR, run_python, shared

BENCHMARKS = SOURCE_DIR / "benchmarks"
ORACLE_DIR = pathlib.Path(os.environ.get("ONNXLLM_ORACLE_DIR", SOURCE_DIR / "build/oracle"))
# llama.cpp as test_gguf.py finds it: ONNXLLM_LLAMACPP_DIR, else `make llamacpp`'s copy.
LLAMACPP_DIR = pathlib.Path(os.environ.get("ONNXLLM_LLAMACPP_DIR") or next(
    (p for p in (CLI.parent.parent / "llamacpp", SOURCE_DIR / "build/llamacpp") if p.exists()),
    SOURCE_DIR / "build/llamacpp"))
sys.path.insert(0, str(BENCHMARKS))
import alternate  # noqa: E402


def test_generators_step_in_turn(stories_dir):
    model = og.Model(str(stories_dir))
    prompts = [[5 + i + r for i in range(8)] for r in range(3)]
    gens = {1: alternate.generator(model, prompts[:1], 6), 3: alternate.generator(model, prompts, 6)}
    ms = alternate.mean_step_ms(gens, 6)
    assert set(ms) == {1, 3} and all(t > 0 for t in ms.values())
    for key, g in gens.items():
        for row in range(key):
            seq = list(g.get_sequence(row))
            assert len(seq) == 14 and seq[:8] == prompts[row]
        assert g.is_done()
    # Row 0 of the batch is the lone prompt: greedy search gives it the same tokens.
    assert list(gens[3].get_sequence(0)) == list(gens[1].get_sequence(0))


class Recorder:
    """A stand-in generator that logs its steps."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def generate_next_token(self):
        self.log.append(self.name)


@pytest.mark.parametrize("block,order", [
    (1, "abbaabbaabba"),                # one step each, the order rotating every step
    (3, "aaabbbbbbaaa"),                # blocks of 3: a's, b's, then b first
    (6, "aaaaaabbbbbb"),                # whole runs (batch_ratio.py)
    (4, "aaaabbbbbbaa"),                # a last, shorter block
])
def test_step_order(block, order):
    log = []
    ms = alternate.mean_step_ms({"a": Recorder("a", log), "b": Recorder("b", log)}, 6, block=block)
    assert "".join(log) == order
    assert set(ms) == {"a", "b"}


def run(script, *args):
    return run_python(BENCHMARKS / script, *args, timeout=300)


def quotient_range(num, den, factor=1.0, half_unit=0.0005):
    """The values factor * num / den can take for num and den printed rounded to 3 decimals."""
    return factor * (num - half_unit) / (den + half_unit), factor * (num + half_unit) / (den - half_unit)


def test_batch_ratio(stories_dir):
    result = run("batch_ratio.py", "-m", stories_dir, "--batch", "2", "--prompt-len", "8", "--gen-len", "6",
                 "--rounds", "2")
    assert result.returncode == 0, result.stderr
    rounds = re.findall(r"batch 1 ([\d.]+) ms a step .* batch 2 ([\d.]+) ms .* ratio ([\d.]+)", result.stdout)
    assert len(rounds) == 2, result.stdout
    ratios = []
    for one, two, ratio in rounds:
        lo, hi = quotient_range(float(one), float(two), factor=2)
        assert lo - 0.005 <= float(ratio) <= hi + 0.005, (one, two, ratio)
        ratios.append(float(ratio))
    median = re.search(r"median ([\d.]+) over 2 rounds", result.stdout)
    assert median and float(median.group(1)) == pytest.approx(statistics.median(ratios), abs=0.01)


def test_context_ratio(stories_dir):
    result = run("context_ratio.py", "-m", stories_dir, "--short", "8", "--long", "32", "--gen-len", "6",
                 "--rounds", "1", "--onnxllm", CLI)
    assert result.returncode == 0, result.stderr
    # Every file of the folder read into the page cache before the runs.
    size = sum(f.stat().st_size for f in pathlib.Path(stories_dir).rglob("*") if f.is_file())
    warm = re.search(r"page cache: read ([\d.]+) MiB of (\S+) in [\d.]+ s before the runs", result.stdout)
    assert warm and warm[2] == str(stories_dir), result.stdout
    assert float(warm[1]) == pytest.approx(size / (1 << 20), abs=0.06)
    m = re.search(r"8 tokens ([\d.]+) ms a step, 32 tokens ([\d.]+) ms, ratio ([\d.]+)", result.stdout)
    assert m, result.stdout
    lo, hi = quotient_range(float(m.group(1)), float(m.group(2)))
    assert lo - 0.0005 <= float(m.group(3)) <= hi + 0.0005, m.groups()
    # The bound from the model's own byte counts: stories260K (5 layers, 4 KV heads of 8, float32)
    # keeps 2 x 5 x 4 x 8 x 4 = 1280 cache bytes a position, at mean contexts 8 + 3 and 32 + 3.
    bench = subprocess.run([str(CLI), "bench", "-m", str(stories_dir), "--prompt-len", "1", "--gen-len", "2",
                            "--reps", "1", "--no-bandwidth", "--json"], capture_output=True, text=True, check=True)
    j = [line for line in bench.stdout.splitlines() if line.startswith("{")][-1]
    j = json.loads(j)
    assert j["kv_bytes_per_position"] == 1280, j
    fixed = j["weight_bytes_per_step"] + j["row_bytes_per_token"]
    expected = (fixed + 1280 * 11) / (fixed + 1280 * 35)
    b = re.search(r"bandwidth bound ([\d.]+) \(.*KV cache 1\.2 KiB a position.* at 11 and .* at 35\); "
                  r"the median is ([\d.]+) of it", result.stdout)
    assert b, result.stdout
    assert float(b.group(1)) == pytest.approx(expected, abs=0.0005)
    assert float(b.group(2)) == pytest.approx(float(m.group(3)) / expected, abs=0.006)


def test_context_ratio_names_a_missing_cli(stories_dir, tmp_path):
    result = run("context_ratio.py", "-m", stories_dir, "--short", "8", "--long", "32", "--gen-len", "6",
                 "--rounds", "1", "--onnxllm", tmp_path / "no-such-onnxllm")
    assert result.returncode != 0 and "cannot run" in result.stderr and "no-such-onnxllm" in result.stderr, result.stderr


def test_thread_ratio(stories_dir):
    result = run("thread_ratio.py", "-m", stories_dir, "--onnxllm", CLI, "--threads", "2,1", "--prompt-len", "8",
                 "--gen-len", "6", "--rounds", "3")
    assert result.returncode == 0, result.stderr
    rounds = re.findall(r"round \d/3: 2 threads ([\d.]+) tokens/s, 1 threads ([\d.]+), ratio ([\d.]+)", result.stdout)
    assert len(rounds) == 3, result.stdout
    speeds_a, speeds_b, ratios = [], [], []  # --threads 2,1: A is 2 threads, B is 1
    for a, b, ratio in rounds:
        lo, hi = quotient_range(float(b), float(a), half_unit=0.05)
        assert lo - 0.005 <= float(ratio) <= hi + 0.005, (a, b, ratio)
        speeds_a.append(float(a))
        speeds_b.append(float(b))
        ratios.append(float(ratio))
    m = re.search(r"medians over 3 rounds: 2 threads ([\d.]+), 1 threads ([\d.]+); ratio of the medians ([\d.]+), "
                  r"median of the rounds' ratios ([\d.]+)", result.stdout)
    assert m, result.stdout
    assert float(m.group(1)) == pytest.approx(statistics.median(speeds_a), abs=0.05)
    assert float(m.group(2)) == pytest.approx(statistics.median(speeds_b), abs=0.05)
    lo, hi = quotient_range(float(m.group(2)), float(m.group(1)), half_unit=0.05)
    assert lo - 0.005 <= float(m.group(3)) <= hi + 0.005, m.groups()
    assert float(m.group(4)) == pytest.approx(statistics.median(ratios), abs=0.01)


@pytest.mark.parametrize("args,message", [
    (["--threads", "2,2"], "two different numbers >= 1, got '2,2'"),
    (["--threads", "0,2"], "two different numbers >= 1, got '0,2'"),
    (["--threads", "1,2,3"], "two thread counts separated by a comma, got '1,2,3'"),
    (["--threads", "x"], "two thread counts separated by a comma, got 'x'"),
    (["--gen-len", "2"], "--gen-len at least 3"),
    (["--rounds", "0"], "--rounds at least 1"),
    (["--onnxllm", "/nonexistent/onnxllm"], "/nonexistent/onnxllm is not an executable"),
    (["--onnxllm", "/"], "thread_ratio: cannot run /:"),  # a directory passes the X_OK check
])
def test_thread_ratio_bad_arguments(stories_dir, args, message):
    result = run("thread_ratio.py", "-m", stories_dir, "--onnxllm", CLI, *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_thread_ratio_failed_bench(tmp_path):
    """A folder bench cannot load: the script stops with bench's own message."""
    result = run("thread_ratio.py", "-m", tmp_path, "--onnxllm", CLI, "--rounds", "1")
    assert result.returncode != 0 and "thread_ratio: exit" in result.stderr and "genai_config.json" in result.stderr, \
        result.stderr


@pytest.fixture(scope="module")
def small_llama(tmp_path_factory):
    """A random Llama checkpoint small enough for every peer: ORT's GroupQueryAttention wants a head
    size that is a multiple of 16 (stories260K's is 8); weights with std 0.5 keep the logits apart
    so that float32 runtimes agree on every greedy token. Returns (HF folder, fp32 model folder)."""
    base = tmp_path_factory.mktemp("small_llama")
    hf, model = base / "hf", base / "fp32"
    made = run("make_model.py", hf, "--hidden", "64", "--intermediate", "128", "--layers", "2", "--heads", "4",
               "--kv-heads", "2", "--head-dim", "16", "--vocab", "512", "--context", "64", "--std", "0.5")
    assert made.returncode == 0, made.stderr
    subprocess.run([str(CLI), "build", "-i", str(hf), "-o", str(model), "-p", "fp32", "-q"], check=True,
                   capture_output=True)
    return hf, model


def check_batch_table(stdout, peer):
    """compare.py --batch 3's table: the header names the batch, the peer's greedy tokens equal
    onnxllm's in every row, and the decode ratio is the printed tok/s' quotient."""
    assert "threads 1, batch 3, prompt 8, new tokens 5" in stdout, stdout
    assert f"tokens: {peer} matches onnxllm's first 5 of 5 generated (the least of 3 rows; all rows: 5 5 5)" \
        in stdout, stdout
    decode = re.search(r"decode tok/s +([\d.]+) +([\d.]+) +([\d.]+)", stdout)
    assert decode and float(decode.group(1)) > 0 and float(decode.group(2)) > 0, stdout
    assert float(decode.group(3)) == pytest.approx(float(decode.group(1)) / float(decode.group(2)), rel=0.01)


def test_compare_batch_against_ort(small_llama):
    """compare.py --batch 3 with ONNX Runtime running the three rows as one batch
    (ort_generate_batch.js), as onnxllm bench --batch 3 does."""
    if not (ORACLE_DIR / "node_modules/onnxruntime-node").exists() or not (ORACLE_DIR / "ort_generate.js").exists():
        pytest.skip(f"ONNX Runtime oracle not installed in {ORACLE_DIR} (run `make oracle`)")
    result = run("compare.py", "--model", small_llama[1], "--skip", "llamacpp", "--batch", "3", "--threads", "1",
                 "--prompt-len", "8", "--gen-len", "5", "--rounds", "3", "--onnxllm", CLI,
                 "--ort-script", ORACLE_DIR / "ort_generate.js")
    assert result.returncode == 0, result.stderr
    check_batch_table(result.stdout, "ORT 1.30")


def test_compare_batch_against_llamacpp(small_llama, tmp_path):
    """compare.py --batch 3 with llama.cpp's three sequences of one context batched by node-llama-cpp
    (llamacpp_generate_batch.mjs), on an F32 GGUF of the same checkpoint."""
    if not (LLAMACPP_DIR / "node_modules/node-llama-cpp").exists():
        pytest.skip(f"llama.cpp is not set up in {LLAMACPP_DIR} (run `make llamacpp`)")
    gguf = tmp_path / "small-f32.gguf"
    subprocess.run(["/usr/bin/python3", str(shared("tools/llamacpp/hf_to_gguf.py")), str(small_llama[0]), str(gguf)],
                   check=True, capture_output=True)
    result = run("compare.py", "--model", small_llama[1], "--gguf", gguf, "--llamacpp", LLAMACPP_DIR, "--skip", "ort",
                 "--batch", "3", "--threads", "1", "--prompt-len", "8", "--gen-len", "5", "--rounds", "3",
                 "--onnxllm", CLI)
    assert result.returncode == 0, result.stderr
    check_batch_table(result.stdout, "llama.cpp")


@pytest.mark.parametrize("args,message", [
    (["--batch", "0"], "--batch >= 1"),
    (["--batch", "2", "--warmup", "1"], "--warmup is for --batch 1"),
])
def test_compare_bad_arguments(stories_dir, args, message):
    result = run("compare.py", "--model", stories_dir, "--skip", "ort", "--skip", "llamacpp", *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr


@pytest.mark.parametrize("script,args,message", [
    ("batch_ratio.py", ["--batch", "1"], "--batch (1) must be at least 2"),
    ("batch_ratio.py", ["--prompt-len", "0"], "--prompt-len (0) at least 1"),
    ("batch_ratio.py", ["--gen-len", "2"], "--gen-len must be at least 3"),
    ("batch_ratio.py", ["--prompt-len", "100000"], "exceeds the model's context_length"),
    ("context_ratio.py", ["--short", "64", "--long", "64"], "--short (64) must be positive and below --long (64)"),
    ("context_ratio.py", ["--long", "100000"], "exceeds the model's context_length"),
])
def test_bad_arguments(stories_dir, script, args, message):
    result = run(script, "-m", stories_dir, *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr


@pytest.mark.parametrize("script", ["batch_ratio.py", "context_ratio.py"])
def test_folder_without_genai_config(tmp_path, script):
    result = run(script, "-m", tmp_path)
    assert result.returncode != 0
    assert "genai_config.json" in result.stderr and "onnxllm config -m DIR" in result.stderr, result.stderr


@pytest.mark.parametrize("lengths,message", [("64,abc", "expected lengths separated by commas"),
                                             ("64,0", "lengths must be >= 1")])
def test_optimum_bench_prompt_lengths(tmp_path, lengths, message):
    """Checked before anything is written (a model of ~0.5 GB)."""
    work = tmp_path / "work"
    result = run("optimum_bench.py", work, "--prompt-len", lengths)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert not work.exists()


def test_guidance_bench(stories_dir):
    # stories260K writes no JSON by itself: the guided figures are of the constrained path.
    result = run("guidance_bench.py", "-m", stories_dir, "--new", "40", "--clients", "3", "--rounds", "2")
    assert result.returncode == 0, result.stderr
    rounds = re.findall(r"round \d/2 (guided|plain ): generator ([\d.]+) tok/s \((\d+) tokens\), 3 engine requests ([\d.]+)",
                        result.stdout)
    assert sorted(r[0] for r in rounds) == ["guided", "guided", "plain ", "plain "], result.stdout
    assert all(float(r[1]) > 0 and float(r[3]) > 0 for r in rounds)
    # Unguided runs to --new; a guided value may end with EOS earlier, never later.
    assert all(int(r[2]) == 39 for r in rounds if r[0] == "plain "), rounds
    assert all(0 < int(r[2]) <= 39 for r in rounds if r[0] == "guided"), rounds
    for what in ("generator", "engine"):
        m = re.search(what + r": plain ([\d.]+) tok/s, guided ([\d.]+) tok/s, guided / plain ([\d.]+)", result.stdout)
        assert m, result.stdout
        lo, hi = quotient_range(float(m.group(2)), float(m.group(1)), half_unit=0.05)
        assert lo - 0.0005 <= float(m.group(3)) <= hi + 0.0005, m.groups()


def test_guidance_bench_regex_and_grammar(stories_dir, tmp_path):
    # The other guidance types: a regex that ends within --new, a grammar of free text.
    result = run("guidance_bench.py", "-m", stories_dir, "--new", "40", "--clients", "0", "--rounds", "1",
                 "--regex", r"(Yes|No)\.")
    assert result.returncode == 0, result.stderr
    [(n,)] = re.findall(r"round 1/1 guided: generator [\d.]+ tok/s \((\d+) tokens\)", result.stdout)
    assert 1 <= int(n) <= 4, result.stdout  # "Yes." / "No." is a few tokens, then EOS (unguided: 39)
    grammar = tmp_path / "text.lark"
    grammar.write_text("start: TEXT\nTEXT: /[^{<](.|\\n)*/\n")
    result = run("guidance_bench.py", "-m", stories_dir, "--new", "20", "--clients", "2", "--rounds", "1",
                 "--grammar", grammar)
    assert result.returncode == 0, result.stderr
    assert re.search(r"round 1/1 guided: generator [\d.]+ tok/s \(19 tokens\), 2 engine requests", result.stdout), result.stdout


def test_guidance_bench_bad_arguments(stories_dir):
    result = run("guidance_bench.py", "-m", stories_dir, "--new", "2")
    assert result.returncode != 0 and "--new must be at least 3" in result.stderr, result.stderr
    result = run("guidance_bench.py", "-m", stories_dir, "--regex", "a", "--schema", "x.json")
    assert result.returncode != 0 and "not allowed with argument" in result.stderr, result.stderr


def test_speculative_bench(stories_dir, tmp_path):
    # The script itself fails when speculative tokens differ from standard decoding's.
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Once upon a time, there was a girl named Lily. She liked to play. Once upon a time, there")
    result = run("speculative_bench.py", "-m", stories_dir, "--prompt-file", prompt, "--new", "60",
                 "--draft-tokens", "2,4", "--rounds", "2")
    assert result.returncode == 0, result.stderr
    base = re.search(r"^standard: ([\d.]+) tokens/s$", result.stdout, re.M)
    assert base and float(base[1]) > 0, result.stdout
    lines = re.findall(r"max_draft_tokens (\d+): ([\d.]+) tokens/s \(x([\d.]+)\); (\d+) rounds .* (\d+) of (\d+) drafts "
                       r"accepted \(([\d.]+)\), (\d+) tokens from rounds, (\d+) standard steps", result.stdout)
    assert [int(l[0]) for l in lines] == [2, 4], result.stdout
    for k, speed, ratio, rounds, accepted, evaluated, rate, emitted, standard in lines:
        lo, hi = quotient_range(float(speed), float(base[1]), half_unit=0.05)
        assert lo - 0.005 <= float(ratio) <= hi + 0.005
        assert int(rounds) > 0 and int(accepted) <= int(evaluated)
        assert int(emitted) + int(standard) == 59  # every token after the first: a round's or a step's
    for args, message in [(["--draft-tokens", "0"], "each must be in [1, 16]"),
                          (["--draft-tokens", "2,x"], "expected numbers separated by commas"),
                          (["--new", "1"], "--new must be at least 2")]:
        result = run("speculative_bench.py", "-m", stories_dir, *args)
        assert result.returncode != 0 and message in result.stderr, result.stderr

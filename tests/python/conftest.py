"""Fixtures for the Python package tests (run by ctest with PYTHONPATH=build/python).

ONNXLLM_SHARED_DIR, ONNXLLM_CLI and ONNXLLM_SOURCE_DIR come from tests/cmake/python.cmake;
tests that need ../shared skip with a message when it is absent.
"""

import json
import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("ONNXLLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
SHARED_DIR = pathlib.Path(os.environ.get("ONNXLLM_SHARED_DIR", SOURCE_DIR / "../shared"))
CLI = pathlib.Path(os.environ.get("ONNXLLM_CLI", SOURCE_DIR / "build/bin/onnxllm"))
TUTORIAL = SOURCE_DIR / "tests/python/data/tutorial.py"


def shared(path):
    p = SHARED_DIR / path
    if not p.exists():
        pytest.skip(f"../shared not found ({p})")
    return p


def run_cli(*args):
    return subprocess.run([str(CLI), *map(str, args)], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def stories_hf():
    return shared("models/stories260K-hf")


@pytest.fixture(scope="session")
def stories_dir(stories_hf, tmp_path_factory):
    """stories260K built with `onnxllm build -p fp32`."""
    out = tmp_path_factory.mktemp("models") / "stories260K-fp32"
    run_cli("build", "-i", stories_hf, "-o", out, "-p", "fp32", "-q")
    # One intra-op thread: this model is far too small to gain from more, and a thread pool on a
    # busy machine costs it tens of milliseconds per token.
    config_path = out / "genai_config.json"
    config = json.loads(config_path.read_text())
    config["model"]["decoder"].setdefault("session_options", {})["intra_op_num_threads"] = 1
    config_path.write_text(json.dumps(config, indent=2))
    return out


@pytest.fixture(scope="session")
def gpt2_dir():
    return shared("models/tiny-random-gpt2-fp32")


def tutorial_source(model_dir, prompt=None, do_sample=True, max_length=200):
    """The issue's tutorial script with its model path (and optionally prompt, sampling, length) replaced."""
    text = TUTORIAL.read_text()
    text = text.replace('"./phi-2-int4"', repr(str(model_dir)))
    if prompt is not None:
        text = text.replace('"Write a short haiku about autumn leaves:"', repr(prompt))
    if not do_sample:
        text = text.replace("params.do_sample = True", "params.do_sample = False")
    text = text.replace("params.max_length = 200", f"params.max_length = {max_length}")
    return text


def run_python(source_or_path, *args, stdin=None, cwd=None, timeout=120):
    """Runs a script in a fresh interpreter with this build's package importable."""
    cmd = ["/usr/bin/python3"]
    cmd += [str(source_or_path)] if isinstance(source_or_path, pathlib.Path) else ["-c", source_or_path]
    cmd += [str(a) for a in args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=dict(os.environ))

"""README.md's shell snippets, run as written: every `build/bin/onnxllm` line of "Using the CLI"
(placeholders such as HF_DIR, OUT and FILE.json replaced by real files, optional [...] parts
included; the hub lines against tests/hub/mock_hub.py serving the first build's folder, so no
network) and the C/C++ quickstart block (into a temporary prefix). The Python snippet is run by
test_examples.py."""

import http.client
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys

import pytest
from conftest import CLI, SOURCE_DIR, shared

sys.path.insert(0, str(SOURCE_DIR / "tests" / "hub"))
from mock_hub import MockHub, Repo  # noqa: E402
import optimum_export

README = (SOURCE_DIR / "README.md").read_text()
BUILD_DIR = CLI.parent.parent


def section(title):
    """The first ``` block after the heading `title`."""
    after = README.split(title, 1)[1]
    return after.split("```", 2)[1].split("\n", 1)[1]


def cli_lines():
    lines = []
    for line in section("## Using the CLI").splitlines():
        line = line.split(" # ", 1)[0].strip()
        if line.startswith("build/bin/onnxllm"):
            lines.append(line)
    return lines


@pytest.fixture(scope="module")
def files(tmp_path_factory, stories_hf):
    tmp = tmp_path_factory.mktemp("readme")
    fp32 = tmp / "fp32"
    subprocess.run([str(CLI), "build", "-i", str(stories_hf), "-o", str(fp32), "-p", "fp32", "-q"], check=True)
    (tmp / "story.txt").write_text("Once upon a time")
    (tmp / "cat.schema.json").write_text(json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12}, "lives": {"type": "integer"}}, "required": ["name", "lives"]}))
    (tmp / "strings.json").write_text(json.dumps(["Hello", "Once upon a time"]))
    (tmp / "messages.json").write_text(json.dumps([{"role": "user", "content": "Hi"}]))
    (tmp / "tools.json").write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    gguf = tmp / "model.gguf"  # the same weights as llama.cpp reads them (Q4_0 projections)
    converter = stories_hf.parent.parent / "tools/llamacpp/hf_to_gguf.py"
    subprocess.run(["/usr/bin/python3", str(converter), str(stories_hf), str(gguf), "--q4_0"], check=True,
                   capture_output=True)
    # An Optimum export (merged layout, no genai_config.json) for the `config` and OPTIMUM_DIR lines.
    optimum = optimum_export.write_folder(tmp / "optimum", "llama", optimum_export.llama_config(), "merged")
    return {"tmp": tmp, "fp32": fp32, "hf": stories_hf, "optimum": optimum, "gguf": gguf}


def substitute(line, files, index):
    tmp = files["tmp"]
    out = tmp / "out"  # the first build's folder, used by every later line
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # include the optional parts
    words = shlex.split(line)
    words[0] = str(CLI)
    result = []
    for i, w in enumerate(words):
        before = words[i - 1] if i else ""
        if w == "HF_DIR":
            w = str(files["hf"])
        elif w == "OWNER/NAME":
            w = "acme/stories"
        elif w == "R" and before == "--revision":
            w = "v1"
        elif w == "GLOB...":
            w = "*.json"
        elif w in ("OUT", "DIR") and before == "-o":
            w = str(out if not out.exists() else tmp / f"out{index}")
        elif w in ("OUT", "OUT|model.onnx", "DIR"):
            w = str(out)
        elif w == "OPTIMUM_DIR":
            w = str(files["optimum"])
        elif w == "FILE" and before == "-o":
            w = str(tmp / f"genai_config{index}.json")
        elif w == "DIR...":
            w = "/usr/share/libonnx-testdata/data/node/test_abs"
        elif w == "config.json":
            w = str(files["hf"] / "config.json")
        elif w == "model.gguf":
            w = str(files["gguf"])
        elif w == "model.onnx":
            w = str(files["fp32"] / "model.onnx")
        elif w == "model-int4.onnx":
            w = str(tmp / f"q{index}" / "model-int4.onnx")
            (tmp / f"q{index}").mkdir()
        elif w == "story.txt":
            w = str(tmp / "story.txt")
        elif w == "cat.schema.json":
            w = str(tmp / "cat.schema.json")
        elif w == "FILE.json":
            w = str(tmp / {"--strings": "strings.json", "--messages": "messages.json", "--tools": "tools.json"}[before])
        elif w == "TEXT":
            w = "You are a storyteller."
        elif w == "N":
            w = "2"
        elif w == "B":
            w = "2"
        elif w == "JSON":
            w = "{}"
        result.append(w)
    return result


def serve_hub(hub, out):
    """The README's repositories on the mock hub, each holding the first build's folder (weights as
    LFS files, as on huggingface.co)."""
    folder = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    lfs = {name for name in folder if not name.endswith((".json", ".jinja", ".txt"))}
    hub.repos["acme/stories"] = Repo(folder, lfs)
    hub.repos["acme/stories"].refs["v1"] = hub.repos["acme/stories"].commit
    phi3 = "cpu_and_mobile/cpu-int4-rtn-block-32-acc-level-4/"
    hub.repos["microsoft/Phi-3-mini-4k-instruct-onnx"] = Repo(
        {phi3 + name: data for name, data in folder.items()} | {"README.md": b"a model card\n"},
        {phi3 + name for name in lfs})


@pytest.fixture()
def hub():
    hub = MockHub()
    yield hub
    hub.close()


def check_serve_line(line, argv, files):
    """`serve` runs until a signal: start it on a free port, ask /health and /v1/models, then
    SIGTERM it, which must drain and exit 0."""
    argv = [w if w != "8080" else "0" for w in argv]
    argv = [w if w != "ID" else "readme-model" for w in argv]
    argv = [w if w != "KEY" else "sesame" for w in argv]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        started = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in started, f"README line `{line}`: {started}"
        port = int(started.split("127.0.0.1:")[1].split()[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/v1/models", headers={"Authorization": "Bearer sesame"})
        models = json.loads(conn.getresponse().read())
        assert models["data"][0]["id"] == "readme-model", models
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, f"README line `{line}` did not drain and exit 0 on SIGTERM"


def test_readme_cli_lines(files, hub):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(files["tmp"] / "hf_home"), HF_ENDPOINT=hub.endpoint)
    lines = cli_lines()
    assert len(lines) >= 15, lines
    if not pathlib.Path("/usr/share/libonnx-testdata").exists():
        lines = [l for l in lines if " onnx-test " not in l]
    for index, line in enumerate(lines):
        argv = substitute(line, files, index)
        if argv[1] == "pull" and not hub.repos:
            serve_hub(hub, files["tmp"] / "out")
        if argv[1] == "serve":
            check_serve_line(line, argv, files)
            continue
        stdin = "Once upon a time\n/reset\n/exit\n" if argv[1] == "chat" else None
        r = subprocess.run(argv, capture_output=True, text=True, input=stdin, timeout=300, env=env,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
        assert r.returncode == 0, f"README line `{line}` as {argv}: exit {r.returncode}\n{r.stderr[-2000:]}"
        assert r.stdout.strip() or argv[1] in ("build", "quantize", "config"), f"`{line}` printed nothing"
        if argv[1] == "pull" and "-o" in argv:
            pulled = pathlib.Path(argv[argv.index("-o") + 1])
            assert (pulled / "genai_config.json").read_bytes() == (files["tmp"] / "out" / "genai_config.json").read_bytes()
            assert not (pulled / "model.onnx").exists(), "--include '*.json' pulled model.onnx"
        out = files["tmp"] / "out"
        if argv[1] == "build" and not (out / "chat_template.jinja").exists():
            # stories260K has no chat template; the chat lines need one, as a chat model has.
            (out / "chat_template.jinja").write_text(
                "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                "{% if add_generation_prompt %}assistant:{% endif %}")


def test_readme_c_quickstart(files, tmp_path):
    block = section("## C and C++")
    model = tmp_path / "model"
    subprocess.run([str(CLI), "build", "-i", str(files["hf"]), "-o", str(model), "-p", "fp32", "-q"], check=True)
    script = (block.replace("/opt/onnxllm", str(tmp_path / "prefix"))
                   .replace("build/models/stories260K-fp32", str(model))
                   .replace("--install build ", f"--install {BUILD_DIR} ")
                   .replace("examples/c/", f"{SOURCE_DIR}/examples/c/"))
    assert "pkg-config" in script and "generate.cpp" in script
    r = subprocess.run(["sh", "-e", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Lily" in r.stdout, r.stdout
    assert (tmp_path / "generate_cpp").exists()

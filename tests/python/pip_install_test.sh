#!/usr/bin/env bash
# `pip install .` from a clean copy of the sources (the files git tracks or would track) into a
# fresh venv made with --system-site-packages, offline; then the installed package, imported from
# outside the source tree, generates the same greedy tokens as the CLI.
# Usage: pip_install_test.sh WORK_DIR   (`make pip-test`; ONNXLLM_CLI and ONNXLLM_SHARED_DIR optional)
# The copy always lands in WORK_DIR/src, so ccache (CCACHE_BASEDIR=WORK_DIR) hits on later runs.
set -euo pipefail
work="$1"
src="${ONNXLLM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
rm -rf "$work/venv" "$work/src" && mkdir -p "$work/src"
(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/src"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
export CCACHE_BASEDIR="$work" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
(cd "$work/src" && "$work/venv/bin/pip" install -q .)
cd "$work"
unset PYTHONPATH
"$work/venv/bin/python" - <<'PY'
import os, pathlib, subprocess
import onnxllm as og
assert "/venv/" in og.__file__ and "site-packages" in og.__file__, og.__file__
print("installed", og.__version__, "at", og.__file__)
model_dir = pathlib.Path(os.environ.get("ONNXLLM_SHARED_DIR", "/nonexistent")) / "models/tiny-random-gpt2-fp32"
if model_dir.exists():
    model = og.Model(str(model_dir))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=10)
    generator = og.Generator(model, params)
    generator.append_tokens([0, 0, 195, 731])
    while not generator.is_done():
        generator.generate_next_token()
    ids = ",".join(map(str, generator.get_sequence(0)))
    cli = subprocess.run([os.environ.get("ONNXLLM_CLI", "onnxllm"), "generate", "-m", str(model_dir), "--ids", "0,0,195,731",
                          "--max-length", "10", "--print-ids"], check=True, capture_output=True, text=True).stdout
    assert ids + "\n" == cli, (ids, cli)
    print("greedy tokens equal the CLI's:", ids)
else:
    print("../shared not found: generation not checked")
PY

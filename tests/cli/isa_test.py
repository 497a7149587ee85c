#!/usr/bin/python3
"""End-to-end: greedy tokens on stories260K (fp32, int4 at accuracy levels 0 and 4, int8) are the
same with every instruction set this CPU has (ONNXLLM_ISA=scalar is the reference) and with graph
fusions on or off (ONNXLLM_FUSIONS=0), and a bad ONNXLLM_ISA is a clear error.
usage: isa_test.py ONNXLLM_CLI SHARED_DIR WORK_DIR   (exit 77 = skipped: ../shared absent)"""

import os
import pathlib
import shutil
import subprocess
import sys

cli, shared, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
hf = shared / "models/stories260K-hf"
if not hf.is_dir():
    print(f"skipped: {hf} not found")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)


def run(args, isa=None, fusions=None):
    env = dict(os.environ)
    env.pop("ONNXLLM_ISA", None)
    env.pop("ONNXLLM_FUSIONS", None)
    if isa:
        env["ONNXLLM_ISA"] = isa
    if fusions:
        env["ONNXLLM_FUSIONS"] = fusions
    return subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=300)


models = {
    "fp32": ["-p", "fp32"],
    "int4": ["-p", "int4", "--block-size", "32"],
    "int4-level4": ["-p", "int4", "--block-size", "32", "--accuracy-level", "4"],
    "int4-level4-zp": ["-p", "int4", "--block-size", "16", "--accuracy-level", "4", "--asymmetric"],
    "int8": ["-p", "int8", "--block-size", "32"],
}
for name, flags in models.items():
    r = run(["build", "-i", str(hf), "-o", str(work / name), "-q", *flags])
    assert r.returncode == 0, r.stderr

prompts = ["1", "1,403,407,261,263,217", "1;1,403,407"]  # BOS, a prompt, a padded batch
isas = []
for isa in ["scalar", "avx2", "avx2-vnni", "avx512", "neon"]:
    r = run(["generate", "-m", str(work / "fp32"), "--ids", "1", "-n", "1", "--print-ids", "--no-timings"], isa)
    if r.returncode == 0:
        isas.append(isa)
    else:
        assert "this CPU does not support" in r.stderr, r.stderr
print("instruction sets on this CPU:", " ".join(isas))
checked = 0
for name in models:
    for ids in prompts:
        want = None
        for isa in isas:
            r = run(["generate", "-m", str(work / name), "--ids", ids, "-n", "80", "--print-ids", "--no-timings"], isa)
            assert r.returncode == 0, f"{name} {isa}: {r.stderr}"
            got = r.stdout.split()
            assert len(got) == ids.count(";") + 1 and all(len(row.split(",")) > 40 for row in got), r.stdout
            if want is None:
                want = got
            assert got == want, f"{name}, prompt {ids}: {isa} gave\n{got}\nscalar gave\n{want}"
            checked += 1

# Graph fusions (runtime/fusion.h) change no bits either.
for name in ["int4-level4", "int4"]:
    got = [run(["generate", "-m", str(work / name), "--ids", "1", "-n", "80", "--print-ids", "--no-timings"], None,
               fusions).stdout for fusions in ("1", "0")]
    assert got[0] == got[1] and len(got[0].split(",")) > 40, f"{name}: fused\n{got[0]}\nunfused\n{got[1]}"

for bad, message in [("bogus", "ONNXLLM_ISA='bogus' is not an instruction set"), ("AVX2", "ONNXLLM_ISA='AVX2'")]:
    r = run(["generate", "-m", str(work / "int4-level4"), "--ids", "1", "-n", "2"], bad)
    assert r.returncode == 1 and message in r.stderr, (r.returncode, r.stderr)
print(f"isa test: {checked} runs, {len(models)} models x {len(prompts)} prompts, identical greedy tokens on {isas}")

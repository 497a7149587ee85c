#!/usr/bin/env bash
# The main job: until the generation layer lands, a smoke run of the ONNX runtime on the shared
# tiny GPT-2 model (or the operator list when ../shared is absent).
set -euo pipefail
build="${1:-build}"
model="$(dirname "$0")/../../shared/models/tiny-random-gpt2-fp32/past.onnx"
if [ -f "$model" ]; then
  "$build/bin/onnxllm" run -m "$model" --dim batch_size=2 --dim seq_len=4 --random
else
  echo "../shared not found: listing supported operators instead"
  "$build/bin/onnxllm" ops
fi

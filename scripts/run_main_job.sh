#!/usr/bin/env bash
# The main job: turn a Hugging Face checkpoint into an onnxllm model folder with the builder, then
# generate with it. With ../shared: the trained TinyStories Llama (stories260K) in fp32 and int4,
# greedy from BOS for 200 tokens (checked against the expected text), then a streamed text prompt.
# Without ../shared: a random-weight Llama of the same shape, ids in and ids out.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
cli="$build/bin/onnxllm"
models="$build/models"
mkdir -p "$models"
hf="$root/../shared/models/stories260K-hf"

if [ -d "$hf" ]; then
  for p in fp32 int4; do
    echo "== onnxllm build -i stories260K-hf -p $p"
    "$cli" build -i "$hf" -o "$models/stories260K-$p" -p "$p" --overwrite -q
  done
  echo "== greedy from BOS, 200 tokens (fp32)"
  "$cli" generate -m "$models/stories260K-fp32" --ids 1 --max-length 201 | tee "$models/greedy-fp32.txt"
  echo
  # The CLI ends its output with a newline; the expected file does not.
  if [ "$(cat "$models/greedy-fp32.txt")" = "$(cat "$hf/expected_greedy_200.txt")" ]; then
    echo "== fp32 output equals expected_greedy_200.txt"
  else
    echo "== fp32 output DIFFERS from expected_greedy_200.txt"; exit 1
  fi
  echo "== greedy from BOS, 200 tokens (int4, block 32)"
  "$cli" generate -m "$models/stories260K-int4" --ids 1 --max-length 201
  echo
  echo "== --prompt 'Once upon a time there was a dragon' (fp32, streamed)"
  "$cli" generate -m "$models/stories260K-fp32" --prompt "Once upon a time there was a dragon" --max-length 100
  echo
else
  echo "../shared not found: building a random-weight Llama from a config instead"
  cat >"$models/random-llama-config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 172,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1,
 "eos_token_id": 2, "tie_word_embeddings": false}
JSON
  "$cli" build --config "$models/random-llama-config.json" --random-weights --seed 1 -o "$models/random-llama-int4" -p int4 --overwrite -q
  "$cli" generate -m "$models/random-llama-int4" --ids "1,5,9;1,7,3" --max-length 32 --print-ids
fi

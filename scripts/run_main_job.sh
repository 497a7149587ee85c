#!/usr/bin/env bash
# The main job: turn a Hugging Face checkpoint into an onnxllm model folder with the builder, then
# run the tutorial's Python script (tests/python/data/tutorial.py, `import onnxllm as og`) on it.
# With ../shared: the trained TinyStories Llama (stories260K) in fp32 and int4; the tutorial
# greedy from BOS for 200 tokens (checked against the expected text), then as written (sampling).
# Without ../shared: a random-weight Llama of the same shape with a small word-level tokenizer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
cli="$build/bin/onnxllm"
models="$build/models"
mkdir -p "$models"
hf="$root/../shared/models/stories260K-hf"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

# tutorial MODEL_DIR [PROMPT MAX_LENGTH]: the tutorial script with its model path replaced and,
# when PROMPT is given, that prompt, greedy search and MAX_LENGTH.
tutorial() {
  local script="$models/tutorial-run.py"
  sed "s|\"./phi-2-int4\"|\"$1\"|" "$root/tests/python/data/tutorial.py" >"$script"
  if [ $# -gt 1 ]; then
    sed -i -e "s|\"Write a short haiku about autumn leaves:\"|\"$2\"|" -e "s|params.do_sample = True|params.do_sample = False|" \
      -e "s|params.max_length = 200|params.max_length = $3|" "$script"
  fi
  /usr/bin/python3 "$script"
}

if [ -d "$hf" ]; then
  for p in fp32 int4; do
    echo "== onnxllm build -i stories260K-hf -p $p"
    "$cli" build -i "$hf" -o "$models/stories260K-$p" -p "$p" --overwrite -q
  done
  echo "== tutorial.py, greedy from BOS (empty prompt), 200 tokens (fp32)"
  tutorial "$models/stories260K-fp32" "" 201 | tee "$models/greedy-fp32.txt"
  echo
  if [ "$(cat "$models/greedy-fp32.txt")" = "$(cat "$hf/expected_greedy_200.txt")" ]; then
    echo "== fp32 output equals expected_greedy_200.txt"
  else
    echo "== fp32 output DIFFERS from expected_greedy_200.txt"; exit 1
  fi
  echo "== tutorial.py, greedy from BOS, 200 tokens (int4, block 32)"
  tutorial "$models/stories260K-int4" "" 201
  echo
  echo "== tutorial.py as written: 'Write a short haiku about autumn leaves:', sampling (fp32, streamed)"
  tutorial "$models/stories260K-fp32"
  echo
else
  echo "../shared not found: building a random-weight Llama from a config, with a word-level tokenizer, instead"
  dir="$models/random-llama-int4"
  cat >"$models/random-llama-config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 172,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1,
 "eos_token_id": 2, "tie_word_embeddings": false}
JSON
  "$cli" build --config "$models/random-llama-config.json" --random-weights --seed 1 -o "$dir" -p int4 --overwrite -q
  /usr/bin/python3 "$root/scripts/word_level_tokenizer.py" "$dir" 512
  tutorial "$dir"
  echo
fi

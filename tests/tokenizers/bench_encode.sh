#!/usr/bin/env bash
# Encoding speed, one thread, onnxllm vs Hugging Face tokenizers (npm) on the same ~1 MB of mixed
# text (prose, code, CJK, Cyrillic, emoji, numbers), in one session. Not part of ctest.
# usage: tests/tokenizers/bench_encode.sh [BUILD_DIR]   (needs BUILD_DIR/bin/tokenizer_bench, BUILD_DIR/oracle)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
text="$build/tokenizer-bench.txt"
/usr/bin/python3 - "$text" "$root/../shared/tokenizers/test-strings.json" "$root/tests/tokenizers/extra-strings.json" <<'PY'
import json, os, random, sys
random.seed(7)
parts = []
for p in sys.argv[2:]:
    if os.path.exists(p):
        parts += [s for s in json.load(open(p, encoding="utf-8")) if s]
prose = ("The committee met on Tuesday to discuss the budget for 2025; after a long debate, it approved "
         "$1,250,000 for research, 30% more than last year. ")
code = "for (int i = 0; i < n; ++i) {\n    total += values[i] * weights[i];\n}\n"
cjk = "自然语言处理是人工智能的一个分支。東京は日本の首都です。한국어 문장도 있습니다. "
ru = "Быстрая коричневая лиса прыгает через ленивую собаку. "
chunks = parts + [prose] * 8 + [code] * 3 + [cjk] * 2 + [ru] * 2
out = []
size = 0
while size < 1_000_000:
    s = random.choice(chunks) + random.choice([" ", "\n", "  ", "\n\n"])
    out.append(s)
    size += len(s.encode("utf-8"))
open(sys.argv[1], "w", encoding="utf-8").write("".join(out))
PY
printf '%-16s %12s %12s %10s %10s\n' tokenizer onnxllm_ms hf_ms onnxllm_ids hf_ids
for dir in "$root/../shared/tokenizers/gpt2-bytelevel" "$root/../shared/tokenizers/phi-3" \
           "$build/tokenizers-extra/llama3" "$build/tokenizers-extra/qwen3" "$build/tokenizers-extra/gemma3"; do
  [ -f "$dir/tokenizer.json" ] || continue
  ours=$(taskset -c 0 "$build/bin/tokenizer_bench" "$dir" "$text")
  hf=$(NODE_PATH="$build/oracle/node_modules" RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 0 node "$root/tests/tokenizers/bench_hf.js" "$dir/tokenizer.json" "$text")
  printf '%-16s %12s %12s %10s %10s\n' "$(basename "$dir")" "${ours% *}" "${hf% *}" "${ours#* }" "${hf#* }"
done

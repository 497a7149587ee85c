#!/usr/bin/env bash
# Installs the reference implementations from ../shared/tools/oracle (npm registry only) into
# $1 (default build/oracle). Differential tests skip with a message when this is not possible.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/build/oracle}"
src="$root/../shared/tools/oracle"
if [ ! -d "$src" ]; then echo "setup_oracle: $src not found; differential tests will skip"; exit 0; fi
if ! command -v npm >/dev/null; then echo "setup_oracle: npm not found; differential tests will skip"; exit 0; fi
mkdir -p "$dest"
# The official OpenAI client, for the server tests (tests/python/test_server.py), in its own folder.
openai_version=7.60.0
if [ ! -f "$dest/openai/.installed-$openai_version" ]; then
  mkdir -p "$dest/openai" && rm -f "$dest"/openai/.installed-*
  if (cd "$dest/openai" && echo '{"name": "onnxllm-openai-client", "private": true}' > package.json &&
      npm install --ignore-scripts --no-audit --no-fund "openai@$openai_version" >npm-install.log 2>&1); then
    touch "$dest/openai/.installed-$openai_version"
  else
    echo "setup_oracle: npm install openai failed (see $dest/openai/npm-install.log); the OpenAI client test will skip"
  fi
fi
# The scripts are copied every time (cheap); npm runs only when the package list changed.
if [ -f "$dest/.installed" ] && cmp -s "$src/package.json" "$dest/package.json"; then
  cp -f "$src"/*.js "$src"/*.mjs "$src"/*.py "$dest"/ 2>/dev/null
  exit 0
fi
rm -f "$dest/.installed"
cp -rf "$src"/. "$dest"/
cd "$dest"
if npm install --ignore-scripts --no-audit --no-fund >npm-install.log 2>&1; then
  touch .installed
else
  echo "setup_oracle: npm install failed (see $dest/npm-install.log); differential tests will skip"
fi
exit 0

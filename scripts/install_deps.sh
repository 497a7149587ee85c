#!/usr/bin/env bash
# Installs the Debian packages onnxllm needs (idempotent; run as root on Debian 12).
#   scripts/install_deps.sh          what `make`, `make test` and `make run` need
#   scripts/install_deps.sh --fuzz   also clang and its sanitizer runtime for the fuzz targets
#   scripts/install_deps.sh --neon   also the aarch64 cross compiler and qemu-user (make test-neon)
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev libicu-dev
  libcpp-httplib-dev libssl-dev  # onnxllm pull: HTTP(S) client (built with OpenSSL), sha256 (libcrypto)
  python3 python3-numpy python3-onnx python3-pytest python3-sentencepiece python3-pybind11 pybind11-dev
  python3-jinja2  # chat-template oracle: the engine transformers renders with
  python3-jsonschema  # guidance tests: the reference validator of the JSON replies
  python3-dev python3-setuptools python3-wheel python3-pip python3-venv  # the Python package, pip install .
  ccache
)
if [ "${1:-}" = "--fuzz" ]; then packages+=(clang lld libclang-rt-14-dev); fi
if [ "${1:-}" = "--neon" ]; then
  packages+=(g++-aarch64-linux-gnu)
  # Either qemu package runs the tests (the toolchain file looks for both names).
  command -v qemu-aarch64 >/dev/null 2>&1 || command -v qemu-aarch64-static >/dev/null 2>&1 || packages+=(qemu-user)
fi
# Node.js runs the ONNX Runtime / tokenizers / jinja oracles. Machines that already carry a
# Node.js from another source (nodesource bundles npm) must not get Debian's npm: the two conflict.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

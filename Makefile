# Front end: `make` builds into build/, `make test` installs what is missing, builds and runs the
# whole suite through ctest, `make run` runs the main job.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache when installed (a warm cache makes a fresh build mostly hits).
CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
# Paths relative to the checkout, so that clones elsewhere share the cache.
export CCACHE_BASEDIR ?= $(CURDIR)
endif

.PHONY: all build deps configure test run oracle llamacpp clean fuzz bench pip-test asan test-neon

all: build

deps:
	@scripts/install_deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

oracle:
	@scripts/setup_oracle.sh $(BUILD)/oracle

# llama.cpp (node-llama-cpp's prebuilt CPU binary, npm registry only) in $(BUILD)/llamacpp, for the
# GGUF tests (python_gguf) and benchmarks/compare.py; needs ../shared/tools/llamacpp.
llamacpp:
	@test -d ../shared/tools/llamacpp || { echo "../shared/tools/llamacpp not found"; exit 1; }
	mkdir -p $(BUILD)/llamacpp && cp ../shared/tools/llamacpp/* $(BUILD)/llamacpp/
	cd $(BUILD)/llamacpp && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund

test: deps
	$(MAKE) build oracle
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Only what the main job needs (the CLI, libonnxllm.so and the Python package), not the tests.
run: deps
	$(MAKE) configure
	ninja -C $(BUILD) -j $(JOBS) main_job
	scripts/run_main_job.sh $(BUILD)

# aarch64: the CPU kernels and the tests comparing each with its scalar reference (ONNXLLM_KERNELS_ONLY:
# no arm64 protobuf/ONNX needed), cross-built with Debian's g++-aarch64-linux-gnu in build-aarch64 and
# run by ctest under qemu-user (cmake/aarch64-linux-gnu.cmake). Not part of `make test`.
NEON_BUILD ?= build-aarch64
test-neon:
	@scripts/install_deps.sh --neon
	cmake -S . -B $(NEON_BUILD) -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DONNXLLM_KERNELS_ONLY=ON $(CMAKE_FLAGS)
	ninja -C $(NEON_BUILD) -j $(JOBS)
	ctest --test-dir $(NEON_BUILD) --output-on-failure -j $(JOBS)

# `pip install .` from a clean copy of the sources into a fresh venv, then a generation check;
# not part of `make test` (it builds everything again: minutes even with a warm ccache).
pip-test: configure
	ninja -C $(BUILD) -j $(JOBS) onnxllm
	ONNXLLM_CLI=$(abspath $(BUILD))/bin/onnxllm ONNXLLM_SHARED_DIR=$(abspath ../shared) \
	  CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) tests/python/pip_install_test.sh $(abspath $(BUILD))/pip-test

# Benchmarks (google-benchmark), not part of `make test`.
bench: configure oracle
	ninja -C $(BUILD) bench_matmul_nbits bench_attention bench_moe bench_thread_pool bench_sampler bench_stream_compute tokenizer_bench
	$(BUILD)/bin/bench_thread_pool
	$(BUILD)/bin/bench_matmul_nbits
	$(BUILD)/bin/bench_stream_compute
	$(BUILD)/bin/bench_attention
	$(BUILD)/bin/bench_moe
	$(BUILD)/bin/bench_sampler
	tests/tokenizers/bench_encode.sh $(BUILD)

# libFuzzer targets (clang, ASan+UBSan) in build-fuzz; each runs FUZZ_SECONDS, starting from its
# corpus in build-fuzz/corpus and the committed seeds in fuzz/seeds/<name>, with fuzz/<name>.dict
# when there is one. Not part of `make test`.
FUZZ_SECONDS ?= 600
FUZZERS ?= model_loader_fuzzer tokenizer_fuzzer chat_template_fuzzer config_fuzzer safetensors_fuzzer gguf_fuzzer cli_parse_fuzzer openai_request_fuzzer json_schema_fuzzer lark_grammar_fuzzer
fuzz:
	@scripts/install_deps.sh --fuzz
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DONNXLLM_BUILD_FUZZERS=ON -DONNXLLM_BUILD_TESTS=OFF
	ninja -C build-fuzz -j $(JOBS) $(FUZZERS)
	for f in $(FUZZERS); do mkdir -p build-fuzz/corpus/$$f && \
	  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0 build-fuzz/bin/$$f build-fuzz/corpus/$$f \
	    $$(test -d fuzz/seeds/$$f && echo fuzz/seeds/$$f) \
	    $$(test -f fuzz/$$f.dict && echo -dict=fuzz/$$f.dict) \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=20 || exit 1; done

# The whole test suite built with AddressSanitizer + UBSan (GCC) in build-asan and run by ctest;
# any sanitizer report fails its test. Tests of the oracles reuse build/oracle when it exists.
ASAN_BUILD ?= build-asan
asan:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DONNXLLM_ENABLE_ASAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	ninja -C $(ASAN_BUILD) -j $(JOBS)
	if [ -d $(BUILD)/oracle ] && [ ! -e $(ASAN_BUILD)/oracle ]; then cp -a $(BUILD)/oracle $(ASAN_BUILD)/; fi
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

clean:
	rm -rf $(BUILD)

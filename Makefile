# Front end: `make` builds into build/, `make test` installs what is missing, builds and runs the
# whole suite through ctest, `make run` runs the main job.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps configure test run oracle clean fuzz

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

test: deps
	$(MAKE) build oracle
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

run: deps
	$(MAKE) build
	scripts/run_main_job.sh $(BUILD)

clean:
	rm -rf $(BUILD)

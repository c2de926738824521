# Thin wrapper over CMake; these targets are the README's commands.
#   make               build into build/
#   make test          install missing Debian packages, build, run the whole test suite
#   make demo          build and run the main job: a checked all_reduce_perf over 4 ranks
#   make install PREFIX=dir
#   make compare       ours vs Open MPI vs Gloo, one run (bench/README.md)
#   make bench-train   the training table (docs/training.md)
#   make fuzz / make sanitize   the fuzz targets / the suites under ASan+UBSan and TSan
BUILD ?= build
PREFIX ?= $(CURDIR)/install
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build configure test demo install deps clean compare bench-train fuzz sanitize

all: build

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: $(BUILD)/Makefile

build: configure
	cmake --build $(BUILD) -j $(JOBS)

deps:
	./scripts/deps.sh

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure --timeout 600 -j 2

demo: deps
	$(MAKE) build
	./scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(abspath $(PREFIX))

compare: deps
	$(MAKE) build
	./bench/compare.sh --build $(BUILD)

bench-train: deps
	./scripts/deps.sh libopenblas0-serial
	$(MAKE) build
	/usr/bin/python3 bench/train/train_bench.py --build $(BUILD)

fuzz:
	./tests/fuzz/run.sh $(FUZZ_SECONDS)

sanitize: deps
	./scripts/sanitize.sh

clean:
	rm -rf $(BUILD)

# Thin wrapper over CMake; these targets are the README's commands.
#   make               build into build/
#   make test          install missing Debian packages, build, run the whole test suite
#   make demo          build and run the main job: a checked all_reduce_perf over 4 ranks
#   make install PREFIX=dir
BUILD ?= build
PREFIX ?= $(CURDIR)/install
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build configure test demo install deps clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

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

clean:
	rm -rf $(BUILD)

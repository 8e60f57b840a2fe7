# Convenience wrapper around CMake. `make demo` and `make test` do everything on
# a fresh Debian machine (they install missing build dependencies when run as root).
BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKEOPT ?=
DEPS      = cmake gcc make pkg-config protobuf-c-compiler libprotobuf-c-dev libcjson-dev \
            libcmocka-dev libopenblas-dev libdnnl-dev clang libonnx-dev libonnx-testdata nettle-dev libyaml-dev libpng-dev libjpeg-dev \
            python3-numpy python3-pytest python3-venv python3-pip python3-setuptools graphviz libgraphviz-dev

.PHONY: all deps configure build demo test test-asan test-ubsan-clang build-release fuzz bench install clean python

all: build

deps:
	@sh tools/install-deps.sh $(DEPS)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKEOPT) >/dev/null

# leaves ./mil, a link to build/mil (the README's examples call `mil`)
build: configure
	@cmake --build $(BUILD) -j $(JOBS)
	@if [ "$(BUILD)" = build ]; then ln -sfn build/mil mil; fi

demo: build
	@sh examples/demo.sh $(BUILD)/mil

# ends with "N passed, N failed, N skipped" (and why tests were skipped);
# the exit status is ctest's
test: build
	@cd $(BUILD) && { ctest --output-on-failure -j $(JOBS); echo $$? >ctest-status.txt; } 2>&1 | tee ctest-output.txt; \
	  sh "$(CURDIR)/tools/test-summary.sh" "$$(cat ctest-status.txt 2>/dev/null || echo 1)" ctest-output.txt \
	    Testing/Temporary/LastTest.log

test-asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan CMAKEOPT="-DMIL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# Release builds (-O3) with gcc and clang: compile only (CI runs them to keep
# every build type warning-free under -Werror).
build-release: deps
	@for cc in gcc clang; do \
	  cmake -S . -B build-release-$$cc -DCMAKE_C_COMPILER=$$cc -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1; \
	  cmake --build build-release-$$cc -j $(JOBS) >build-release-$$cc/build.log 2>&1 || \
	    { grep -B2 -A6 -E 'error|warning' build-release-$$cc/build.log | head -60; exit 1; }; \
	  echo "Release build with $$cc: ok"; \
	done

# clang's UndefinedBehaviorSanitizer over the whole suite (clang flags some
# undefined behaviour gcc's does not, e.g. a zero offset applied to NULL)
test-ubsan-clang:
	@$(MAKE) --no-print-directory test BUILD=build-ubsan CMAKEOPT="-DCMAKE_C_COMPILER=clang -DMIL_UBSAN=ON"

fuzz: deps
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DMIL_FUZZ=ON -DMIL_BUILD_TESTS=OFF >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	@sh fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	@sh bench/run.sh $(BUILD)

# The Python package: builds libmil.so and puts it inside python/libmil/_lib/,
# so that `pip install ./python` installs a package that needs no compiler.
python: build
	@mkdir -p python/libmil/_lib
	@cp $$(readlink -f $(BUILD)/libmil.so) python/libmil/_lib/libmil.so
	@echo "python/libmil/_lib/libmil.so ready: pip install ./python"

install: build
	@cmake --install $(BUILD)

clean:
	rm -f mil
	rm -rf build build-asan build-ubsan build-fuzz build-release-gcc build-release-clang

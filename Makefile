# swift-httpdns: `make demo` runs the main job, `make test` the tests (see README.md).
SWIFT ?= swift
# Warnings are errors in every build the project makes (Swift 6 mode, strict concurrency).
SWIFT_FLAGS ?= -Xswiftc -warnings-as-errors
TEST_FLAGS ?= --disable-swift-testing

.PHONY: all deps build test test-tsan demo bench clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build $(TEST_FLAGS)

# The same suite under ThreadSanitizer, in its own build directory so the normal build stays warm.
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan $(TEST_FLAGS)

demo: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product httpdns
	$(SWIFT) build $(SWIFT_FLAGS) --product httpdns-demo
	$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/httpdns-demo

# What protection costs against same-run baselines; BENCH_ARGS="--quick", "--only 1,4", "--json FILE".
bench: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product httpdns-bench
	$$($(SWIFT) build -c release --show-bin-path)/httpdns-bench $(BENCH_ARGS)

clean:
	rm -rf .build .build-tsan

# swift-httpdns: `make demo` runs the main job, `make test` the tests (see README.md).
SWIFT ?= swift
# Warnings are errors in every build the project makes (Swift 6 mode, strict concurrency).
SWIFT_FLAGS ?= -Xswiftc -warnings-as-errors
TEST_FLAGS ?= --disable-swift-testing

.PHONY: all deps build build-tests build-release build-tsan build-asan test test-release test-tsan test-asan fuzz fuzz-smoke fuzz-build examples docs api api-check demo bench man install build-install uninstall deb clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

# The README's Swift examples are a package of their own (Examples/), built first: the tests check the
# README shows them verbatim and run them.
#
# The suite runs through scripts/run-tests.py: its test classes in TEST_JOBS processes at once (the
# suite mostly waits on loopback servers and deadlines), each leg naming its 20 slowest tests at the
# end; TEST_FILTER='Stub|Fleet' picks classes (a regular expression over Module.Class).
TEST_JOBS ?= 3
TEST_FILTER ?=
RUN_TESTS = scripts/run-tests.py --jobs $(TEST_JOBS) $(if $(TEST_FILTER),--filter '$(TEST_FILTER)')

# TEST_BUILDS: the builds the suite needs besides its own; `build-install` is the static binary
# PackageInstallTests packages, built first so that no compile runs beside timing tests. CI builds it
# in the background instead (TEST_BUILDS=, in .ci/run), from the start, and the test waits for it.
TEST_BUILDS ?= build-install
test: deps examples docs api-check build-tests $(TEST_BUILDS)
	$(RUN_TESTS) --build-path .build/debug --label test

build-tests: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)

# A kept Examples/.build can miss files the parent package gained since (SwiftPM's path-dependency
# cache); one clean rebuild then settles it. A fresh clone builds at the first try.
examples:
	$(SWIFT) build --package-path Examples $(SWIFT_FLAGS) || \
	  (rm -rf Examples/.build && $(SWIFT) build --package-path Examples $(SWIFT_FLAGS))

# DocC archives of the products; DocC warnings fail the build (and so `make test`).
docs: deps
	scripts/docs.sh

# The public API, recorded in api/public-api.txt: `make api` after a deliberate change, and
# `make api-check` (part of `make test`) fails when the API and the record differ.
api: deps
	scripts/public-api.py "$$(scripts/symbol-graphs.sh)" --write

api-check: deps
	scripts/public-api.py "$$(scripts/symbol-graphs.sh)" --check

# The URL protocol's corelibs check in an optimised build (issue 21): a release build may lay out or
# strip what a debug build keeps, so the install check, its stand-ins and the reflection it relies on
# run there too (-enable-testing only because other test targets use @testable; the checked module
# itself is optimised as a user's release build is).
RELEASE_TESTS ?= CorelibsInstallCheckTests|CorelibsReflectionTests|TaskDelegateTests|URLSessionParityTests
test-release: build-release
	scripts/run-tests.py --jobs $(TEST_JOBS) --build-path .build-release/release --label test-release --filter '\.($(RELEASE_TESTS))$$'

build-release: deps
	$(SWIFT) build -c release --build-tests --scratch-path .build-release -Xswiftc -enable-testing $(SWIFT_FLAGS)

# The suite under ThreadSanitizer, in its own build directory so the normal build stays warm. The
# classes Tests/sanitizer-classes.txt records as value-only (one thread, no process, no socket) are
# left to the plain leg; every class that runs concurrent code runs here (CONTRIBUTING.md).
test-tsan: examples build-tsan
	$(RUN_TESTS) --build-path .build-tsan/debug --sanitizer thread --label test-tsan

build-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan $(SWIFT_FLAGS)

# The same under AddressSanitizer, in its own build directory too. Memory errors only: with
# LeakSanitizer on, XCTest's own objects, tasks left suspended at exit and the tools the tests run
# (built with ASan too, exiting 1 on a report) make the leg fail on leaks it is not about. No
# suppressions: nothing the suite runs launches through Foundation's Process (whose /proc/self/fd
# scan over-reads, swift-corelibs-foundation issue 5472); tests and the demo use posix_spawn.
test-asan: examples build-asan
	$(RUN_TESTS) --build-path .build-asan/debug --sanitizer address --label test-asan

build-asan: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan $(SWIFT_FLAGS)

# libFuzzer + AddressSanitizer on every parser and hostile boundary (Fuzz/fuzz.sh, .build-fuzz):
# FUZZ_TIME seconds per target (default 60); FUZZ_TARGETS="dns-codec json" picks some; FUZZ_JOBS
# targets at once (default 2: one per core, each fuzzer is one process on one core).
FUZZ_TIME ?= 60
FUZZ_JOBS ?= 2
fuzz: deps
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_TARGETS="$(FUZZ_TARGETS)" Fuzz/fuzz.sh

# The short pass CI runs: 10 s per target.
fuzz-smoke: deps
	FUZZ_TIME=10 FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_TARGETS="$(FUZZ_TARGETS)" Fuzz/fuzz.sh

fuzz-build: deps
	FUZZ_BUILD_ONLY=1 Fuzz/fuzz.sh

demo: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product httpdns
	$(SWIFT) build $(SWIFT_FLAGS) --product httpdns-demo
	$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/httpdns-demo

# What protection costs against same-run baselines; BENCH_ARGS="--quick", "--only 1,4", "--json FILE".
bench:
	@scripts/ensure-deps.sh --bench
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product httpdns-bench
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product httpdns
	$$($(SWIFT) build -c release --show-bin-path)/httpdns-bench $(BENCH_ARGS)

# The man pages (man/*.md through pandoc) into .build/man, from the debug build's option table;
# mandoc -T lint must find nothing. `man -l .build/man/httpdns-serve.8` reads one.
man: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product httpdns
	HTTPDNS=$$($(SWIFT) build --show-bin-path)/httpdns scripts/build-man.sh

# The binary (a release build with the Swift runtime linked in, in .build-install), the man pages,
# the systemd units and the example configuration, under DESTDIR at PREFIX (scripts/install.sh).
PREFIX ?= /usr/local
install: deps
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install.sh

# That binary alone: `make test` builds it before the suite (several minutes the first time), so
# that PackageInstallTests packages it without compiling beside timing tests.
build-install: deps
	scripts/install.sh --build

uninstall:
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install.sh --uninstall

# A Debian package of the same (scripts/build-deb.sh): .build-install/httpdns_VERSION_ARCH.deb,
# checked by lintian.
deb: deps
	scripts/build-deb.sh

clean:
	rm -rf .build .build-release .build-tsan .build-asan .build-fuzz .build-docs .build-install Examples/.build

# Concord — the README's two commands are `make demo` and `make test`.
SWIFT ?= swift
SYSTEM_PACKAGES := libsqlite3-dev libsodium-dev pkg-config
# The real storage servers the HTTP backends' tests start on loopback.
SERVER_PACKAGES := apache2 nginx libnginx-mod-http-dav-ext rclone python3-pip \
  ceph-mon ceph-osd radosgw ceph-common
# Schedules for the long runs (the PR-sized counts live in the tests themselves).
SOAK_SCHEDULES ?= 50000
# Faulty sync schedules per WebDAV and S3 server in `make soak`.
SOAK_HTTP_SCHEDULES ?= 500

.PHONY: all deps servers build demo test test-swift docs proofs proofs-extended bench bench-backends soak fuzz clean

all: build

# System libraries the package links (installed only when missing).
deps:
	@scripts/ensure-packages.sh $(SYSTEM_PACKAGES)

build: deps
	$(SWIFT) build

# Three replicas (laptop, phone, tablet) converging through an encrypted folder remote.
demo: deps
	$(SWIFT) build --product concord
	$(SWIFT) run --skip-build concord demo

# Every test, the documentation, then the proofs.
test: test-swift docs proofs

# Storage servers for the WebDAV and S3 tests (installed only when missing).
servers:
	@scripts/ensure-packages.sh $(SERVER_PACKAGES)
	@scripts/ensure-moto.sh

# The build fails on a compiler warning in the project's own code (scripts/build-tests.sh).
test-swift: deps servers
	SWIFT=$(SWIFT) scripts/build-tests.sh
	$(SWIFT) test --skip-build --parallel

# The DocC documentation of the Concord module: Sources/Concord/Concord.docc and the
# snippets in Snippets/, compiled and run (scripts/build-docs.sh). Fails on any warning.
docs: deps
	SWIFT=$(SWIFT) scripts/build-docs.sh

# Coq proofs and the Spin model (installs coq and spin when missing).
proofs:
	@if [ -f Proofs/Makefile ]; then $(MAKE) -C Proofs; else echo "no proofs yet"; fi

# The Spin model's slower runs and non-vacuity probes (minutes; not part of `make test`).
proofs-extended:
	$(MAKE) -C Proofs spin-extended

# package-benchmark suite, release build (see Benchmarks/README.md).
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

# The same sync workloads on the folder and on every WebDAV and S3 server of the tests
# (release build; see Benchmarks/README.md, "Backends"), with the servers' data and the
# stores on tmpfs, then on the disk.
BENCH_FILE_MIB ?= 1024
bench-backends: deps servers
	cd Benchmarks && $(SWIFT) build -c release --product BackendBenchmark
	TMPDIR=/dev/shm Benchmarks/.build/release/BackendBenchmark --file-mib $(BENCH_FILE_MIB)
	TMPDIR=$${TMPDIR:-/tmp} Benchmarks/.build/release/BackendBenchmark --file-mib $(BENCH_FILE_MIB)

# Long convergence runs (release build): SOAK_SCHEDULES simulator schedules, then as many
# faulty sync schedules through a folder remote, then SOAK_HTTP_SCHEDULES through each
# WebDAV and S3 server. Hours, not minutes.
soak: deps servers
	CONCORD_SCHEDULES=$(SOAK_SCHEDULES) $(SWIFT) test -c release --filter ConvergenceTests
	CONCORD_SYNC_SCHEDULES=$(SOAK_SCHEDULES) $(SWIFT) test -c release --filter ConcordSyncTests.SyncFuzzTests
	CONCORD_HTTP_SCHEDULES=$(SOAK_HTTP_SCHEDULES) $(SWIFT) test -c release --filter HTTPSyncFuzzTests

# libFuzzer, address sanitizer on, on every parser of bytes from outside (Fuzz/README.md):
# FUZZ_SECONDS per target; fails on any crash, sanitizer report, timeout or out-of-memory.
# Not part of `make test`.
FUZZ_SECONDS ?= 60
fuzz: deps
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

clean:
	rm -rf .build Benchmarks/.build Fuzz/.build-fuzz
	@if [ -f Proofs/Makefile ]; then $(MAKE) -C Proofs clean; fi

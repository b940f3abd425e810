# Concord — the README's two commands are `make demo` and `make test`.
SWIFT ?= swift
SYSTEM_PACKAGES := libsqlite3-dev libsodium-dev pkg-config
# The real storage servers the HTTP backends' tests start on loopback, and libfaketime for
# the CLI tests of devices whose clocks read far in the future.
SERVER_PACKAGES := apache2 nginx libnginx-mod-http-dav-ext rclone python3-pip \
  ceph-mon ceph-osd radosgw ceph-common faketime
# Schedules for the long runs (the PR-sized counts live in the tests themselves).
SOAK_SCHEDULES ?= 50000
# Faulty sync schedules per WebDAV and S3 server in `make soak`.
SOAK_HTTP_SCHEDULES ?= 500
# Faulty schedules of three live replicas joined by the LAN peer channel in `make soak`
# (real sockets and time: about a second each; `make test` runs 2).
SOAK_PEER_SCHEDULES ?= 300

.PHONY: all deps servers build demo test test-swift docs crash-enum powercut-mutants proofs proofs-extended bench bench-backends bench-peers bench-scale soak soak-files fuzz clean

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

# Every test, then the documentation and the proofs side by side (each is one process most
# of the time on a 2-core machine; their output is kept whole, one target after the other).
test: test-swift
	@$(MAKE) --no-print-directory -j 2 --output-sync=target docs proofs

# Storage servers for the WebDAV and S3 tests (installed only when missing).
servers:
	@scripts/ensure-packages.sh $(SERVER_PACKAGES)
	@scripts/ensure-moto.sh

# The build fails on a compiler warning in the project's own code (scripts/build-tests.sh).
# At most TEST_WIDTH tests run at once: started all together, hundreds of tests share two
# cores and each of the first wave takes minutes, past the waits and limits of the tests that
# observe live behaviour.
TEST_WIDTH ?= 20
test-swift: deps servers
	SWIFT=$(SWIFT) scripts/build-tests.sh
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) $(SWIFT) test --skip-build --parallel

# The crash and error enumeration in full: the crash child killed at every I/O call (write,
# pwrite64, fsync, fdatasync, rename, unlink; renameat, unlinkat) of a 60-step local workload
# and of four sync workloads (push, pull, snapshot, compaction) in turn, then ENOSPC and EIO
# returned by each of their writes and syncs, then its power cut (what was not fsynced
# dropped) at each of those calls, exports included (make test: 20 local steps, every fourth
# call and every fifteenth fault; the sync workloads every third call and every fifth fault;
# power cuts at every sync and rename, every eighth write and unlink).
crash-enum: deps servers
	SWIFT=$(SWIFT) scripts/build-tests.sh
	CONCORD_CRASH_ENUM_STEPS=$${CONCORD_CRASH_ENUM_STEPS:-60} CONCORD_CRASH_ENUM_STRIDE=1 CONCORD_ERROR_ENUM_STRIDE=1 \
	  CONCORD_SYNC_ENUM_STRIDE=1 CONCORD_SYNC_ERROR_STRIDE=1 CONCORD_POWERCUT_WRITE_STRIDE=1 \
	  $(SWIFT) test --skip-build --filter 'aKillAtEveryIOCall|aFullOrFailingDiskAtEveryWriteAndSync|aPowerCut'

# Mutation check of the power-cut enumeration (not part of `make test`; half an hour or so): one at
# a time, each fsync, fdatasync and folder fsync of the blob store, the folder remote and the
# store's SQLite settings is removed, the crash child rebuilt and the power-cut tests run; every
# mutant must fail them. POWERCUT_MUTANTS_KILL=1 also runs the kill enumeration on each (it
# passes: a kill keeps the page cache). Sources are restored afterwards
# (scripts/powercut-mutants.sh; `scripts/powercut-mutants.sh ID …` for some).
powercut-mutants: deps
	SWIFT=$(SWIFT) scripts/powercut-mutants.sh

# The DocC documentation, one combined archive: the articles of Sources/Concord/Concord.docc
# with the snippets in Snippets/, compiled and run, and the API reference of the modules
# `import Concord` brings in, of ConcordWebDAV, ConcordS3 and ConcordHTTP, and of the test
# kit ConcordTesting, each main type's members grouped by task (the catalogs
# Sources/<module>/<module>.docc). Fails on any warning, so on a broken symbol link, and if
# the pages of Store, StoredRecord, SyncEngine, AutoSync or Remote, or a module's page and
# its groups, are missing (scripts/build-docs.sh).
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

# Concord's core workloads beside Loro and Yrs in one run, one process per system and
# workload, and the ratios, with the durable store's apply, whole-state read and snapshot
# join beside them (see Benchmarks/README.md, "Peers"). The peers run through their
# Python packages, pinned in Benchmarks/Peers/requirements.txt and installed into a virtual
# environment made here (Benchmarks/Peers/.venv, git-ignored); Concord through PeersConcord,
# a release build. PEERS_REPEATS timed runs per workload (the median is reported);
# PEERS_VALUES=unique writes a distinct string into every string field (default: recycled).
PYTHON ?= python3
PEERS_VENV := Benchmarks/Peers/.venv
PEERS_REPEATS ?= 7
PEERS_VALUES ?= recycled
bench-peers: deps $(PEERS_VENV)/.installed
	cd Benchmarks && $(SWIFT) build -c release --product PeersConcord
	SWIFT=$(SWIFT) $(PEERS_VENV)/bin/python Benchmarks/Peers/peers.py \
	  --concord Benchmarks/.build/release/PeersConcord --repeats $(PEERS_REPEATS) --values $(PEERS_VALUES)

$(PEERS_VENV)/.installed: Benchmarks/Peers/requirements.txt
	@scripts/ensure-packages.sh python3 python3-venv
	@$(PEERS_VENV)/bin/python -m pip --version >/dev/null 2>&1 || { rm -rf $(PEERS_VENV) && $(PYTHON) -m venv $(PEERS_VENV); }
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r Benchmarks/Peers/requirements.txt
	@touch $@

# Long convergence runs (release build): SOAK_SCHEDULES simulator schedules, then as many
# faulty sync schedules through a folder remote (and a tenth as many of a shared store with
# members, removals and rotations), then SOAK_HTTP_SCHEDULES through each
# WebDAV and S3 server, then SOAK_PEER_SCHEDULES with peers. Hours, not minutes.
soak: deps servers
	CONCORD_SCHEDULES=$(SOAK_SCHEDULES) $(SWIFT) test -c release --filter ConvergenceTests
	CONCORD_SYNC_SCHEDULES=$(SOAK_SCHEDULES) $(SWIFT) test -c release --filter ConcordSyncTests.SyncFuzzTests
	CONCORD_HTTP_SCHEDULES=$(SOAK_HTTP_SCHEDULES) $(SWIFT) test -c release --filter HTTPSyncFuzzTests
	CONCORD_PEER_SCHEDULES=$(SOAK_PEER_SCHEDULES) $(SWIFT) test -c release --filter PeerFuzzTests

# Bootstrap at scale: a new replica joins a snapshot of SCALE_RECORDS (1,000,000) records
# × 10 fields, against raw SQLite inserting the same rows; on tmpfs and on disk
# (scripts/bench-scale.sh, Benchmarks/README.md "Scale").
bench-scale: deps
	SWIFT=$(SWIFT) scripts/bench-scale.sh

# libFuzzer, address sanitizer on, on every parser of bytes from outside (Fuzz/README.md):
# FUZZ_SECONDS per target; fails on any crash, sanitizer report, timeout or out-of-memory.
# Not part of `make test`.
FUZZ_SECONDS ?= 60
fuzz: deps
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

clean:
	rm -rf .build Benchmarks/.build Fuzz/.build-fuzz Fuzz/.build-fuzz-runs
	@if [ -f Proofs/Makefile ]; then $(MAKE) -C Proofs clean; fi

# Files on demand at full size: a 2 GiB file read on demand stays under 64 MiB resident, and
# the end-to-end picture with 200 files of 1 to 64 MiB and a 100 MiB budget
# (Benchmarks/README.md, "Files on demand").
soak-files:
	swift build --build-tests -j 1
	CONCORD_SOAK_ONDEMAND_MIB=2048 swift test --skip-build --filter readingALargeFileOnDemandStaysInBoundedMemory
	CONCORD_ONDEMAND_FILES=200 CONCORD_ONDEMAND_MAX_MIB=64 swift test --skip-build --filter recordsFirstThenContentsWithinABudget

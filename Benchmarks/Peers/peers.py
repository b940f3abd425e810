#!/usr/bin/env python3
"""Concord's core workloads side by side with Loro and Yrs (`make bench-peers`).

Runs the same five workloads on the three systems in one run and prints the ratios: one
table per record layout of the peers (nested, roots), Concord's column the same in each.
Beside each, the durable store (Concord's Store, SQLite on disk in the work directory, no
encryption) on the same inputs: its apply of the 100k-op delta, its whole-state read and its
snapshot join, against the peers' in-memory figures.
Concord runs in its own Swift executable (PeersConcord, release build); Loro and Yrs run
through their Python packages (`loro`, `pycrdt`, pinned in requirements.txt). Every
measurement is a process of its own (this script, re-run as `child`, or PeersConcord), so
each peak resident set belongs to one system and one workload.

See Benchmarks/README.md, "Peers", for what each workload does on each system.

    peers.py --concord PATH [--repeats 7] [--layout nested roots] [--values recycled|unique]
             [--workdir DIR] [--json FILE]
    PEERS_LAYOUT=nested|roots PEERS_VALUES=recycled|unique peers.py child loro|yrs prepare DIR
    PEERS_LAYOUT=nested|roots PEERS_VALUES=recycled|unique peers.py child loro|yrs \
        idle|merge|merge-incremental|snapshot|load-read DIR REPEATS
"""

import argparse
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

RECORDS = 10_000
FIELDS = 10
OPERATIONS = RECORDS * FIELDS
# The 1% delta: every field of every 100th record (item0, item100, …, item9900).
INCREMENTAL_RECORDS = list(range(0, RECORDS, 100))
# Loro peer ids and Yrs client ids of the three replicas: A writes the base state, B the
# deltas, C holds the base state and merges them.
A, B, C = 1, 2, 3
WORKLOADS = ["idle", "merge", "merge-incremental", "snapshot", "load-read"]
# The durable store's workloads (PeersConcord only), each run right after the in-memory
# workload it stands beside.
STORE_WORKLOADS = {"merge": ["store-merge"], "load-read": ["store-load-read", "store-join"]}
SYSTEMS = ["concord", "loro", "yrs"]
# The string values: "recycled" (the default) is ConcordTesting.Workload.value's, 1,000
# distinct strings per round; "unique" writes a string no other field, record or round has.
VALUES = os.environ.get("PEERS_VALUES", "recycled")
UNIQUE_DIGITS = "0123456789abcdefghijklmnopqrstuv"


def value(record, field, round_):
    """The value of `field` of `record` in `round_` (PeersConcord's `Values`): integers on
    even fields, short strings on odd ones — `v{record mod 1000}-{round}` (recycled), or
    "u" and six base-32 digits of a bijective 30-bit mix of (round, record, field) (unique)."""
    if field % 2 == 0:
        return record * 7 + field + round_
    if VALUES == "unique":
        x = (((round_ * RECORDS + record) * FIELDS + field) * 2654435761 + 0x9E3779B9) & ((1 << 30) - 1)
        digits = []
        for _ in range(6):
            digits.append(UNIQUE_DIGITS[x & 31])
            x >>= 5
        return "u" + "".join(digits)
    return f"v{record % 1000}-{round_}"


def key(record):
    return f"item{record}"


FIELD_NAMES = [f"field{f}" for f in range(FIELDS)]


# ---------------------------------------------------------------------------------------
# Measuring (in the children)


def peak_resident_kib():
    """VmHWM of this process: its own peak, which getrusage's ru_maxrss is not after exec
    (the kernel carries the parent's peak into it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def timed(body):
    """One timed call, with Python's cyclic collector off as timeit does."""
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    result = body()
    elapsed = time.perf_counter() - start
    gc.enable()
    return elapsed, result


def checksum_of(records):
    """(values, Σ integers, Σ over strings of Σ (position + 1) × byte), from
    {record id: {field: value}}: what PeersConcord computes from its read."""
    values = int_sum = string_hash = 0
    for fields in records.values():
        for v in fields.values():
            values += 1
            if isinstance(v, str):
                string_hash += sum((i + 1) * b for i, b in enumerate(v.encode()))
            else:
                if isinstance(v, float):  # Yrs numbers are doubles; ours are whole
                    assert v.is_integer()
                    v = int(v)
                int_sum += v
    return [values, int_sum, string_hash]


def expected_checksum(round_of_record):
    return checksum_of({
        key(r): {name: value(r, f, round_of_record(r)) for f, name in enumerate(FIELD_NAMES)}
        for r in range(RECORDS)
    })


def expected_checksums():
    incremental = set(INCREMENTAL_RECORDS)
    return {
        "base": expected_checksum(lambda r: 0),
        "merged": expected_checksum(lambda r: 1),
        "incremental": expected_checksum(lambda r: 2 if r in incremental else 0),
    }


# ---------------------------------------------------------------------------------------
# The peers. Each has the same three replicas and the same writes. A record is a map of its
# ten fields: with PEERS_LAYOUT=nested (the default) a map under its id in one top-level map
# named "items"; with PEERS_LAYOUT=roots a top-level map of its own named by its id (see
# README, "Peers").

LAYOUT = os.environ.get("PEERS_LAYOUT", "nested")


class Loro:
    name = "Loro"

    def __init__(self):
        import loro
        self.loro = loro

    def version(self):
        return f"Loro {self.loro.LORO_VERSION} (Python package loro {package_version('loro')})"

    def doc(self, peer, snapshot=None):
        doc = self.loro.LoroDoc()
        doc.peer_id = peer
        if snapshot is not None:
            doc.import_(snapshot)
        return doc

    def record(self, doc, r, create=False):
        if LAYOUT == "roots":
            return doc.get_map(key(r))
        items = doc.get_map("items")
        return items.insert_container(key(r), self.loro.LoroMap()) if create else items.get(key(r)).container

    def write(self, doc, records, round_, create):
        """Every field of each of `records`, one commit (Loro's transaction)."""
        for r in records:
            record = self.record(doc, r, create)
            for f, name in enumerate(FIELD_NAMES):
                record.insert(name, value(r, f, round_))
        doc.commit()

    def prepare(self):
        mode = self.loro.ExportMode
        a = self.doc(A)
        self.write(a, range(RECORDS), 0, create=True)
        base_snapshot = a.export(mode.Snapshot())
        files = {
            "base.delta": a.export(mode.Updates(from_=self.loro.VersionVector())),
            "base.snapshot": base_snapshot,
        }
        b = self.doc(B, base_snapshot)
        before = b.oplog_vv
        self.write(b, range(RECORDS), 1, create=False)
        files["full.delta"] = b.export(mode.Updates(from_=before))
        files["merged.snapshot"] = b.export(mode.Snapshot())
        extra = {"merged.shallow-snapshot": len(b.export(mode.ShallowSnapshot(b.oplog_frontiers)))}
        b2 = self.doc(B, base_snapshot)
        before = b2.oplog_vv
        self.write(b2, INCREMENTAL_RECORDS, 2, create=False)
        files["incremental.delta"] = b2.export(mode.Updates(from_=before))
        extra["base.shallow-snapshot"] = len(a.export(mode.ShallowSnapshot(a.oplog_frontiers)))
        return files, extra

    def load_state(self, doc):
        """Loro decodes an imported snapshot lazily, a container when it is first used. A
        replica that has the base state has it in memory, as Concord's and Yrs's do, so
        every record's map is used once (one field read) before the timer starts."""
        for r in range(RECORDS):
            self.record(doc, r).get(FIELD_NAMES[0])

    def merge(self, base_snapshot, delta):
        doc = self.doc(C, base_snapshot)
        self.load_state(doc)
        return doc, lambda: doc.import_(delta)

    def snapshot_state(self, base_delta):
        doc = self.doc(A)
        doc.import_(base_delta)
        self.load_state(doc)
        return doc, lambda: doc.export(self.loro.ExportMode.Snapshot())

    def load_read(self, snapshot):
        def body():
            return self.read(self.doc(C, snapshot))
        return body

    def read(self, doc):
        """Every value, as Python dicts: the whole document in one call."""
        value = doc.get_deep_value()
        return value if LAYOUT == "roots" else value["items"]


class Yrs:
    name = "Yrs"

    def __init__(self):
        import pycrdt
        self.pycrdt = pycrdt

    def version(self):
        return f"Yrs {yrs_version(self.pycrdt)} (Python package pycrdt {package_version('pycrdt')})"

    def doc(self, client, update=None):
        doc = self.pycrdt.Doc(client_id=client)
        if update is not None:
            doc.apply_update(update)
        return doc

    def record(self, doc, r, create=False):
        if LAYOUT == "roots":
            return doc.get(key(r), type=self.pycrdt.Map)
        items = doc.get("items", type=self.pycrdt.Map)
        if create:
            items[key(r)] = self.pycrdt.Map()
        return items[key(r)]

    def write(self, doc, records, round_, create):
        """Every field of each of `records`, one transaction."""
        with doc.transaction():
            for r in records:
                record = self.record(doc, r, create)
                for f, name in enumerate(FIELD_NAMES):
                    record[name] = value(r, f, round_)

    def prepare(self):
        a = self.doc(A)
        self.write(a, range(RECORDS), 0, create=True)
        # Yrs has no snapshot format of its own: a document's state is the update that takes
        # an empty document to it, which is also the base delta.
        base = a.get_update()
        files = {"base.delta": base, "base.snapshot": base}
        b = self.doc(B, base)
        before = b.get_state()
        self.write(b, range(RECORDS), 1, create=False)
        files["full.delta"] = b.get_update(before)
        files["merged.snapshot"] = b.get_update()
        b2 = self.doc(B, base)
        before = b2.get_state()
        self.write(b2, INCREMENTAL_RECORDS, 2, create=False)
        files["incremental.delta"] = b2.get_update(before)
        return files, {}

    def merge(self, base_snapshot, delta):
        doc = self.doc(C, base_snapshot)
        return doc, lambda: doc.apply_update(delta)

    def snapshot_state(self, base_delta):
        doc = self.doc(A, base_delta)
        return doc, lambda: doc.get_update()

    def load_read(self, snapshot):
        def body():
            return self.read(self.doc(C, snapshot))
        return body

    def read(self, doc):
        """Every value, as Python dicts: a map as JSON from Rust, parsed by Python's C json
        module, pycrdt's fastest whole read (Map.to_py walks the map in Python, about 6×
        slower). With one root map per record, one such read per root, in one transaction."""
        if LAYOUT == "roots":
            with doc.transaction():
                return {name: json.loads(str(doc.get(name, type=self.pycrdt.Map))) for name in doc.keys()}
        return json.loads(str(doc.get("items", type=self.pycrdt.Map)))


PEERS = {"loro": Loro, "yrs": Yrs}


def package_version(name):
    from importlib.metadata import version
    return version(name)


def yrs_version(pycrdt):
    """The Yrs crate compiled into pycrdt's extension (its path in the build's cargo
    registry is in the binary's panic messages); pycrdt does not report it."""
    extension = pycrdt._pycrdt.__file__
    with open(extension, "rb") as binary:
        found = set(re.findall(rb"[/\\]yrs-(\d+\.\d+\.\d+)[/\\]", binary.read()))
    return "/".join(sorted(v.decode() for v in found)) or "?"


def child(system, workload, directory, repeats):
    peer = PEERS[system]()
    path = lambda name: os.path.join(directory, name)  # noqa: E731

    def load(name):
        with open(path(name), "rb") as f:
            return f.read()

    if workload == "prepare":
        os.makedirs(directory, exist_ok=True)
        files, extra = peer.prepare()
        for name, data in files.items():
            with open(path(name), "wb") as f:
                f.write(data)
        print(json.dumps({"sizes": {name: len(data) for name, data in files.items()}, "extra": extra,
                          "version": peer.version()}))
        return

    # Each iteration builds its input state untimed, times the workload, and drops it all
    # before the next. The peak resident set is read before the last iteration's state is
    # read back to check it, so the check's read does not count (except in load-read, whose
    # read is the workload).
    times, result, last = [], {}, None
    if workload == "idle":
        pass
    elif workload in ("merge", "merge-incremental"):
        snapshot = load("base.snapshot")
        delta = load("full.delta" if workload == "merge" else "incremental.delta")
        for iteration in range(repeats + 1):
            last = None
            doc, body = peer.merge(snapshot, delta)
            elapsed, _ = timed(body)
            if iteration > 0:
                times.append(elapsed)
            last = doc
            del doc, body
    elif workload == "snapshot":
        base_delta = load("base.delta")
        for iteration in range(repeats + 1):
            last = None
            doc, body = peer.snapshot_state(base_delta)
            elapsed, data = timed(body)
            result["size"] = len(data)
            if iteration > 0:
                times.append(elapsed)
            last = doc
            del doc, body, data
    elif workload == "load-read":
        snapshot = load("base.snapshot")
        body = peer.load_read(snapshot)
        for iteration in range(repeats + 1):
            last = None
            elapsed, records = timed(body)
            if iteration > 0:
                times.append(elapsed)
            last = records
            del records
    else:
        raise SystemExit(f"unknown workload {workload}")
    peak = peak_resident_kib()
    if workload == "idle":
        checksum = None
    elif workload == "load-read":
        checksum = checksum_of(last)
    else:
        checksum = checksum_of(peer.read(last))
    print(json.dumps({"times": times, "peak_rss_kib": peak, "checksum": checksum, **result}))


# ---------------------------------------------------------------------------------------
# The parent: runs every child, checks that the three systems read the same values, and
# prints the table.


# glibc's malloc moves its trim and mmap thresholds as a process frees large blocks, so the
# size of an input file decides whether each repetition gets the pages it freed back from
# the kernel (page faults in the timed part) or keeps them: a 512 KB delta ran Concord's
# merge 10 ms slower than a 1.1 MB one holding the same operations. Every child, of every
# system, runs with the same fixed thresholds.
MALLOC_TUNABLES = "glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432"


def run_json(command, layout=None):
    env = dict(os.environ, GLIBC_TUNABLES=MALLOC_TUNABLES)
    if layout:
        env["PEERS_LAYOUT"] = layout
    completed = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=env)
    if completed.returncode != 0:
        raise SystemExit(f"failed ({completed.returncode}): {' '.join(command)}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def command(system, args, concord):
    if system == "concord":
        return [concord, *(args if args[0] == "prepare" else ["run", *args])]
    return [sys.executable, os.path.abspath(__file__), "child", system, *args]


def machine():
    model = "?"
    memory = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            kib = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
            memory = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{model}, {os.cpu_count()} cores, {memory}, Linux {platform.release()}"


def concord_version(concord):
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    swift = os.environ.get("SWIFT", "swift")
    try:
        line = subprocess.run([swift, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True).stdout.splitlines()[0]
        swift_version = re.search(r"Swift version (\S+)", line).group(1)
    except (OSError, IndexError, AttributeError):
        swift_version = "?"
    return f"Concord {commit} (Swift {swift_version}, release build)"


def fmt_ms(seconds):
    ms = seconds * 1000
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_bytes(n):
    return f"{n:,} B"


def fmt_mib(kib):
    return f"{kib / 1024:.1f} MiB"


def fmt_ratio(a, b):
    return f"{a / b:.2f}" if b else "—"


LAYOUTS = {
    "nested": 'each record a map under its id in one top-level map "items"',
    "roots": "each record a top-level map named by its id",
}


def table(prepared, results, columns, expected):
    """One table: Concord beside the two peers measured with one layout."""
    median = {c: {w: statistics.median(results[c][w]["times"]) for w in WORKLOADS if w != "idle"} for c in columns}
    size = {c: prepared[c]["sizes"] for c in columns}
    rss = {c: {w: results[c][w]["peak_rss_kib"] for w in WORKLOADS} for c in columns}

    rows = [  # (label, {column: value}, formatter)
        ("1. merge a 100k-op delta (decode + apply): time", {c: median[c]["merge"] for c in columns}, fmt_ms),
        ("1. merge a 100k-op delta: operations/s", {c: OPERATIONS / median[c]["merge"] for c in columns},
         lambda v: f"{v / 1e6:.2f} M"),
        ("2. 100k-op delta: size", {c: size[c]["full.delta"] for c in columns}, fmt_bytes),
        ("2. 100k-op delta: bytes/op", {c: size[c]["full.delta"] / OPERATIONS for c in columns},
         lambda v: f"{v:.2f}"),
        ("3. 1% delta (1,000 ops): size", {c: size[c]["incremental.delta"] for c in columns}, fmt_bytes),
        ("3. 1% delta: merge into the 100k-op state", {c: median[c]["merge-incremental"] for c in columns}, fmt_ms),
        ("4. snapshot of the 100k-op state: size", {c: size[c]["base.snapshot"] for c in columns}, fmt_bytes),
        ("4. snapshot of the 100k-op state: export time", {c: median[c]["snapshot"] for c in columns}, fmt_ms),
        ("4. snapshot after the 100k-op merge (200k writes, 100k live): size",
         {c: size[c]["merged.snapshot"] for c in columns}, fmt_bytes),
        ("5. load the snapshot + read every value", {c: median[c]["load-read"] for c in columns}, fmt_ms),
        ("6. peak RSS: idle process (runtime + library, no data)", {c: rss[c]["idle"] for c in columns}, fmt_mib),
        ("6. peak RSS: merge a 100k-op delta", {c: rss[c]["merge"] for c in columns}, fmt_mib),
        ("6. peak RSS: merge the 1% delta", {c: rss[c]["merge-incremental"] for c in columns}, fmt_mib),
        ("6. peak RSS: export the snapshot", {c: rss[c]["snapshot"] for c in columns}, fmt_mib),
        ("6. peak RSS: load the snapshot + read every value", {c: rss[c]["load-read"] for c in columns}, fmt_mib),
    ]
    print("| workload | Concord | Loro | Yrs | Concord÷Loro | Concord÷Yrs |")
    print("|---|---|---|---|---|---|")
    for label, values, formatter in rows:
        c, lo, y = (values[column] for column in columns)
        print(f"| {label} | {formatter(c)} | {formatter(lo)} | {formatter(y)} | {fmt_ratio(c, lo)} | "
              f"{fmt_ratio(c, y)} |")


VALUES_TEXT = {
    "recycled": "v{record mod 1000}-{round}, 1,000 distinct strings per round",
    "unique": "every string distinct, \"u\" and six base-32 digits of a mix of round, record and field",
}


def filesystem_of(path):
    """The file system type and device under `path`, from /proc/self/mounts (longest mount
    point that contains it)."""
    os.makedirs(path, exist_ok=True)
    real = os.path.realpath(path)
    best = ("?", "?", "")
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                device, point, kind = line.split()[:3]
                if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[2]):
                    best = (kind, device, point)
    except OSError:
        pass
    return f"{best[0]} ({best[1]})"


def store_table(results, peers):
    """The durable store's rows: its time (or memory) beside Concord's core and both peers'
    in-memory figures, and its ratio to the best peer (the faster, or the smaller)."""
    def median(column, workload):
        return statistics.median(results[column][workload]["times"])

    def rss(column, workload):
        return results[column][workload]["peak_rss_kib"]

    apply_time = median("concord", "store-merge")
    rows = [  # (label, store value, the in-memory workload beside it, value of a column, formatter, larger is better)
        ("7. store apply of the 100k-op delta (decode + apply, one transaction on disk) vs 1. merge: time",
         apply_time, "merge", median, fmt_ms, False),
        ("7. store apply vs 1. merge: operations/s", OPERATIONS / apply_time, "merge",
         lambda c, w: OPERATIONS / median(c, w), lambda v: f"{v / 1e6:.2f} M", True),
        ("8. store whole-state read (open the store + read every record, typed values) vs 5. load + read",
         median("concord", "store-load-read"), "load-read", median, fmt_ms, False),
        ("8. store whole-state read: the read alone (store already open)",
         statistics.median(results["concord"]["store-load-read"]["read_times"]), "load-read", median, fmt_ms, False),
        ("9. store snapshot join (a new store joins the base snapshot) vs 5. load + read",
         median("concord", "store-join"), "load-read", median, fmt_ms, False),
        ("6. peak RSS: store apply vs merge", rss("concord", "store-merge"), "merge", rss, fmt_mib, False),
        ("6. peak RSS: store whole-state read vs load + read", rss("concord", "store-load-read"), "load-read", rss,
         fmt_mib, False),
        ("6. peak RSS: store snapshot join vs load + read", rss("concord", "store-join"), "load-read", rss, fmt_mib,
         False),
    ]
    print("| workload | Concord store (SQLite, disk) | Concord core (memory) | Loro (memory) | Yrs (memory) | "
          "store ÷ best peer |")
    print("|---|---|---|---|---|---|")
    for label, store, workload, of, formatter, larger in rows:
        core, lo, y = (of(column, workload) for column in ["concord", *peers])
        best = max(lo, y) if larger else min(lo, y)
        which = "Loro" if best == lo else "Yrs"
        print(f"| {label} | {formatter(store)} | {formatter(core)} | {formatter(lo)} | {formatter(y)} | "
              f"{fmt_ratio(store, best)} ({which}) |")
    fastest = min(median(p, "merge") for p in peers)
    name = "Loro" if fastest == median(peers[0], "merge") else "Yrs"
    reached = fastest / apply_time
    print()
    print(f"The store's apply: {OPERATIONS / apply_time / 1e6:.2f} M operations/s; the fastest peer's in-memory merge "
          f"({name}): {OPERATIONS / fastest / 1e6:.2f} M/s. The store reaches {reached:.2f} of it (target ≥ 1.00: "
          f"{'met' if reached >= 1 else 'not met'}).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concord", required=True, help="the PeersConcord executable (release build)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repetitions per workload (median; ≥5)")
    parser.add_argument("--layout", nargs="+", choices=list(LAYOUTS), default=list(LAYOUTS),
                        help="the peers' record layouts, one table each (default: both)")
    parser.add_argument("--values", choices=["recycled", "unique"], default="recycled",
                        help="the string values: 1,000 distinct per round (recycled, the default) or every one "
                             "distinct (unique)")
    parser.add_argument("--workdir", help="where the inputs and the store files go (default: a temporary "
                                          "directory)")
    parser.add_argument("--json", help="also write every measurement to this file")
    options = parser.parse_args()
    if options.repeats < 5:
        parser.error("--repeats must be at least 5")
    concord = os.path.abspath(options.concord)
    global VALUES
    VALUES = options.values
    os.environ["PEERS_VALUES"] = VALUES  # every child writes and checks the same values
    # Columns: Concord once, each peer once per layout ("loro/nested", …).
    runs = [("concord", "concord", None)] + [
        (f"{peer}/{layout}", peer, layout) for layout in options.layout for peer in PEERS]

    with tempfile.TemporaryDirectory(prefix="concord-peers-") as scratch:
        workdir = options.workdir or scratch
        directory = lambda column: os.path.join(workdir, column.replace("/", "-"))  # noqa: E731
        started = time.strftime("%Y-%m-%d %H:%M %Z")
        filesystem = filesystem_of(workdir)
        load_average = " ".join(f"{x:.2f}" for x in os.getloadavg())
        prepared, results = {}, {column: {} for column, _, _ in runs}
        for column, system, layout in runs:
            prepared[column] = run_json(command(system, ["prepare", directory(column)], concord), layout)
        # Workload by workload, the systems one after the other, so that a slower stretch of a
        # shared machine falls on all of them.
        for workload in WORKLOADS:
            for column, system, layout in runs:
                print(f"  {workload:<18} {column}", file=sys.stderr, flush=True)
                args = [workload, directory(column), str(options.repeats)]
                results[column][workload] = run_json(command(system, args, concord), layout)
            for store_workload in STORE_WORKLOADS.get(workload, []):
                print(f"  {store_workload:<18} concord", file=sys.stderr, flush=True)
                args = [store_workload, directory("concord"), str(options.repeats)]
                results["concord"][store_workload] = run_json(command("concord", args, concord))

    # Every system must have read the same 100,000 values after each workload.
    expected = expected_checksums()
    wanted = {"merge": "merged", "merge-incremental": "incremental", "snapshot": "base", "load-read": "base",
              "store-merge": "merged", "store-load-read": "base", "store-join": "base"}
    for column, _, _ in runs:
        for workload, state in wanted.items():
            if workload not in results[column]:
                continue
            got = results[column][workload]["checksum"]
            if got != expected[state]:
                raise SystemExit(f"{column} {workload}: read {got}, expected {expected[state]}")

    versions = [concord_version(concord), prepared[runs[1][0]]["version"], prepared[runs[2][0]]["version"]]
    print(f"{' · '.join(versions)} · Python {platform.python_version()}")
    print(f"{machine()} · {started} · load average {load_average}")
    print(f"Median of {options.repeats} timed runs after 1 warm-up; one process per system, layout and workload, "
          f"each with GLIBC_TUNABLES={MALLOC_TUNABLES}. "
          f"Every system read the same {expected['base'][0]:,} values after each workload (checksums checked).")
    print(f"String values: {VALUES_TEXT[VALUES]} (--values {VALUES}). "
          f"The durable store's files: in the work directory, on {filesystem}.")
    for layout in options.layout:
        print()
        print(f"Loro and Yrs with {LAYOUTS[layout]} (--layout {layout}); Concord is the same run in both tables.")
        print()
        table(prepared, results, ["concord", f"loro/{layout}", f"yrs/{layout}"], expected)
        extra = prepared[f"loro/{layout}"]["extra"]
        print()
        print(f"Loro's shallow snapshot (its state without history): {extra['base.shallow-snapshot']:,} B for the "
              f"100k-op state, {extra['merged.shallow-snapshot']:,} B after the merge.")
        print()
        print(f"The durable store beside the in-memory figures (Loro and Yrs --layout {layout}):")
        print()
        store_table(results, [f"loro/{layout}", f"yrs/{layout}"])

    if options.json:
        with open(options.json, "w") as f:
            json.dump({"versions": versions, "machine": machine(), "date": started, "load_average": load_average,
                       "values": VALUES, "filesystem": filesystem,
                       "repeats": options.repeats, "prepared": prepared, "results": results}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        if len(sys.argv) == 5 and sys.argv[3] == "prepare":
            child(sys.argv[2], "prepare", sys.argv[4], 0)
        elif len(sys.argv) == 6:
            child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        else:
            raise SystemExit(__doc__)
    else:
        main()

#!/usr/bin/env python3
"""Counts where an encoded delta's bytes go, part by part (docs/FORMAT.md §4: version 1,
§4.2; version 2, §4.7).

    python3 Benchmarks/Peers/delta_bytes.py DELTA [OPERATIONS]

DELTA is a delta object as `DeltaCodec.encode` writes it, e.g. `full.delta` (version 2, as
Concord writes it) or `full-version1.delta` in the directory `PeersConcord prepare DIR`
fills; OPERATIONS (default 100,000) divides the counts. Benchmarks/README.md, "The delta's
bytes, counted", shows its output for the peers' delta. For reference it also prints the
size of the bytes through zlib.
"""

import collections
import sys
import zlib


class Reader:
    """Reads a delta's varints and raw bytes, adding what each read took to `parts[part]`
    when a part is named."""

    def __init__(self, data):
        self.data = data
        self.position = 0
        self.parts = collections.Counter()

    def varint(self, part=None):
        start, value, shift = self.position, 0, 0
        while True:
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if part:
            self.parts[part] += self.position - start
        return value

    def raw(self, length, part=None):
        if part:
            self.parts[part] += length
        self.position += length
        return self.data[self.position - length:self.position]


def count(data):
    reader = Reader(data)
    varint, raw, parts = reader.varint, reader.raw, reader.parts

    raw(6, "header and tables")  # magic, version, kind
    raw(16, "header and tables")  # origin
    varint("header and tables")  # seq
    varint("header and tables")  # upTo
    raw(16 * varint("header and tables"), "header and tables")  # replicas
    for _ in range(varint("header and tables")):  # dependencies
        varint("header and tables")
        varint("header and tables")
    for _ in range(varint("header and tables")):  # names
        raw(varint("header and tables"), "header and tables")
    entries = 0
    for _ in range(varint("header and tables")):  # records
        varint("record ids, collections, slot counts, entry replicas")  # collection
        varint("record ids, collections, slot counts, entry replicas")  # shared id prefix
        raw(varint("record ids, collections, slot counts, entry replicas"),
            "record ids, collections, slot counts, entry replicas")
        slots = varint("record ids, collections, slot counts, entry replicas")
        if slots == 0:  # shipped whole
            slots = varint("record ids, collections, slot counts, entry replicas")
        for _ in range(slots):
            kind = varint("slot keys") & 3
            if kind == 3:
                element_value(raw(1, "set elements")[0], varint, raw, "set elements")
            header = varint("slot entry headers (count, home flag)")
            for _ in range(header >> 1):
                entries += 1
                varint("entry stamps")
                if not header & 1:
                    varint("record ids, collections, slot counts, entry replicas")
                if kind == 2:
                    tag = raw(1, "value tags")[0]
                    if tag == 5:
                        raw(varint("string lengths"), "string values' bytes")
                    elif tag == 7:  # a file: hash, size, media type
                        raw(32, "files")
                        varint("files")
                        if raw(1, "files")[0] == 1:
                            raw(varint("files"), "files")
                    else:
                        element_value(tag, varint, raw, "integer values" if tag == 3 else "other values")
    if reader.position != len(data):
        sys.exit(f"read {reader.position} of {len(data)} bytes: not a version 1 delta")
    return parts, entries


def element_value(tag, varint, raw, part):
    """The value after a scalar's tag (null, booleans: nothing)."""
    if tag == 3:
        varint(part)
    elif tag == 4:
        raw(8, part)
    elif tag in (5, 6):
        raw(varint(part), part)


def count_version2(data):
    """The parts of a version 2 delta (docs/FORMAT.md §4.7)."""
    reader = Reader(data)
    varint, raw, parts = reader.varint, reader.raw, reader.parts

    def string(part_first, part_repeat):
        start = reader.position
        header = varint()
        if header & 1:
            parts[part_repeat] += reader.position - start
        else:
            raw(header >> 1)
            parts[part_first] += reader.position - start

    def scalar(tag, part):
        if tag == 5:
            string("strings, first use", "string references")
        else:
            element_value(tag, varint, raw, part)

    raw(6, "header and tables")
    raw(16, "header and tables")
    varint("header and tables")
    varint("header and tables")
    raw(16 * varint("header and tables"), "header and tables")
    for _ in range(varint("header and tables")):
        varint("header and tables")
        varint("header and tables")
    for _ in range(varint("header and tables")):
        raw(varint("header and tables"), "header and tables")
    entries = 0
    common = []
    for _ in range(varint("header and tables")):
        varint("record ids, collections")
        varint("record ids, collections")
        raw(varint("record ids, collections"), "record ids, collections")
        listed = varint("common-slot lists")
        if listed:
            common = [varint("common-slot lists") for _ in range(listed - 1)]
        others = varint("slot counts (other slots, whole flag)") >> 1
        for item in common:
            entries += 1
            varint("entry stamps")
            if item & 1:
                string("strings, first use", "string references")
            else:
                varint("integer values")
        for _ in range(others):
            kind = varint("other slots: keys, headers, tags") & 3
            if kind == 3:
                scalar(raw(1, "set elements")[0], "set elements")
            header = varint("other slots: keys, headers, tags")
            for _ in range(header >> 1):
                entries += 1
                varint("entry stamps")
                if not header & 1:
                    varint("entry replicas")
                if kind == 2:
                    tag = raw(1, "other slots: keys, headers, tags")[0]
                    if tag == 7:
                        raw(32, "files")
                        varint("files")
                        if raw(1, "files")[0] == 1:
                            raw(varint("files"), "files")
                    else:
                        scalar(tag, "integer values" if tag == 3 else "other values")
    if reader.position != len(data):
        sys.exit(f"read {reader.position} of {len(data)} bytes: not a version 2 delta")
    return parts, entries


def main():
    data = open(sys.argv[1], "rb").read()
    operations = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    version = data[4]
    parts, entries = (count if version == 1 else count_version2)(data)
    print(f"format version {version}: {len(data):,} bytes, {entries:,} entries, {operations:,} operations: "
          f"{len(data) / operations:.2f} bytes/op")
    for part, size in parts.most_common():
        print(f"  {part:55s} {size:10,}  {size / operations:5.2f}")
    packed = len(zlib.compress(data, 6))
    print(f"for reference, these bytes through zlib (level 6): {packed:,} bytes, {packed / operations:.2f} bytes/op")


if __name__ == "__main__":
    main()

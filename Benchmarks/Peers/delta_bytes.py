#!/usr/bin/env python3
"""Counts where an encoded delta's bytes go, part by part (docs/FORMAT.md §4, version 1).

    python3 Benchmarks/Peers/delta_bytes.py DELTA [OPERATIONS]

DELTA is a delta object as `DeltaCodec.encode` writes it, e.g. `full.delta` in the
directory `PeersConcord prepare DIR` fills; OPERATIONS (default 100,000) divides the counts.
Benchmarks/README.md, "The delta's bytes, counted", shows its output for the peers' delta.
"""

import collections
import sys


def count(data):
    position = 0
    parts = collections.Counter()

    def varint(part):
        nonlocal position
        start, value, shift = position, 0, 0
        while True:
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        parts[part] += position - start
        return value

    def raw(length, part):
        nonlocal position
        parts[part] += length
        position += length
        return data[position - length:position]

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
    if position != len(data):
        sys.exit(f"read {position} of {len(data)} bytes: not a version 1 delta")
    return parts, entries


def element_value(tag, varint, raw, part):
    """The value after a scalar's tag (null, booleans: nothing)."""
    if tag == 3:
        varint(part)
    elif tag == 4:
        raw(8, part)
    elif tag in (5, 6):
        raw(varint(part), part)


def main():
    data = open(sys.argv[1], "rb").read()
    operations = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    parts, entries = count(data)
    print(f"{len(data):,} bytes, {entries:,} entries, {operations:,} operations: {len(data) / operations:.2f} bytes/op")
    for part, size in parts.most_common():
        print(f"  {part:55s} {size:10,}  {size / operations:5.2f}")


if __name__ == "__main__":
    main()

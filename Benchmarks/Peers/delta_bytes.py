#!/usr/bin/env python3
"""Counts where an encoded delta's bytes go, part by part (docs/FORMAT.md §4, version 1).

    python3 Benchmarks/Peers/delta_bytes.py DELTA [OPERATIONS]

DELTA is a delta object as `DeltaCodec.encode` writes it, e.g. `full.delta` in the
directory `PeersConcord prepare DIR` fills; OPERATIONS (default 100,000) divides the counts.
Benchmarks/README.md, "The delta's bytes, counted", shows its output for the peers' delta.

It also sizes the same delta under a sketch of a denser encoding (not a format Concord
reads or writes), to see what three changes together would save:
- strings: each string value's bytes once; a repeat is a varint index to its first use;
- stamps: each entry's hlc as a difference from the previous hlc of its own replica,
  instead of the previous entry's;
- common slots: a field slot with one entry of the origin's and an integer or string
  value is one varint (name index and a flag) in place of key, entry header and tag.
and then under the sketch with two more changes, each on top of the ones before:
- slot lists: a record's list of common slots (names and value kinds) is one byte when it
  is the previous record's list, or a byte and the names' varints when it is not, in place
  of a varint per common slot;
- integer columns: an integer value as the difference from the previous integer value of
  the same field name.
For reference it also prints the size of the version 1 bytes through zlib.
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


def varint_size(value):
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def zigzag(value):
    return (value << 1) if value >= 0 else ((-value) << 1) - 1


def sketch(data, slot_lists=False, integer_columns=False):
    """The size of `data` under the sketch in the module's docstring, by part, with its
    further changes when asked."""
    reader = Reader(data)
    varint, raw = reader.varint, reader.raw

    parts = collections.Counter()
    raw(22)
    varint()
    up_to = varint()
    raw(16 * varint())
    for _ in range(varint()):
        varint()
        varint()
    for _ in range(varint()):
        raw(varint())
    record_count = varint()
    parts["header and tables"] = reader.position
    previous_hlc = up_to
    previous_by_replica = {}
    strings = {}
    previous_list = None
    previous_integer = {}
    for _ in range(record_count):
        common_slots = []
        start = reader.position
        varint()
        varint()
        raw(varint())
        slots = varint()
        if slots == 0:
            slots = varint()
        parts["record ids, collections, slot counts"] += reader.position - start
        for _ in range(slots):
            start = reader.position
            key = varint()
            kind, name = key & 3, key >> 2
            if kind == 3:
                tag = raw(1)[0]
                element_value(tag, varint, raw, None)
            header = varint()
            home = header & 1
            key_bytes = reader.position - start
            entries = []
            for _ in range(header >> 1):
                difference = varint()
                hlc = previous_hlc + ((difference >> 1) ^ -(difference & 1))
                previous_hlc = hlc
                replica = None if home else varint()
                value = None
                if kind == 2:
                    tag = raw(1)[0]
                    if tag == 3:
                        value = ("int", varint())
                    elif tag == 5:
                        value = ("string", bytes(raw(varint())))
                    else:
                        start = reader.position
                        if tag == 7:
                            raw(32)
                            varint()
                            if raw(1)[0] == 1:
                                raw(varint())
                        else:
                            element_value(tag, varint, raw, None)
                        value = ("other", reader.position - start)
                entries.append((hlc, replica, value))
            common = kind == 2 and len(entries) == 1 and home and entries[0][2][0] in ("int", "string")
            if common and slot_lists:
                common_slots.append((name, entries[0][2][0]))
            else:
                parts["slot keys, headers, tags"] += varint_size(name << 1) if common else key_bytes + (len(entries) if kind == 2 else 0)
            for hlc, replica, value in entries:
                previous = previous_by_replica.get(replica, up_to)
                previous_by_replica[replica] = hlc
                parts["entry stamps"] += varint_size(zigzag(hlc - previous))
                if replica is not None:
                    parts["entry replicas"] += varint_size(replica)
                if value is None:
                    continue
                if value[0] == "int" and integer_columns:
                    parts["integer values"] += varint_size(zigzag(value[1] - previous_integer.get(name, 0)))
                    previous_integer[name] = value[1]
                elif value[0] == "int":
                    parts["integer values"] += varint_size(value[1])
                elif value[0] == "string":
                    if value[1] in strings:
                        parts["string repeats"] += varint_size(strings[value[1]] << 1 | 1)
                    else:
                        strings[value[1]] = len(strings)
                        parts["strings, first use"] += varint_size(len(value[1]) << 1) + len(value[1])
                else:
                    parts["other values"] += 1 + value[1]
        if slot_lists:
            repeated = common_slots == previous_list
            parts["slot keys, headers, tags"] += 1 + (0 if repeated else sum(varint_size(name << 1) for name, _ in common_slots))
            previous_list = common_slots
    return parts


def main():
    data = open(sys.argv[1], "rb").read()
    operations = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    parts, entries = count(data)
    print(f"{len(data):,} bytes, {entries:,} entries, {operations:,} operations: {len(data) / operations:.2f} bytes/op")
    for part, size in parts.most_common():
        print(f"  {part:55s} {size:10,}  {size / operations:5.2f}")
    packed = len(zlib.compress(data, 6))
    print(f"for reference, the version 1 bytes through zlib (level 6): {packed:,} bytes, {packed / operations:.2f} bytes/op")
    for title, options in [("sketch of a denser encoding (see the docstring)", {}),
                           ("the sketch with slot lists", {"slot_lists": True}),
                           ("the sketch with slot lists and integer columns", {"slot_lists": True, "integer_columns": True})]:
        sketched = sketch(data, **options)
        total = sum(sketched.values())
        print(f"{title}: {total:,} bytes, {total / operations:.2f} bytes/op")
        for part, size in sketched.most_common():
            print(f"  {part:55s} {size:10,}  {size / operations:5.2f}")


if __name__ == "__main__":
    main()

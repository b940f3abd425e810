import ConcordCore

/// The records a local write transaction created from nothing and wrote scalar values to,
/// with those values: what the pivot (``Pivot``) makes their declared rows from, instead of
/// reading back what the transaction just wrote.
///
/// A record is taken in when its first write of the transaction finds no row of it at all
/// (no dot, field or element: a new record), and its register writes are added as they run.
/// Its merged state at the commit is then exactly this transaction's liveness dot and one
/// entry per name written, the last value written: no tombstone, no concurrent entry, no set
/// element, so no conflict. Any other change to it — a delete, a create, a set element, a
/// file, a slot replaced any other way — lets it go, and it is read back from the merged
/// state as any other record. Records of collections not declared are never taken in.
struct WrittenRecords {
    /// At most this many records are kept per transaction (their values held in memory);
    /// later ones are read back.
    static let limit = 10_000

    private var records: [RecordRef: Values] = [:]

    /// Takes in `ref`, which has no row in the merged state.
    mutating func begin(_ ref: RecordRef) {
        guard records.count < Self.limit else { return }
        var values = Values()
        values.fields.reserveCapacity(8)  // room for a record's first fields, grown once at most
        records[ref] = values
    }

    /// Adds the register write of `name` of `ref`, run after those added before; a file lets
    /// the record go.
    mutating func wrote(_ ref: RecordRef, _ name: String, _ payload: Payload) {
        if records.isEmpty { return }
        guard case let .scalar(value) = payload else {
            records[ref] = nil
            return
        }
        records[ref]?.set(name, value)
    }

    /// Adds register writes run in this order, each record's together (a register buffer's
    /// rows, ``RegisterBuffer``): as ``wrote(_:_:_:)`` for each, a record looked up once
    /// per run of its rows.
    mutating func wrote(_ rows: [(ref: RecordRef, name: String, payload: Payload)]) {
        if records.isEmpty { return }
        var start = 0
        while start < rows.count {
            let ref = rows[start].ref
            var end = start + 1
            while end < rows.count, rows[end].ref == ref { end += 1 }
            defer { start = end }
            guard let index = records.index(forKey: ref) else { continue }
            for row in start..<end {
                guard case let .scalar(value) = rows[row].payload else {
                    records.remove(at: index)
                    break
                }
                records.values[index].set(rows[row].name, value)
            }
        }
    }

    /// Lets `ref` go: it changed otherwise than by scalar register writes.
    mutating func forget(_ ref: RecordRef) {
        if !records.isEmpty { records[ref] = nil }
    }

    /// The values written to `ref`, if it is kept.
    subscript(_ ref: RecordRef) -> [(name: String, value: ScalarValue)]? {
        records.isEmpty ? nil : records[ref]?.fields
    }

    /// One record's values, the last written per name (names matched by their bytes).
    struct Values {
        var fields: [(name: String, value: ScalarValue)] = []

        mutating func set(_ name: String, _ value: ScalarValue) {
            if let index = fields.firstIndex(where: { Bytewise.equal($0.name, name) }) {
                fields[index].value = value
            } else {
                fields.append((name, value))
            }
        }
    }
}

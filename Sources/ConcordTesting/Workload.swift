import ConcordCore

/// The benchmark workload of the core issue: scalar field writes over `records × fields`,
/// integers on even fields and short strings on odd ones, one write (one stamp) each, ten
/// writes per millisecond.
public enum Workload {
    /// Performs one round of writes on `writer` — every field of every record once — and
    /// seals them into one delta. Round `n` writes values that differ from round `n − 1`'s.
    public static func fieldWrites(
        on writer: inout Replica, records: Int, fields: Int, round: Int = 0, startMillis: UInt64 = 1_767_225_600_000
    ) -> Delta {
        let names = (0..<fields).map { "field\($0)" }
        var now = startMillis + UInt64(round) * 10_000_000
        for record in 0..<records {
            let ref = RecordRef(collection: "items", id: "item\(record)")
            for field in 0..<fields {
                if (record * fields + field) % 10 == 0 { now += 1 }
                try! writer.set(ref, names[field], value(record: record, field: field, round: round), now: now)
            }
        }
        return writer.seal()!
    }

    /// The value the workload writes to `field` of `record` in `round`.
    public static func value(record: Int, field: Int, round: Int) -> ScalarValue {
        field % 2 == 0 ? .int(Int64(record * 7 + field + round)) : .string("v\(record % 1_000)-\(round)")
    }
}

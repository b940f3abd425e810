/// The value a field reads as.
public enum FieldValue: Hashable, Sendable, CustomStringConvertible {
    /// A scalar field: the value of the greatest stamp (rule 1).
    case scalar(ScalarValue)
    /// A set field: the elements with a surviving add, in canonical order (rule 3).
    case set([ScalarValue])
    /// A file field: the version with the greatest stamp; ``Conflict`` lists forks (rule 6).
    case file(FileRef)

    public var description: String {
        switch self {
        case let .scalar(value): value.description
        case let .set(elements): "{" + elements.map(\.description).joined(separator: ", ") + "}"
        case let .file(ref): ref.description
        }
    }
}

extension Record {
    /// The visible fields by name, or an empty map for a record that is not visible.
    ///
    /// A name written both as a register (scalar or file) and as a set by concurrent
    /// writers reads as whichever kind holds the greater stamp.
    public var fields: [String: FieldValue] {
        guard isVisible else { return [:] }
        var registers: [String: Entry] = [:]
        var sets: [String: (elements: [ScalarValue], maxDot: Stamp)] = [:]
        for (key, slot) in slots {
            guard let last = slot.entries.last else { continue }
            switch key {
            case let .field(name):
                registers[name] = last
            case let .element(name, element):
                var current = sets[name] ?? (elements: [], maxDot: last.dot)
                current.elements.append(element)
                current.maxDot = max(current.maxDot, last.dot)
                sets[name] = current
            case .liveness, .tombstones:
                continue
            }
        }
        var fields: [String: FieldValue] = [:]
        for (name, entry) in registers {
            switch entry.payload {
            case let .scalar(value): fields[name] = .scalar(value)
            case let .file(ref): fields[name] = .file(ref)
            case .marker: continue
            }
        }
        for (name, set) in sets {
            if let register = registers[name], register.dot > set.maxDot { continue }
            fields[name] = .set(set.elements.sorted(by: ScalarValue.canonicalOrder))
        }
        return fields
    }

    /// The value of one field, if the record is visible and the field set.
    public func field(_ name: String) -> FieldValue? { fields[name] }

    /// The versions of a file field, sorted by stamp: more than one distinct content is a
    /// fork (rule 6).
    public func fileVersions(_ name: String) -> [(stamp: Stamp, file: FileRef)] {
        (slots[.field(name)]?.entries ?? []).compactMap { entry in
            if case let .file(ref) = entry.payload { (stamp: entry.dot, file: ref) } else { nil }
        }
    }
}

extension StoreState {
    /// The visible records, sorted by collection then id.
    public var visibleRecords: [(ref: RecordRef, fields: [String: FieldValue])] {
        sortedRecords.compactMap { $0.record.isVisible ? (ref: $0.ref, fields: $0.record.fields) : nil }
    }

    /// The visible fields of one record, or nil if it is not visible.
    public func fields(of ref: RecordRef) -> [String: FieldValue]? {
        guard let record = record(ref), record.isVisible else { return nil }
        return record.fields
    }
}

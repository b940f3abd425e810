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
    /// The visible fields sorted by name (bytewise), or none for a record that is not
    /// visible. Names are distinct by their UTF-8 bytes.
    ///
    /// A name written both as a register (scalar or file) and as a set by concurrent
    /// writers reads as whichever kind holds the greater stamp.
    public var sortedFields: [(name: String, value: FieldValue)] {
        guard isVisible else { return [] }
        var registers: [ExactString: Entry] = [:]
        var sets: [ExactString: (elements: [ScalarValue], maxDot: Stamp)] = [:]
        for (key, slot) in slots {
            guard let last = slot.entries.last else { continue }
            switch key {
            case let .field(name):
                registers[ExactString(name)] = last
            case let .element(name, element):
                var current = sets[ExactString(name)] ?? (elements: [], maxDot: last.dot)
                current.elements.append(element)
                current.maxDot = max(current.maxDot, last.dot)
                sets[ExactString(name)] = current
            case .liveness, .tombstones:
                continue
            }
        }
        var fields: [ExactString: FieldValue] = [:]
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
        return fields.sorted { $0.key < $1.key }.map { (name: $0.key.value, value: $0.value) }
    }

    /// The visible fields by name, or an empty map for a record that is not visible. A
    /// convenience: Swift dictionaries merge canonically-equivalent names, so code that must
    /// tell such names apart uses ``sortedFields``.
    public var fields: [String: FieldValue] {
        Dictionary(sortedFields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The value of one field (matched by its UTF-8 bytes), if the record is visible and the
    /// field set.
    public func field(_ name: String) -> FieldValue? {
        sortedFields.first { Bytewise.equal($0.name, name) }?.value
    }

    /// The versions of a file field, sorted by stamp: more than one distinct content is a
    /// fork (rule 6).
    public func fileVersions(_ name: String) -> [(stamp: Stamp, file: FileRef)] {
        (slots[.field(name)]?.entries ?? []).compactMap { entry in
            if case let .file(ref) = entry.payload { (stamp: entry.dot, file: ref) } else { nil }
        }
    }
}

extension StoreState {
    /// The visible records, sorted by collection then id, with their fields sorted by name.
    public var visibleRecords: [(ref: RecordRef, fields: [(name: String, value: FieldValue)])] {
        sortedRecords.compactMap { $0.record.isVisible ? (ref: $0.ref, fields: $0.record.sortedFields) : nil }
    }

    /// The visible fields of one record, or nil if it is not visible.
    public func fields(of ref: RecordRef) -> [String: FieldValue]? {
        guard let record = record(ref), record.isVisible else { return nil }
        return record.fields
    }
}

import ConcordCore
import Foundation

extension CollectionDeclaration {
    /// What a version of a declaration says changed since the versions before it (README,
    /// "Evolving your model"): which fields were renamed, which read a default when a record
    /// lacks them, which were converted from another type, which were retired.
    ///
    /// Changes are declared, not run: no record is rewritten. A renamed field is still
    /// stored under its first name, so a version that knows only that name reads and
    /// writes it unchanged; a converted value is converted as it is read, in the declared
    /// table and in typed loads, and stays as written. Two devices holding the same
    /// declaration read the same records the same way, whatever order their writes came in.
    public struct Evolution: Hashable, Sendable {
        /// The schema version (1 for a declaration that says none). A replica never goes
        /// back to a lower one (``Store/declare(_:)-(CollectionDeclaration)``).
        public var version: Int
        /// Per declared field (its name in this version), what changed.
        public var changes: [String: FieldChange]
        /// Fields no longer declared: they get no column and no typed property, and their
        /// values are kept as written and round-tripped (never dropped by a save).
        public var retired: [Field]

        public init(version: Int = 1, changes: [String: FieldChange] = [:], retired: [Field] = []) {
            self.version = version
            self.changes = changes
            self.retired = retired.sorted { Bytewise.less($0.name, $1.name) }
        }
    }

    /// How one declared field relates to what earlier versions wrote.
    public struct FieldChange: Hashable, Sendable {
        /// The name the field is stored under, which an earlier version declared: the
        /// stored name stays the old one, and this version's queries, declared table and
        /// typed records read and write it under its new name.
        public var renamedFrom: String?
        /// What a record that lacks the field reads (in the declared table and typed loads).
        /// Never replaces a value that is there, even one that does not fit or convert.
        public var defaultValue: FieldValue?
        /// The type earlier versions wrote, converted on read by a registered conversion.
        public var convertedFrom: Conversion?

        public init(renamedFrom: String? = nil, defaultValue: FieldValue? = nil, convertedFrom: Conversion? = nil) {
            self.renamedFrom = renamedFrom
            self.defaultValue = defaultValue
            self.convertedFrom = convertedFrom
        }
    }

    /// A registered conversion from the type earlier versions wrote (``Conversion/registered``).
    /// A set field's conversion applies to each element.
    public struct Conversion: Hashable, Sendable {
        /// The type earlier versions wrote.
        public var from: ScalarType
        /// string → date only: the date's pattern (Unicode, as `DateFormatter` reads it, in
        /// UTC, e.g. `yyyy-MM-dd`); nil: ISO 8601.
        public var format: String?

        public init(from: ScalarType, format: String? = nil) {
            self.from = from
            self.format = format
        }

        /// The conversions there are, `from → to`. int → double is implicit: a double field
        /// reads integers without declaring it.
        public static let registered: [(from: ScalarType, to: ScalarType)] = [
            (.int, .double), (.int, .string), (.bool, .int), (.string, .date), (.int, .date), (.double, .date),
        ]

        /// Whether `from → to` is registered (or no conversion at all).
        public static func isRegistered(from: ScalarType, to: ScalarType) -> Bool {
            from == to || registered.contains { $0.from == from && $0.to == to }
        }

        /// `value` under the declared type `to`: converted when it is of ``from``, as it is
        /// when it is already of `to` (written by this version), nil when it is of `from`
        /// and does not convert (a string that is not a date in the format).
        func convert(_ value: ScalarValue, to: ScalarType) -> ScalarValue? {
            switch (from, to, value) {
            case let (.int, .double, .int(number)): return Double(exactly: number).map(ScalarValue.double)
            case let (.int, .string, .int(number)): return .string(String(number))
            case let (.bool, .int, .bool(flag)): return .int(flag ? 1 : 0)
            case let (.string, .date, .string(text)):
                return Self.date(text, format: format).map { .double($0.timeIntervalSinceReferenceDate) }
            case let (.int, .date, .int(number)): return Double(exactly: number).map(ScalarValue.double)
            case (.double, .date, .double): return value
            default: return value
            }
        }

        /// A date in `format` (UTC, POSIX locale), or ISO 8601 without one.
        static func date(_ text: String, format: String?) -> Date? {
            guard let format else { return DeclaredValue.date(text) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            formatter.isLenient = false
            return formatter.date(from: text)
        }
    }

    /// The schema version (``Evolution/version``).
    public var version: Int { evolution.version }

    /// The name `field` is stored under: its first name, when it was renamed.
    public func storedName(of field: Field) -> String {
        evolution.changes[field.name]?.renamedFrom ?? field.name
    }

    /// A declaration of `collection` at schema `version` with `fields` and what changed
    /// since earlier versions.
    ///
    /// ```swift
    /// let games = try CollectionDeclaration("games", version: 2, fields: [
    ///     .init("tier", .int, indexed: true), .init("rating", .double), .init("notes", .string),
    /// ], changes: [
    ///     "tier": .init(renamedFrom: "level"), "notes": .init(defaultValue: .scalar(.string(""))),
    /// ], retired: [.init("tags", .set(.string))])
    /// ```
    ///
    /// - Throws: `invalidDeclaration` for a version below 1, a change of a field not
    ///   declared, a default that does not fit its field's type, a conversion that is not
    ///   registered, two fields stored under one name, or a retired field also declared.
    public init(_ collection: String, version: Int, fields: [Field], changes: [String: FieldChange] = [:], retired: [Field] = []) throws(ConcordError) {
        try self.init(collection, fields: fields)
        evolution = Evolution(version: version, changes: changes, retired: retired)
        try checkEvolution()
    }

    /// This declaration at schema `version`, with what changed since earlier versions: for
    /// a declaration read from a type.
    ///
    /// ```swift
    /// try store.declare(CollectionDeclaration(GameV2.self, indexed: ["tier"]).evolved(
    ///     version: 2, changes: ["tier": .init(renamedFrom: "level")], retired: [.init("tags", .set(.string))]))
    /// ```
    public func evolved(version: Int, changes: [String: FieldChange] = [:], retired: [Field] = []) throws(ConcordError) -> CollectionDeclaration {
        var evolved = self
        evolved.evolution = Evolution(version: version, changes: changes, retired: retired)
        try evolved.checkEvolution()
        return evolved
    }

    /// The checks ``init(_:version:fields:changes:retired:)`` promises.
    func checkEvolution() throws(ConcordError) {
        func fail(_ message: String) -> ConcordError { ConcordError(.invalidDeclaration, "\"\(collection)\": \(message)") }
        guard evolution.version >= 1 else { throw fail("a schema version is 1 or more, not \(evolution.version)") }
        var stored: Set<String> = []
        for field in fields {
            guard stored.insert(storedName(of: field)).inserted else {
                throw fail("two fields are stored as \"\(storedName(of: field))\" (a field renamed from the name of another)")
            }
        }
        for (name, change) in evolution.changes {
            guard let field = field(name) else { throw fail("a change names field \"\(name)\", which is not declared") }
            if let value = change.defaultValue, !Self.fits(value, field.type) {
                throw fail("the default of \"\(name)\" is not a \(field.type)")
            }
            if let conversion = change.convertedFrom {
                let target: ScalarType
                switch field.type {
                case let .scalar(type), let .set(type): target = type
                case .file: throw fail("field \"\(name)\" is a file: files are not converted")
                }
                guard Conversion.registered.contains(where: { $0.from == conversion.from && $0.to == target }) else {
                    throw fail("no conversion from \(conversion.from.rawValue) to \(target.rawValue) for \"\(name)\" (registered: \(Conversion.registered.map { "\($0.from.rawValue) → \($0.to.rawValue)" }.joined(separator: ", ")))")
                }
                if conversion.format != nil && !(conversion.from == .string && target == .date) {
                    throw fail("only a string → date conversion takes a \"format\" (field \"\(name)\")")
                }
            }
        }
        for field in evolution.retired {
            if self.field(field.name) != nil || stored.contains(field.name) {
                throw fail("field \"\(field.name)\" is both retired and declared")
            }
        }
    }

    /// Whether `value` is a value of `type` (a default's check).
    static func fits(_ value: FieldValue, _ type: FieldType) -> Bool {
        switch (type, value) {
        case let (.scalar(scalar), .scalar(value)): value == .null || DeclaredValue.of(value, as: scalar) != .null
        case let (.set(element), .set(elements)): elements.allSatisfy { DeclaredValue.of($0, as: element) != .null }
        default: false
        }
    }
}

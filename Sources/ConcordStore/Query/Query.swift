import ConcordCore
import Foundation

/// A query of a declared collection (``CollectionDeclaration``): a filter, an order, a
/// window (`limit` and `offset`, or the cursor ``after(_:)``). Run by ``Store/query(_:)-(Query)``, ``Store/count(_:)-(Query)`` and ``Store/observe(_:)``.
///
/// ```swift
/// let query = Query("games")
///     .filter(.field("level", .greater, .int(3)) && .contains("tags", .string("rpg")))
///     .order(by: "title")
///     .limit(20)
/// for (id, fields) in try store.query(query) { print(id, fields) }
/// ```
///
/// A filter names declared fields and compares them with values of their declared type;
/// anything else is an error (`unknownField`, `typeMismatch`), never an empty result. A
/// comparison with a field whose column is null (the field missing, or holding a value
/// that does not fit its type) is false, and ``Filter/not(_:)`` is true exactly where its
/// filter is false. Strings compare by their UTF-8 bytes unless the field declares a
/// collation.
public struct Query: Hashable, Sendable {
    /// How a field compares with a value.
    public enum Comparison: String, Hashable, Sendable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// Which records a query keeps.
    public indirect enum Filter: Hashable, Sendable {
        /// The field compares with the value as said.
        case field(String, Comparison, ScalarValue)
        /// The field equals one of the values.
        case isIn(String, [ScalarValue])
        /// A string field starts with the prefix (its UTF-8 bytes).
        case prefix(String, String)
        /// A set field holds the element.
        case contains(String, ScalarValue)
        /// The field's column is null: missing, or a value that does not fit its type.
        case isNull(String)
        /// A searchable string field matches an FTS5 full-text query.
        case matches(String, String)
        /// The record has an open conflict of this kind (``/ConcordCore/Conflict/Kind/deleteUpdate``,
        /// ``/ConcordCore/Conflict/Kind/fileFork``), or of any kind when nil: the declared
        /// table's `concord_delete_update` and `concord_file_forks` columns.
        case conflict(Conflict.Kind?)
        case and([Filter])
        case or([Filter])
        case not(Filter)

        /// The record has an open conflict of any kind.
        public static let hasConflict = Filter.conflict(nil)
        /// The record has an open conflict of `kind`.
        public static func hasConflict(_ kind: Conflict.Kind) -> Filter { .conflict(kind) }

        public static func && (lhs: Filter, rhs: Filter) -> Filter { .and([lhs, rhs]) }
        public static func || (lhs: Filter, rhs: Filter) -> Filter { .or([lhs, rhs]) }
        public static prefix func ! (filter: Filter) -> Filter { .not(filter) }
    }

    /// One key of the order.
    public struct Order: Hashable, Sendable {
        public var field: String
        public var descending: Bool

        public init(_ field: String, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    public var collection: String
    /// Every record when nil.
    public var filter: Filter?
    /// The order, then by id (its UTF-8 bytes) for records that tie. Nulls sort first
    /// ascending, last descending.
    public var orders: [Order]
    public var limit: Int?
    public var offset: Int?
    /// A cursor: the id of the record the previous page ended with. The results are the
    /// records past it in this query's order (its filter applied; `offset` after that).
    /// The record must still have a row (be visible); it need not match the filter.
    public var after: String?

    public init(_ collection: String, filter: Filter? = nil, orders: [Order] = [], limit: Int? = nil, offset: Int? = nil) {
        self.collection = collection
        self.filter = filter
        self.orders = orders
        self.limit = limit
        self.offset = offset
    }

    /// The query with `filter` and-ed to its filter.
    public func filter(_ filter: Filter) -> Query {
        var copy = self
        copy.filter = self.filter.map { .and([$0, filter]) } ?? filter
        return copy
    }

    /// The query ordered by `field` after its current order.
    public func order(by field: String, descending: Bool = false) -> Query {
        var copy = self
        copy.orders.append(Order(field, descending: descending))
        return copy
    }

    public func limit(_ count: Int, offset: Int? = nil) -> Query {
        var copy = self
        copy.limit = count
        if let offset { copy.offset = offset }
        return copy
    }

    public func offset(_ count: Int) -> Query {
        var copy = self
        copy.offset = count
        return copy
    }

    /// The query's next page after the record `id` (``after``): keyset pagination, stable
    /// while records before the cursor come and go.
    ///
    /// ```swift
    /// let page = try store.query(query.limit(20))
    /// let next = try store.query(query.limit(20).after(page.last!.id))
    /// ```
    public func after(_ id: String) -> Query {
        var copy = self
        copy.after = id
        return copy
    }
}

extension ScalarValue {
    /// A date as a declared `date` field holds it: seconds since 2001-01-01.
    public static func date(_ date: Date) -> ScalarValue { .double(date.timeIntervalSinceReferenceDate) }
}

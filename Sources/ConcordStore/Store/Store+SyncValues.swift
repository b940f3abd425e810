import ConcordCore
import Foundation
import GRDB

/// The sync engine's own state: values it keeps in the store, by key (`concord_sync`).
extension Store {
    /// A value of the sync engine's own state, or nil.
    public func syncValue(_ key: String) throws(ConcordError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM concord_sync WHERE key = ?", arguments: [key]) }
    }

    /// The sync engine's values whose key starts with `prefix`, by key without the prefix.
    public func syncValues(prefix: String) throws(ConcordError) -> [String: String] {
        try read { db in
            var values: [String: String] = [:]
            let rows = try Row.fetchAll(
                db, sql: "SELECT key, value FROM concord_sync WHERE substr(key, 1, length(?)) = ?", arguments: [prefix, prefix])
            for row in rows {
                let key: String = row["key"]
                values[String(key.dropFirst(prefix.count))] = row["value"]
            }
            return values
        }
    }

    /// Sets (or, with nil, removes) a value of the sync engine's own state.
    public func setSyncValue(_ key: String, _ value: String?) throws(ConcordError) {
        try writeDatabase { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_sync (key, value) VALUES (?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM concord_sync WHERE key = ?", arguments: [key])
            }
        }
    }

    /// Sets (or, with nil, removes) several sync engine values in one transaction: one
    /// durable commit for all of them, however many.
    public func setSyncValues(_ changes: [(key: String, value: String?)]) throws(ConcordError) {
        guard !changes.isEmpty else { return }
        try writeDatabase { db in
            for (key, value) in changes {
                if let value {
                    try db.execute(sql: "INSERT OR REPLACE INTO concord_sync (key, value) VALUES (?, ?)", arguments: [key, value])
                } else {
                    try db.execute(sql: "DELETE FROM concord_sync WHERE key = ?", arguments: [key])
                }
            }
        }
    }
}

import ConcordCore
import Foundation
import GRDB

/// The settings an application keeps with a store, as text by key (`concord_settings`): the
/// `concord` command line keeps its remote there. The store never reads them.
extension Store {
    /// The setting `key`, or nil.
    public func setting(_ key: String) throws(ConcordError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM concord_settings WHERE key = ?", arguments: [key]) }
    }

    /// Sets (or, with nil, removes) the setting `key`.
    public func setSetting(_ key: String, _ value: String?) throws(ConcordError) {
        try writeDatabase { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_settings (key, value) VALUES (?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM concord_settings WHERE key = ?", arguments: [key])
            }
        }
    }
}

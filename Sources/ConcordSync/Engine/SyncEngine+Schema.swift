import ConcordCore
import ConcordRemote
import ConcordStore
import Foundation

extension SyncEngine {
    /// How many heads one listing reads again for their schema versions, at most: the rest
    /// wait for the next sync.
    static let schemaRereadsPerListing = 64

    /// Tells the store what every listed head says of its replica's schema versions
    /// (``ConcordStore/Store/noteSchemaVersions(_:of:)``): the heads this listing read, and
    /// the heads rewritten under a name this replica already knows — a replica that
    /// declared a newer version or a minimum, with nothing new to push, rewrites its head in
    /// place — which the listing shows changed (size or time) since they were last read.
    /// A head never read here is not read for this: heads of replicas seen for the first
    /// time, or with news, are read by the listing itself.
    func noteSchemaVersions(_ heads: Heads, _ signatures: [String: ListingSignature]) async throws(ConcordError) {
        let key = "schema.heads"
        let before = (try store.setting(key)).flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) } ?? [:]
        var marks = before
        var rereads = 0
        for (replica, seq) in heads.latest.sorted(by: { $0.key < $1.key }) where replica != store.replicaID {
            let path = RemoteLayout.head(replica, seq: seq)
            let mark = signatures[path].map { "\(path) \($0.size.map(String.init) ?? "-") \($0.modified.map(String.init) ?? "-")" }
            if let head = heads.read[replica] {
                try store.noteSchemaVersions(head.schema, of: replica)
                marks[replica.description] = mark
                continue
            }
            // Read again only a head read before whose listing changed since.
            guard let mark, let last = before[replica.description], last != mark, !heads.unopened.contains(replica),
                  rereads < Self.schemaRereadsPerListing else { continue }
            rereads += 1
            do throws(ConcordError) {
                guard let head = try await readHead(replica, seq: seq) else { continue }
                try store.noteSchemaVersions(head.schema, of: replica)
                marks[replica.description] = mark
            } catch where Self.isDamage(error) {
                marks[replica.description] = mark  // reported by the listing's own reads; not read again while unchanged
            }
        }
        if marks != before, let json = try? JSONEncoder().encode(marks) {
            try store.setSetting(key, String(decoding: json, as: UTF8.self))
        }
    }
}

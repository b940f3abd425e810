import ConcordCodec
import ConcordCore
@testable import ConcordSync
import Foundation
import Testing

/// The head and the snapshot framing carry a version before their first change
/// (docs/FORMAT.md §8.3): what this release writes is unchanged, and what a later format
/// writes is refused as a newer format (`unsupportedVersion`, "upgrade Concord") rather
/// than misread.
@Suite struct FormatVersionTests {
    static let replica = ReplicaID(high: 0xf0, low: 1)

    static func head() -> Head {
        Head(replica: replica.description, seq: 3, device: "laptop", syncedAt: 1_700_000_000_000, applied: [replica.description: 3], vector: [replica.description: 42])
    }

    @Test func aHeadThisReleaseWritesHasNoFormatKeyAndReadsBack() throws {
        let json = Self.head().json()
        #expect(!String(decoding: json, as: UTF8.self).contains("format"))
        #expect(try Head.decode(json, path: "heads/x") == Self.head())
    }

    @Test func aHeadOfAnotherFormatIsRefusedAsNewerAndAnUnknownKeyIsIgnored() throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(Self.head().json())) as? [String: Any])
        object["later"] = ["an": "addition"]
        #expect(try Head.decode(Array(try JSONSerialization.data(withJSONObject: object)), path: "heads/x") == Self.head())
        object["format"] = 2
        let later = Array(try JSONSerialization.data(withJSONObject: object))
        do throws(ConcordError) {
            _ = try Head.decode(later, path: "heads/x")
            Issue.record("a head of format 2 was read")
        } catch {
            #expect(error.code == .unsupportedVersion && error.message.contains("format 2") && error.message.contains("upgrade Concord"), "\(error)")
        }
        object["format"] = 1
        #expect(try Head.decode(Array(try JSONSerialization.data(withJSONObject: object)), path: "heads/x") == {
            var head = Self.head()
            head.format = 1
            return head
        }())
    }

    @Test func aSnapshotFramingOfALaterVersionIsRefusedAsNewer() throws {
        let contents = SnapshotContents(state: StoreState(), appliedSeqs: [Self.replica: 7])
        let bytes = try SnapshotObjectCodec.encode(contents)
        #expect(bytes[0] == 0, "this release writes framing version 0")
        #expect(try SnapshotObjectCodec.decode(bytes, path: "snapshots/x").appliedSeqs == [Self.replica: 7])
        var later = bytes
        later[0] = 1
        do throws(ConcordError) {
            _ = try SnapshotObjectCodec.decode(later, path: "snapshots/x")
            Issue.record("a snapshot of framing version 1 was read")
        } catch {
            #expect(error.code == .unsupportedVersion && error.message.contains("framing version 1"), "\(error)")
        }
    }
}

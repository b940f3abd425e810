import ConcordCore
import ConcordCrypto
import Foundation

/// A member's role in a shared store. Owners manage members and write; writers write;
/// readers only read (they hold the store key, but whatever they write is rejected).
public struct MemberRole: Hashable, Sendable, CustomStringConvertible {
    /// `owner`, `writer` or `reader`.
    public let name: String

    /// Manages members (adds, removes) and writes.
    public static let owner = MemberRole(name: "owner")
    /// Writes batches, heads and snapshots.
    public static let writer = MemberRole(name: "writer")
    /// Reads only.
    public static let reader = MemberRole(name: "reader")

    /// The role named `name`; nil for any other word.
    public init?(_ name: String) {
        guard ["owner", "writer", "reader"].contains(name) else { return nil }
        self.name = name
    }

    private init(name: String) { self.name = name }

    /// Whether a member of this role may write objects.
    public var canWrite: Bool { self != .reader }
    /// The role's name.
    public var description: String { name }
}

/// One membership operation of a shared store, as its owner signed it (docs/ARCHITECTURE.md
/// §5, "Members"). Its body is JSON with sorted keys; the signature covers the exact body
/// bytes, which the log keeps as they were signed.
///
/// - `share`: the issuer turns the store into a shared one and becomes its first owner;
///   `cut` is, per replica, the last seq of the unsigned history it had (accepted unsigned).
/// - `add`: `member` gets `role` under `name` (again: its role or name changes).
/// - `remove`: `member` is removed. `cut` is, per replica that wrote as the member, the
///   last seq the issuer had applied; `opCut` the member's last own operation it had seen.
///   Anything the member signs past these is rejected. Removal is final for that key.
struct MembershipOperation: Codable, Hashable, Sendable {
    var action: String
    /// The store the operation belongs to (hex id): an operation is never replayed elsewhere.
    var store: String
    /// The issuer's public identity (`cpk1…`).
    var issuer: String
    /// The issuer's own count of its operations, from 1.
    var counter: UInt64
    /// A Lamport stamp: past every operation the issuer had seen.
    var lamport: UInt64
    var member: String?
    var name: String?
    var role: String?
    var cut: [String: UInt64]?
    var opCut: UInt64?

    static let share = "share"
    static let add = "add"
    static let remove = "remove"

    /// The body's bytes (JSON, sorted keys).
    func body() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try! encoder.encode(self))
    }

    /// The cut as replica ids (entries that are not ids are dropped).
    var replicaCut: [ReplicaID: UInt64] {
        Dictionary((cut ?? [:]).compactMap { key, seq in ReplicaID(hex: key).map { ($0, seq) } }, uniquingKeysWith: max)
    }

    static func hexKeyed(_ cut: [ReplicaID: UInt64]) -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: cut.map { ($0.key.description, $0.value) })
    }
}

/// A membership operation with its owner's signature, as a log keeps it.
struct SignedOperation: Hashable, Sendable {
    let body: [UInt8]
    let signature: [UInt8]
    let operation: MembershipOperation
    let issuer: PublicIdentity

    static let domain = Array("concord membership operation v1\0".utf8)

    /// Signs `operation` with `identity` (which must be its issuer).
    init(signing operation: MembershipOperation, with identity: DeviceIdentity) {
        body = operation.body()
        signature = identity.sign(Self.domain + body)
        self.operation = operation
        issuer = identity.publicIdentity
    }

    /// Reads and checks a signed body: its signature by the issuer it names, and its store.
    /// Throws `authenticationFailed` for a forged or altered operation, `malformed` for one
    /// that does not parse.
    init(body: [UInt8], signature: [UInt8], store: StoreID) throws(ConcordError) {
        guard let operation = try? JSONDecoder().decode(MembershipOperation.self, from: Data(body)),
              let issuer = try? PublicIdentity(string: operation.issuer) else {
            throw ConcordError(.malformed, "a membership operation does not parse")
        }
        guard issuer.isValidSignature(signature, of: Self.domain + body) else {
            throw ConcordError(.authenticationFailed, "a membership operation of \(operation.issuer.prefix(16))… has a signature that does not check: forged or altered")
        }
        guard operation.store == store.hex else {
            throw ConcordError(.authenticationFailed, "a membership operation belongs to another store (\(operation.store)): replayed from elsewhere")
        }
        self.body = body
        self.signature = signature
        self.operation = operation
        self.issuer = issuer
    }

    /// The order every replica applies operations in: Lamport stamp, then issuer, then counter.
    static func precedes(_ a: SignedOperation, _ b: SignedOperation) -> Bool {
        (a.operation.lamport, a.operation.issuer, a.operation.counter) < (b.operation.lamport, b.operation.issuer, b.operation.counter)
    }
}

/// One owner's membership log, `members/<tag>`: `{"format":1,"ops":[{"body":"<hex>","signature":"<hex>"}…]}`,
/// sealed under the `members` sub-key for its name.
enum MemberLog {
    static func encode(_ operations: [SignedOperation]) -> [UInt8] {
        let entries = operations.map { "{\"body\":\"\(Hex.encode($0.body))\",\"signature\":\"\(Hex.encode($0.signature))\"}" }
        return Array("{\"format\":1,\"ops\":[\(entries.joined(separator: ","))]}".utf8)
    }

    /// The operations of a log; each that does not check is left out and named in `rejected`.
    static func decode(_ bytes: [UInt8], store: StoreID, path: String) throws(ConcordError) -> (operations: [SignedOperation], rejected: [String]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              object["format"] as? Int == 1, let entries = object["ops"] as? [[String: Any]] else {
            throw ConcordError(.malformed, "membership log \(path) does not parse")
        }
        var operations: [SignedOperation] = []
        var rejected: [String] = []
        for entry in entries {
            guard let body = (entry["body"] as? String).flatMap(Hex.decode), let signature = (entry["signature"] as? String).flatMap(Hex.decode) else {
                rejected.append("\(path): unauthentic: an entry does not parse")
                continue
            }
            do throws(ConcordError) {
                operations.append(try SignedOperation(body: body, signature: signature, store: store))
            } catch {
                rejected.append("\(path): unauthentic: \(error.message)")
            }
        }
        return (operations, rejected)
    }
}

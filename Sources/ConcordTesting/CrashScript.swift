import ConcordCore

/// A deterministic sequence of store operations for crash tests: local writes, file
/// attachments, seals, and remote deltas from a peer. A child process runs it against a store and is killed at a
/// random moment; the test replays it on a core ``/ConcordCore/Replica`` to know every state the store
/// may legitimately be in.
public struct CrashScript: Sendable {
    /// One step: one store transaction.
    public enum Step: Sendable {
        case set(RecordRef, String, ScalarValue)
        case put(RecordRef, [String: FieldWrite])
        case add(RecordRef, String, ScalarValue)
        case remove(RecordRef, String, ScalarValue)
        case delete(RecordRef)
        /// Attach these bytes as a file to the field (the store adds the blob, then sets the
        /// field in one transaction); the old file of the field becomes history.
        case attach(RecordRef, String, [UInt8])
        case seal
        case apply(Delta)
    }

    public let steps: [Step]
    /// The physical time of step `k` (1-based) is `baseMillis + k * 7`.
    public static let baseMillis: UInt64 = 1_767_225_600_000

    public static func now(step: Int) -> UInt64 { baseMillis + UInt64(step) * 7 }

    /// The collection of every record the script writes (the crash child declares it).
    public static let collection = "t"

    public init(seed: UInt64, count: Int) {
        var random = SeededGenerator(seed: seed)
        var peer = Replica(id: ReplicaID(high: 0xfeed, low: seed))
        var steps: [Step] = []
        let refs = (0..<6).map { RecordRef(collection: Self.collection, id: "r\($0)") }
        for index in 1...count {
            let ref = random.pick(refs)
            let value = ScalarValue.int(Int64(random.int(0...99)))
            switch random.int(0...10) {
            case 0, 1, 2: steps.append(.set(ref, random.pick(["a", "b"]), value))
            case 3: steps.append(.put(ref, ["a": .scalar(value), "b": .scalar(.string("s\(index)"))]))
            case 4: steps.append(.add(ref, "s", value))
            case 5: steps.append(.remove(ref, "s", value))
            case 6: steps.append(.delete(ref))
            case 7: steps.append(.seal)
            case 8:
                // Mostly small files, a quarter over the 64 KiB of one stream chunk.
                let size = random.int(0...3) == 0 ? random.int(40_000...200_000) : random.int(1...2_000)
                steps.append(.attach(ref, "f", Array("file \(index) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: size)))
            default:
                try! peer.set(ref, "a", value, now: Self.now(step: index))
                steps.append(.apply(peer.seal()!))
            }
        }
        self.steps = steps
    }

    /// The content of the `index`th file the crash child's `export` mode exports.
    public static func exportedFile(_ index: Int) -> [UInt8] {
        Array("exported file \(index) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 2_000 * index)
    }

    /// A file version a step superseded: what the store's history must hold.
    public struct Superseded: Hashable, Sendable {
        public let ref: RecordRef
        public let field: String
        public let file: FileRef
        public let stamp: Stamp
        public let at: UInt64

        public init(ref: RecordRef, field: String, file: FileRef, stamp: Stamp, at: UInt64) {
            self.ref = ref
            self.field = field
            self.file = file
            self.stamp = stamp
            self.at = at
        }
    }

    /// Runs steps `1...count` on a core replica, as the store runs them. `fileRef` names
    /// an attached file's bytes as the store would (its content hash and size).
    public func replay(_ replica: inout Replica, through count: Int, fileRef: ([UInt8]) -> FileRef) throws(ConcordError) {
        var sealed: [Delta] = []
        var applied: [ReplicaID: UInt64] = [:]
        var superseded: [Superseded] = []
        try replay(&replica, through: count, fileRef: fileRef, sealed: &sealed, applied: &applied, superseded: &superseded)
    }

    /// Runs steps `1...count` on a core replica, as the store runs them, collecting the
    /// deltas it sealed (in seq order), per origin the seq of the newest delta applied, and
    /// every file version a step superseded (the store's history).
    public func replay(
        _ replica: inout Replica, through count: Int, fileRef: ([UInt8]) -> FileRef,
        sealed: inout [Delta], applied: inout [ReplicaID: UInt64], superseded: inout [Superseded]
    ) throws(ConcordError) {
        for index in 0..<count {
            let now = Self.now(step: index + 1)
            let touched: RecordRef? = switch steps[index] {
            case let .set(ref, _, _), let .put(ref, _), let .add(ref, _, _), let .remove(ref, _, _), let .delete(ref), let .attach(ref, _, _): ref
            case .seal, .apply: nil
            }
            let before = touched.map { Self.files(of: replica.state, $0) } ?? []
            switch steps[index] {
            case let .set(ref, field, value): try replica.set(ref, field, value, now: now)
            case let .put(ref, fields): try replica.put(ref, fields, now: now)
            case let .add(ref, field, value): try replica.add(ref, field, value, now: now)
            case let .remove(ref, field, value): try replica.remove(ref, field, value, now: now)
            case let .delete(ref): try replica.delete(ref, now: now)
            case let .attach(ref, field, bytes): try replica.put(ref, [field: .file(fileRef(bytes))], now: now)
            case .seal: if let delta = replica.seal() { sealed.append(delta) }
            case let .apply(delta):
                try replica.apply(delta)
                applied[delta.origin] = max(applied[delta.origin] ?? 0, delta.seq)
            }
            if let ref = touched {
                let after = Set(Self.files(of: replica.state, ref).map(\.stamp))
                for reference in before where !after.contains(reference.stamp) {
                    superseded.append(Superseded(ref: ref, field: "f", file: reference.file, stamp: reference.stamp, at: now))
                }
            }
        }
    }

    /// The file entries of field `f` of `ref`.
    static func files(of state: StoreState, _ ref: RecordRef) -> [FileReference] {
        guard let record = state.records[ref] else { return [] }
        return record.slots.filter { $0.key == .field("f") }.values.flatMap(\.entries).fileReferences
    }
}

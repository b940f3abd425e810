import ConcordCore

/// Builds reachable states from a list of operation codes: the input shape property-based
/// tests generate and shrink. Each code picks a replica and an operation; deliveries apply
/// sealed deltas when their dependencies are met.
///
/// Every delivery is checked against the definition of delta application: applying a
/// delta must equal joining its state (docs/ARCHITECTURE.md §2). Violations are returned, not trapped.
public struct OperationHistory: Sendable {
    public private(set) var replicas: [Replica]
    /// Every delta sealed so far.
    public private(set) var deltas: [Delta] = []
    /// Descriptions of deliveries where `apply` differed from `join(delta.state)`.
    public private(set) var applyJoinViolations: [String] = []
    private var now: UInt64 = 1_767_225_600_000

    public init(replicaCount: Int = 3) {
        replicas = (1...replicaCount).map { Replica(id: ReplicaID(high: UInt64($0) << 32, low: UInt64($0))) }
    }

    /// Runs `codes` and returns the history.
    public static func run(_ codes: [Int], replicaCount: Int = 3) -> OperationHistory {
        var history = OperationHistory(replicaCount: replicaCount)
        for code in codes { history.step(code) }
        return history
    }

    static let refs = [RecordRef(collection: "c", id: "x"), RecordRef(collection: "c", id: "y")]
    static let fields = ["f", "g"]
    static let files = (1...2).map { FileRef(hash: ContentHash(bytes: [UInt8](repeating: UInt8($0), count: 32))!, size: UInt64($0)) }

    /// Performs the operation `code` names.
    public mutating func step(_ code: Int) {
        let code = abs(code)
        let r = code % replicas.count
        let operation = (code / replicas.count) % 13
        let argument = code / (replicas.count * 13)
        let ref = Self.refs[argument % 2]
        let field = Self.fields[(argument / 2) % 2]
        // Skewed clocks: replica 1 runs a day behind.
        now += UInt64(argument % 3)
        let local = r == 1 ? now - 86_400_000 : now
        switch operation {
        case 0: try! replicas[r].set(ref, field, .int(Int64(argument % 5)), now: local)
        case 1: try! replicas[r].add(ref, "s", .int(Int64(argument % 3)), now: local)
        case 2: try! replicas[r].remove(ref, "s", .int(Int64(argument % 3)), now: local)
        case 3: try! replicas[r].setFile(ref, "file", Self.files[argument % 2], now: local)
        case 4: try! replicas[r].delete(ref, now: local)
        case 5: try! replicas[r].create(ref, [field: .scalar(.string("new"))], now: local)
        case 6: try! replicas[r].keepRecord(ref, now: local)
        case 7, 8:
            if let delta = replicas[r].seal() { deltas.append(delta) }
        case 12:
            // A purge, stable or not: either way a CRDT operation the laws must hold for
            // (its delta ships the record whole). A visible record is refused.
            _ = try? replicas[r].purge([ref], now: local)
        default:
            guard !deltas.isEmpty else { return }
            deliver(deltas[argument % deltas.count], to: r)
        }
    }

    /// Applies `delta` at replica `r` if its dependencies are met, checking apply = join.
    public mutating func deliver(_ delta: Delta, to r: Int) {
        let before = replicas[r].state
        guard before.missingDependencies(of: delta) == nil else { return }
        let joined = before.joined(delta.state)
        do {
            try replicas[r].apply(delta)
        } catch {
            applyJoinViolations.append("apply of #\(delta.seq) from \(delta.origin) threw \(error)")
            return
        }
        if replicas[r].state != joined {
            applyJoinViolations.append("""
                apply ≠ join for #\(delta.seq) from \(delta.origin) at replica \(r):
                 apply: \(CanonicalDump.json(of: replicas[r].state)) \(replicas[r].state.context)
                 join:  \(CanonicalDump.json(of: joined)) \(joined.context)
                """)
        }
    }

    /// The replicas' states.
    public var states: [StoreState] { replicas.map(\.state) }
}

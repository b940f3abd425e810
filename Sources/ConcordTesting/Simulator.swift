import ConcordCore

/// An in-memory multi-replica simulation (docs/ARCHITECTURE.md §7): replicas run random mixes of every
/// operation, seal deltas, and exchange them in random causal orders with duplicates and
/// full-state (snapshot) joins, with clocks skewed by up to a day. Everything is drawn from
/// one ``SeededGenerator``, so a seed replays the same trace exactly.
public struct Simulator {
    /// What one run does.
    public struct Configuration: Sendable {
        public var seed: UInt64
        /// How many replicas; nil draws 2–6 from the seed.
        public var replicaCount: Int?
        /// Random steps before the final quiescent exchange.
        public var steps: Int
        /// The largest clock skew of a replica, in milliseconds (default: one day).
        public var maxSkew: Int64

        /// A checkpoint halfway: replica 0 creates and deletes a scratch record and deletes
        /// every visible record with the first id, every delta
        /// reaches every replica, and replica 0 purges — with `true`, every dead record
        /// (each deletion is causally stable then); with `false`, only the scratch record,
        /// so both runs take the same stamps and random draws. Nil: no checkpoint. Runs
        /// that differ only here must print the same dumps: a stable purge is invisible.
        public var purgeAtCheckpoint: Bool?

        public init(
            seed: UInt64, replicaCount: Int? = nil, steps: Int = 60, maxSkew: Int64 = 86_400_000,
            purgeAtCheckpoint: Bool? = nil
        ) {
            self.seed = seed
            self.replicaCount = replicaCount
            self.steps = steps
            self.maxSkew = maxSkew
            self.purgeAtCheckpoint = purgeAtCheckpoint
        }
    }

    /// What one run produced.
    public struct Outcome: Sendable {
        public let seed: UInt64
        /// Each replica's canonical dump after quiescence.
        public let dumps: [String]
        /// The dump of the reference model: the join of every delta's state, in any order.
        public let referenceDump: String
        /// Whether every replica's state equals the reference state exactly.
        public let statesEqualReference: Bool
        /// Operations performed, one line each, for replay and diagnosis.
        public let trace: [String]
        /// How often each kind of event happened.
        public let counts: [String: Int]
        /// Every delta sealed during the run, in sealing order.
        public let deltas: [Delta]
        /// The final state of replica 0.
        public let finalState: StoreState

        /// True when every dump equals the reference dump and every state the reference state.
        public var converged: Bool { statesEqualReference && dumps.allSatisfy { $0 == referenceDump } }
    }

    static let collections = ["notes", "tasks"]
    static let ids = ["a", "b", "c"]
    static let scalarFields = ["title", "level"]
    static let setField = "tags"
    static let fileField = "doc"
    static let tags: [ScalarValue] = [.string("red"), .string("blue"), .int(7)]
    /// File contents: two distinct hashes plus one repeated, so same-content writes occur.
    static let files: [FileRef] = (1...3).map { seed in
        FileRef(hash: ContentHash(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })!, size: UInt64(seed * 100))
    }

    public let configuration: Configuration

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the simulation.
    public func run() -> Outcome {
        var random = SeededGenerator(seed: configuration.seed)
        let count = configuration.replicaCount ?? random.int(2...6)
        var replicas = (0..<count).map { _ in Replica(id: .random(using: &random)) }
        let skews: [Int64] = (0..<count).map { _ in
            random.pick([-configuration.maxSkew, 0, configuration.maxSkew, Int64(random.int(-5_000...5_000))])
        }
        var now: UInt64 = 1_767_225_600_000
        var published: [Delta] = []
        var trace: [String] = []
        var counts: [String: Int] = [:]
        var snapshots: [StoreState?] = Array(repeating: nil, count: count)

        func log(_ replica: Int, _ text: String, _ kind: String) {
            trace.append("r\(replica) \(text)")
            counts[kind, default: 0] += 1
        }

        func exchangeEverything() {
            for r in 0..<count {
                if let delta = replicas[r].seal() { published.append(delta) }
            }
            var progress = true
            while progress {
                progress = false
                for r in 0..<count {
                    for delta in random.shuffled(published) where !replicas[r].state.hasApplied(delta) {
                        if (try? replicas[r].apply(delta)) == .applied { progress = true }
                    }
                }
            }
        }

        for step in 0..<configuration.steps {
            if let purgeAll = configuration.purgeAtCheckpoint, step == configuration.steps / 2 {
                let scratch = RecordRef(collection: "scratch", id: "checkpoint")
                let local = UInt64(Int64(now) + skews[0])
                try! replicas[0].set(scratch, "n", .int(1), now: local)
                try! replicas[0].delete(scratch, now: local)
                exchangeEverything()
                // More dead records, so the second half re-creates and updates purged ones.
                for ref in replicas[0].state.visibleRecords.map(\.ref) where ref.id == Self.ids[0] {
                    try! replicas[0].delete(ref, now: local)
                }
                exchangeEverything()
                let dead = purgeAll ? replicas[0].state.records.filter { !$0.value.isVisible }.map(\.key) : [scratch]
                do {
                    try replicas[0].purge(dead, now: local)
                } catch {
                    preconditionFailure("purging dead records failed: \(error)")
                }
                log(0, "purge \(dead.count) dead records", "purge")
                exchangeEverything()
            }
            now += UInt64(random.int(0...40))
            let r = random.int(0...(count - 1))
            let local = UInt64(Int64(now) + skews[r])
            let ref = RecordRef(collection: random.pick(Self.collections), id: random.pick(Self.ids))
            let roll = random.int(0...99)
            switch roll {
            case 0..<18:
                let field = random.pick(Self.scalarFields)
                let value = randomScalar(&random)
                try! replicas[r].set(ref, field, value, now: local)
                log(r, "set \(ref) \(field)=\(value)", "set")
            case 18..<28:
                let tag = random.pick(Self.tags)
                try! replicas[r].add(ref, Self.setField, tag, now: local)
                log(r, "add \(ref) \(tag)", "add")
            case 28..<35:
                let tag = random.pick(Self.tags)
                try! replicas[r].remove(ref, Self.setField, tag, now: local)
                log(r, "remove \(ref) \(tag)", "remove")
            case 35..<45:
                let file = random.pick(Self.files)
                try! replicas[r].setFile(ref, Self.fileField, file, now: local)
                log(r, "setFile \(ref) \(file.hash.hex.prefix(6))", "setFile")
            case 45..<51:
                try! replicas[r].delete(ref, now: local)
                log(r, "delete \(ref)", "delete")
            case 51..<55:
                let fields: [String: FieldWrite] = [
                    random.pick(Self.scalarFields): .scalar(randomScalar(&random)),
                    Self.setField: .set([random.pick(Self.tags)]),
                ]
                try! replicas[r].create(ref, fields, now: local)
                log(r, "create \(ref)", "create")
            case 55..<60:
                let conflicts = replicas[r].state.conflicts
                if let fork = conflicts.first(where: { $0.kind == Conflict.Kind.fileFork }) {
                    if random.chance(0.7) {
                        let keep = random.pick(fork.versions)
                        _ = try? replicas[r].keepVersion(fork.ref, fork.field!, hash: keep.file.hash, now: local)
                        log(r, "keep \(fork.ref) \(keep.file.hash.hex.prefix(6))", "resolveFork")
                    } else {
                        try! replicas[r].setFile(fork.ref, fork.field!, random.pick(Self.files), now: local)
                        log(r, "merge \(fork.ref)", "resolveFork")
                    }
                } else if let conflict = conflicts.first(where: { $0.kind == Conflict.Kind.deleteUpdate }) {
                    if random.chance(0.5) {
                        try! replicas[r].keepRecord(conflict.ref, now: local)
                        log(r, "keepRecord \(conflict.ref)", "ackDeleteUpdate")
                    } else {
                        try! replicas[r].delete(conflict.ref, now: local)
                        log(r, "redelete \(conflict.ref)", "ackDeleteUpdate")
                    }
                }
            case 60..<72:
                if let delta = replicas[r].seal() {
                    published.append(delta)
                    log(r, "seal #\(delta.seq) (\(delta.entryCount) entries)", "seal")
                }
            case 72..<96:
                deliver(to: r, &replicas, published, &random, log: log)
            default:
                let other = random.int(0...(count - 1))
                if other != r, let snapshot = snapshots[other] {
                    replicas[r].join(snapshot: snapshot)
                    log(r, "join snapshot of r\(other)", "snapshotJoin")
                }
            }
            for (index, replica) in replicas.enumerated() {
                replica.state._checkInvariants()
                // The newest snapshot each replica could have written (after a seal).
                if let snapshot = replica.snapshot { snapshots[index] = snapshot }
            }
        }

        // Quiescence: everyone seals, then deltas flow until nothing more applies.
        exchangeEverything()

        var reference = StoreState()
        for delta in random.shuffled(published) { reference.join(delta.state) }
        let referenceDump = CanonicalDump.json(of: reference)
        return Outcome(
            seed: configuration.seed,
            dumps: replicas.map { CanonicalDump.json(of: $0.state) },
            referenceDump: referenceDump,
            statesEqualReference: replicas.allSatisfy { $0.state == reference },
            trace: trace,
            counts: counts.merging(
                ["forksAtEnd": reference.conflicts.filter { $0.kind == Conflict.Kind.fileFork }.count,
                 "deleteUpdatesAtEnd": reference.conflicts.filter { $0.kind == Conflict.Kind.deleteUpdate }.count],
                uniquingKeysWith: +),
            deltas: published,
            finalState: replicas[0].state
        )
    }

    private func deliver(
        to r: Int, _ replicas: inout [Replica], _ published: [Delta], _ random: inout SeededGenerator,
        log: (Int, String, String) -> Void
    ) {
        guard !published.isEmpty else { return }
        let delta = random.pick(published)
        guard delta.origin != replicas[r].id else { return }
        let before = replicas[r].state
        do {
            switch try replicas[r].apply(delta) {
            case .applied:
                log(r, "apply #\(delta.seq) from \(delta.origin.description.prefix(6))", "apply")
            case .alreadyApplied:
                precondition(replicas[r].state == before, "a duplicate delivery changed the state")
                log(r, "duplicate #\(delta.seq)", "duplicate")
            }
        } catch {
            precondition(replicas[r].state == before, "a refused delta changed the state")
            log(r, "buffer #\(delta.seq) (\(error.code))", "notReady")
        }
    }

    private func randomScalar(_ random: inout SeededGenerator) -> ScalarValue {
        switch random.int(0...5) {
        case 0: .null
        case 1: .bool(random.chance(0.5))
        case 2: .int(Int64(random.int(-1_000...1_000)))
        case 3: .double(Double(random.int(-100...100)) / 8)
        case 4: .string(random.pick(["Zelda", "Link", "é", "a\"b", ""]))
        default: .bytes([UInt8(random.int(0...255)), 0])
        }
    }
}

extension SeededGenerator {
    /// The elements of `collection` in a random order.
    public mutating func shuffled<C: Collection>(_ collection: C) -> [C.Element] {
        collection.shuffled(using: &self)
    }
}

import ConcordCore
import ConcordRemote
import Synchronization

extension ConcordError.Code {
    /// A ``FaultyRemote`` simulated a crash of the process using it: the call (and every
    /// later one, until ``FaultyRemote/restart()``) did not return normally. Test code only.
    public static let simulatedCrash = ConcordError.Code("simulatedCrash")
}

/// A ``/ConcordRemote/Remote`` that wraps another and misbehaves the way dumb storage and sync clients do
/// (docs/ARCHITECTURE.md §4, §7): calls that fail, are slow, or lose their acknowledgement; puts that
/// are lost or torn; deletes that are lost; listings that are stale, incomplete, duplicated
/// or reordered; and a crash at a chosen mutation.
///
/// Deterministic: every random choice comes from a ``SeededGenerator`` seeded with
/// ``seed``, so a seed replays the same faults for the same sequence of calls. Each call
/// has its own generator. By default it is drawn from the shared one when the call starts,
/// so concurrent calls replay as long as they *start* in the same order; with
/// `drawsPerCall`, it is derived from the seed, the call's kind and path, and how many
/// calls of that kind and path came before — so each call meets the same faults in
/// whatever order concurrent calls start (only the armed crash still counts mutations in
/// start order). Listings of the wrapped remote are sorted by path before faults are
/// applied, so its own listing order cannot change the outcome.
///
/// Every call is counted (``counts``) — including ones that fail or crash — so a benchmark
/// can report requests per sync; every injected fault is described in ``log``.
///
/// The plan of faults, the crash effects and the counts are in `FaultyRemote+Types.swift`.
public final class FaultyRemote: Remote {
    /// How many earlier listings per prefix are remembered for stale listings.
    public static let rememberedListings = 8

    /// The remote every call is passed on to (unless a fault says otherwise).
    public let base: any Remote
    /// The seed of every random choice.
    public let seed: UInt64

    private let state: Mutex<State>

    /// Whether each call's generator comes from its kind, path and occurrence rather than
    /// from the order calls start in.
    public let drawsPerCall: Bool

    private struct State: Sendable {
        var plan: Plan
        var generator: SeededGenerator
        /// Per call kind and path, the calls made (with `drawsPerCall`).
        var occurrences: [String: UInt64] = [:]
        var counts = Counts()
        /// Mutations still allowed before the armed crash; nil when no crash is armed.
        var crashCountdown: Int?
        var crashEffect = CrashEffect.random
        var crashed = false
        var listings: [String: [[RemoteObject]]] = [:]
        var log: [String] = []
    }

    /// Wraps `base`; faults follow `plan` and every random choice comes from `seed`;
    /// `drawsPerCall`: see the type's description.
    public init(wrapping base: any Remote, seed: UInt64, plan: Plan = .none, drawsPerCall: Bool = false) {
        self.base = base
        self.seed = seed
        self.drawsPerCall = drawsPerCall
        state = Mutex(State(plan: plan, generator: SeededGenerator(seed: seed)))
    }

    /// The seed of a call's generator with `drawsPerCall`: FNV-1a over the seed, the call's
    /// kind and path and its occurrence, mixed once more by the generator itself.
    static func callSeed(_ seed: UInt64, _ key: String, _ occurrence: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: seed >> UInt64(shift))) }
        for byte in key.utf8 { mix(byte) }
        for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: occurrence >> UInt64(shift))) }
        var generator = SeededGenerator(seed: hash)
        return generator.next()
    }

    /// The faults injected from now on.
    public var plan: Plan {
        get { state.withLock { $0.plan } }
        set { state.withLock { $0.plan = newValue } }
    }

    /// Stops injecting faults ("after faults stop", docs/ARCHITECTURE.md §7): the plan becomes
    /// ``Plan/none`` and an armed crash point is disarmed. A crash that already happened
    /// lasts until ``restart()``, as a dead process stays dead.
    public func faultsOff() {
        state.withLock {
            $0.plan = .none
            $0.crashCountdown = nil
        }
    }

    /// Arms a crash: the next `n` mutations (puts, stream puts, deletes) proceed; the one
    /// after them — the (n+1)-th from now, so `n == 0` crashes at the next mutation — leaves
    /// `effect` in storage and throws ``ConcordCore/ConcordError/Code/simulatedCrash``, and so does every
    /// later call of any kind until ``restart()``.
    public func crash(afterMutations n: Int, effect: CrashEffect = .random) {
        precondition(n >= 0, "a crash point counts mutations from now; it cannot be negative")
        state.withLock {
            $0.crashCountdown = n
            $0.crashEffect = effect
        }
    }

    /// Ends a simulated crash (the process came back) and disarms any crash point.
    public func restart() {
        state.withLock {
            $0.crashed = false
            $0.crashCountdown = nil
        }
    }

    /// Whether a simulated crash is in effect.
    public var isCrashed: Bool { state.withLock { $0.crashed } }

    /// Calls made and faults injected since creation or ``resetCounts()``.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Sets every counter back to zero (for example before measuring one idle sync).
    public func resetCounts() { state.withLock { $0.counts = Counts() } }

    /// One line per injected fault, in order, numbered by request: what a failing seed did.
    public var log: [String] { state.withLock { $0.log } }

    // MARK: Storage that goes back in time

    /// A copy of the objects the wrapped remote holds under a prefix, taken with
    /// ``copy(prefix:)``: what a backup, a snapshot of a NAS share, or an earlier version
    /// of a bucket holds.
    public struct Copy: Sendable {
        /// The prefix copied (`""`: the whole store).
        public let prefix: String
        /// Every object under it, by path.
        public let objects: [String: [UInt8]]
    }

    /// Copies every object the wrapped remote holds under `prefix`, reading it directly
    /// (no faults, not counted).
    public func copy(prefix: String = "") async throws(ConcordError) -> Copy {
        var objects: [String: [UInt8]] = [:]
        for object in try await base.list(prefix: prefix) {
            var bytes: [UInt8] = []
            if try await base.getStream(object.path, write: { (chunk: [UInt8]) throws(ConcordError) in bytes += chunk }) {
                objects[object.path] = bytes
            }
        }
        return Copy(prefix: prefix, objects: objects)
    }

    /// The wrapped remote goes back to `copy` under its prefix — restored from a backup,
    /// rolled back by bucket versioning or a sync client: objects written since are
    /// deleted, and objects changed or deleted since come back with the copy's bytes.
    public func rollback(to copy: Copy) async throws(ConcordError) {
        for object in try await base.list(prefix: copy.prefix) where copy.objects[object.path] == nil {
            try await base.delete(object.path)
        }
        for (path, bytes) in copy.objects.sorted(by: { $0.key < $1.key }) {
            var sent = false
            try await base.putStream(path, read: { () throws(ConcordError) -> [UInt8] in
                defer { sent = true }
                return sent ? [] : bytes
            })
        }
        state.withLock {
            $0.counts.rollbacks += 1
            $0.log.append("rollback of \(copy.prefix.isEmpty ? "the whole remote" : copy.prefix) to a copy of \(copy.objects.count) objects")
        }
    }

    /// Deletes objects behind the replicas' backs — a sync client that takes them for
    /// conflicts, a person cleaning up: each object under `prefix` goes with probability
    /// `probability`, drawn from the seed. Returns the paths deleted.
    @discardableResult
    public func vanish(prefix: String, probability: Double) async throws(ConcordError) -> [String] {
        var gone: [String] = []
        for object in try await base.list(prefix: prefix).sorted(by: Self.order) {
            guard state.withLock({ $0.generator.chance(probability) }) else { continue }
            try await base.delete(object.path)
            gone.append(object.path)
        }
        state.withLock {
            $0.counts.vanished += gone.count
            if !gone.isEmpty { $0.log.append("vanished: \(gone.joined(separator: ", "))") }
        }
        return gone
    }

    // MARK: Remote

    /// Crash, slowness, failure, lost put, torn put, lost acknowledgement — or the base's put.
    public func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        var call = try begin(.put, path)
        if let effect = call.crash {
            switch effect {
            case .applied: try? await base.put(path, bytes)
            case .torn: if let cut = call.cut(bytes.count) { try? await base.put(path, Array(bytes.prefix(cut))) }
            case .dropped, .random: break
            }
            throw crashed(call, "put \(path), which was \(effect)")
        }
        try await common(&call)
        if call.chance(call.plan.lostPut) {
            record(call, "lost put \(path)") { $0.lostPuts += 1 }
            return
        }
        if call.chance(call.plan.tornPut), let cut = call.cut(bytes.count) {
            try await base.put(path, Array(bytes.prefix(cut)))
            try tornOutcome(call, "torn put \(path): \(cut) of \(bytes.count) bytes")
            return
        }
        try await base.put(path, bytes)
        try lostAcknowledgement(&call, "put \(path)")
    }

    /// Slowness and failure, then the base's get.
    public func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        var call = try begin(.get, path)
        try await common(&call)
        return try await base.get(path)
    }

    /// Slowness and failure, then the base's bounded get (the limit is the base's to keep).
    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        var call = try begin(.get, path)
        try await common(&call)
        return try await base.get(path, limit: limit)
    }

    /// The base's anomalies, unfaulted: what stands in the storage is the storage's.
    public func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] {
        try await base.anomalies(prefix: prefix)
    }

    /// Slowness and failure; then the base's listing (sorted, and remembered for stale
    /// listings), made stale, incomplete, duplicated or reordered as the plan says.
    public func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        var call = try begin(.list, prefix)
        try await common(&call)
        let fresh = try await base.list(prefix: prefix).sorted(by: Self.order)
        let earlier = state.withLock { state in
            let earlier = state.listings[prefix] ?? []
            state.listings[prefix] = Array((earlier + [fresh]).suffix(Self.rememberedListings))
            return earlier
        }
        var listing = fresh
        if call.chance(call.plan.staleListing), !earlier.isEmpty {
            let back = call.generator.int(1...earlier.count)
            listing = earlier[earlier.count - back]
            record(call, "stale listing of \(prefix): the one from \(back) listing(s) ago, \(listing.count) instead of \(fresh.count) entries") { $0.staleListings += 1 }
        }
        if call.chance(call.plan.incompleteListing), !listing.isEmpty {
            let surely = call.generator.int(0...listing.count - 1)
            var kept: [RemoteObject] = []
            for (index, object) in listing.enumerated() where index != surely && !call.generator.chance(0.5) {
                kept.append(object)
            }
            record(call, "incomplete listing of \(prefix): \(kept.count) of \(listing.count) entries") { $0.incompleteListings += 1 }
            listing = kept
        }
        if call.chance(call.plan.duplicatedListing), !listing.isEmpty {
            let surely = call.generator.int(0...listing.count - 1)
            var repeated: [RemoteObject] = []
            for (index, object) in listing.enumerated() where index == surely || call.generator.chance(0.25) {
                repeated.append(object)
            }
            for object in repeated {
                listing.insert(object, at: call.generator.int(0...listing.count))
            }
            record(call, "duplicated listing of \(prefix): \(repeated.count) entries repeated") { $0.duplicatedListings += 1 }
        }
        if call.chance(call.plan.reorderedListing), listing.count > 1 {
            listing.shuffle(using: &call.generator)
            record(call, "reordered listing of \(prefix)") { $0.reorderedListings += 1 }
        }
        return listing
    }

    /// Crash, slowness, failure, lost delete, lost acknowledgement — or the base's delete.
    public func delete(_ path: String) async throws(ConcordError) {
        var call = try begin(.delete, path)
        if let effect = call.crash {
            if effect == .applied { try? await base.delete(path) }
            throw crashed(call, "delete \(path), which was \(effect == .applied ? "applied" : "dropped")")
        }
        try await common(&call)
        if call.chance(call.plan.lostDelete) {
            record(call, "lost delete \(path)") { $0.lostDeletes += 1 }
            return
        }
        try await base.delete(path)
        try lostAcknowledgement(&call, "delete \(path)")
    }

    /// As ``put(_:_:)``, streaming: a torn stream put stops reading at its cut.
    public func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        var call = try begin(.putStream, path)
        if let effect = call.crash {
            switch effect {
            case .applied: try? await base.putStream(path, read: read)
            case .torn: _ = try? await tornStream(path, &call, read: read)
            case .dropped, .random: break
            }
            throw crashed(call, "stream put \(path), which was \(effect)")
        }
        try await common(&call)
        if call.chance(call.plan.lostPut) {
            while try !read().isEmpty {}
            record(call, "lost stream put \(path)") { $0.lostPuts += 1 }
            return
        }
        if call.chance(call.plan.tornPut) {
            let (kept, total, ended) = try await tornStream(path, &call, read: read)
            if kept < total {
                if call.plan.tornPutReportsSuccess && !ended { while try !read().isEmpty {} }
                try tornOutcome(call, "torn stream put \(path): \(kept) of \(total)\(ended ? "" : "+") bytes")
            }
            return
        }
        try await base.putStream(path, read: read)
        try lostAcknowledgement(&call, "stream put \(path)")
    }

    /// Slowness and failure, then the base's stream get.
    public func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        var call = try begin(.getStream, path)
        try await common(&call)
        return try await base.getStream(path, write: write)
    }

    // MARK: Machinery

    private enum Kind: String {
        case put, get, list, delete, putStream = "stream put", getStream = "stream get"
        var mutates: Bool { self == .put || self == .delete || self == .putStream }
    }

    /// One call's decisions: its own generator, the plan when it started, and whether it is
    /// the call that crashes.
    private struct Call {
        let number: Int
        let plan: Plan
        var generator: SeededGenerator
        var crash: CrashEffect?

        mutating func chance(_ probability: Double) -> Bool {
            probability > 0 && generator.chance(probability)
        }

        /// A strict prefix length of `count` bytes, nil for an empty object.
        mutating func cut(_ count: Int) -> Int? {
            count > 0 ? generator.int(0...count - 1) : nil
        }
    }

    /// Counts the call, throws if crashed, decides whether this mutation crashes, and hands
    /// the call its own generator.
    private func begin(_ kind: Kind, _ path: String) throws(ConcordError) -> Call {
        try state.withLock { (state: inout State) throws(ConcordError) -> Call in
            switch kind {
            case .put: state.counts.puts += 1
            case .get: state.counts.gets += 1
            case .list: state.counts.lists += 1
            case .delete: state.counts.deletes += 1
            case .putStream: state.counts.putStreams += 1
            case .getStream: state.counts.getStreams += 1
            }
            let number = state.counts.requests
            if state.crashed {
                state.counts.crashed += 1
                throw ConcordError(.simulatedCrash, "\(kind.rawValue) \(path) after a simulated crash (request \(number), seed \(seed)); call restart()")
            }
            let callSeed: UInt64
            if drawsPerCall {
                let key = "\(kind.rawValue) \(path)"
                let occurrence = state.occurrences[key, default: 0]
                state.occurrences[key] = occurrence + 1
                callSeed = Self.callSeed(seed, key, occurrence)
            } else {
                callSeed = state.generator.next()
            }
            var call = Call(number: number, plan: state.plan, generator: SeededGenerator(seed: callSeed))
            if kind.mutates, let countdown = state.crashCountdown {
                if countdown == 0 {
                    state.crashCountdown = nil
                    state.crashed = true
                    var effect = state.crashEffect
                    if effect == .random { effect = call.generator.pick([CrashEffect.dropped, .applied, .torn]) }
                    call.crash = effect
                } else {
                    state.crashCountdown = countdown - 1
                }
            }
            return call
        }
    }

    /// The faults every kind of call can meet: slowness, then failure.
    private func common(_ call: inout Call) async throws(ConcordError) {
        if call.chance(call.plan.slow) {
            let bound = call.plan.slowDelay.components
            let boundMicros = max(0, bound.seconds * 1_000_000 + bound.attoseconds / 1_000_000_000_000)
            let micros = boundMicros > 0 ? Int64(call.generator.int(0...Int(min(boundMicros, Int64(Int.max))))) : 0
            record(call, "slow call: \(micros) µs") { $0.slow += 1 }
            if micros > 0 {
                try? await Task.sleep(for: .microseconds(micros))
            } else {
                await Task.yield()
            }
        }
        if call.chance(call.plan.failure) {
            record(call, "failed call") { $0.failed += 1 }
            throw ConcordError(.remote, "injected failure of request \(call.number) (FaultyRemote, seed \(seed)); nothing was done — retry")
        }
    }

    private func lostAcknowledgement(_ call: inout Call, _ what: String) throws(ConcordError) {
        guard call.chance(call.plan.lostAcknowledgement) else { return }
        record(call, "lost acknowledgement of \(what), which was done") { $0.lostAcknowledgements += 1 }
        throw ConcordError(.remote, "injected lost reply to request \(call.number), \(what) (FaultyRemote, seed \(seed)); it may or may not have been done — retry")
    }

    private func tornOutcome(_ call: Call, _ what: String) throws(ConcordError) {
        let reportsSuccess = call.plan.tornPutReportsSuccess
        record(call, what + (reportsSuccess ? ", reported success" : ", threw")) { $0.tornPuts += 1 }
        if !reportsSuccess {
            throw ConcordError(.remote, "injected connection drop during request \(call.number), \(what) (FaultyRemote, seed \(seed)); retry")
        }
    }

    private func crashed(_ call: Call, _ what: String) -> ConcordError {
        record(call, "simulated crash at \(what)") { $0.crashed += 1 }
        return ConcordError(.simulatedCrash, "simulated crash at request \(call.number), \(what) (FaultyRemote, seed \(seed)); call restart()")
    }

    /// Streams a strict prefix of what `read` yields to the base remote, holding back one
    /// chunk so the cut always falls before the end; returns the bytes kept, the bytes read
    /// and whether `read` reached its end. Stops reading at the cut; a stream of zero bytes
    /// is written whole.
    private func tornStream(_ path: String, _ call: inout Call, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) -> (kept: Int, read: Int, ended: Bool) {
        var held: [UInt8]?
        var cutDone = false
        var ended = false
        var kept = 0
        var total = 0
        var generator = call.generator
        try await base.putStream(path) { () throws(ConcordError) -> [UInt8] in
            if cutDone { return [] }
            while true {
                let next = try read()
                total += next.count
                if next.isEmpty { ended = true }
                guard let previous = held else {
                    if next.isEmpty { return [] }
                    held = next
                    continue
                }
                if next.isEmpty || generator.chance(0.25) {
                    // Cut inside the held chunk: a strict prefix, since it was not the last byte
                    // (or `next` was the end and the cut is strictly inside `previous`).
                    cutDone = true
                    let cut = generator.int(0...previous.count - 1)
                    kept += cut
                    return Array(previous.prefix(cut))
                }
                held = next
                kept += previous.count
                return previous
            }
        }
        call.generator = generator
        return (kept, total, ended)
    }

    private func record(_ call: Call, _ line: String, _ count: (inout Counts) -> Void) {
        state.withLock {
            count(&$0.counts)
            $0.log.append("#\(call.number) \(line)")
        }
    }

    private static func order(_ a: RemoteObject, _ b: RemoteObject) -> Bool {
        if a.path != b.path { return a.path.utf8.lexicographicallyPrecedes(b.path.utf8) }
        if a.size != b.size { return (a.size ?? 0) < (b.size ?? 0) }
        return (a.modified ?? 0) < (b.modified ?? 0)
    }
}

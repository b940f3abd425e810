import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// The push step a fault hits.
enum PushStep: String, CaseIterable, Sendable, CustomStringConvertible {
    case file, batch, head
    var description: String { rawValue }
}

/// Three replicas that synced once; then a adds a record with a file, whose push (batch 2
/// of a, with its head; head 1 of a is then deleted) the test faults.
struct FaultedPush {
    var fleet: Fleet
    let remote: OneShotFaults
    let a: ReplicaID
    let blob: String
    var faulty: FaultyRemote { remote.faulty }

    init(seed: UInt64) async throws {
        fleet = try await Fleet(count: 3) { OneShotFaults(FaultyRemote(wrapping: $0, seed: seed)) }
        remote = try #require(fleet.remote as? OneShotFaults)
        for (index, store) in fleet.stores.enumerated() {
            try store.put(RecordRef(collection: "notes", id: "n\(index)"), ["title": .scalar(.string("from \(index)"))])
        }
        try await fleet.syncAll()
        let note = RecordRef(collection: "notes", id: "cover")
        try fleet.stores[0].put(note, ["title": .scalar(.string("with a cover"))])
        let file = try fleet.stores[0].attachFile(note, "cover", bytes: Array("cover image".utf8), mediaType: "image/png")
        a = fleet.stores[0].replicaID
        blob = BlobName.remotePath(for: file.hash, key: fleet.key.subkey(for: .blobNames))
    }

    var unannounced: String { Self.key(.unannouncedBatch, RemoteLayout.batch(a, seq: 2)) }
    var missingBatch: String { Self.key(.missingBatch, RemoteLayout.batch(a, seq: 2)) }
    var damagedBatch: String { Self.key(.damaged, RemoteLayout.batch(a, seq: 2)) }
    var missingHead: String { Self.key(.missingHead, RemoteLayout.head(a, seq: 2)) }
    var damagedHead: String { Self.key(.damaged, RemoteLayout.head(a, seq: 2)) }
    var staleHead: String { Self.key(.staleHead, RemoteLayout.head(a, seq: 1)) }
    var missingFile: String { Self.key(.missingFile, blob) }
    var damagedFile: String { Self.key(.damaged, blob) }
    var orphan: String { Self.key(.orphanFile, blob) }

    static func key(_ kind: DoctorFinding.Kind, _ path: String) -> String { "\(kind) \(path)" }
    static func keys(_ report: DoctorReport) -> Set<String> { Set(report.findings.map { key($0.kind, $0.path) }) }

    /// a syncs with `injection` armed for its first call at `step`; then faults stop and a
    /// crashed "process" comes back.
    func push(faulting step: PushStep, with injection: OneShotFaults.Injection) async throws {
        try await push(faultingCall: OneShotFaults.Step(rawValue: step.rawValue)!, with: injection)
    }

    func push(faultingCall step: OneShotFaults.Step, with injection: OneShotFaults.Injection) async throws {
        remote.arm(step, injection)
        _ = try? await fleet.engines[0].sync()
        #expect(remote.fired, "the fault at \(step) was never injected: \(faulty.log)")
        remote.disarm()
        faulty.faultsOff()
        faulty.restart()
    }

    /// Doctor from b (observer) and a (writer) reports exactly these findings; a repairs
    /// every problem among them (and checks each repair); b then finds no problem; all
    /// replicas converge; and doctor finds nothing anywhere.
    func check(observer: Set<String>, writer: Set<String>) async throws {
        let observed = try await fleet.engines[1].doctor()
        #expect(Self.keys(observed) == observer, "\(observed.findings)")
        #expect(observed.findings.allSatisfy { $0.replica.map { $0 == a } ?? true }, "\(observed.findings)")
        let written = try await fleet.engines[0].doctor()
        #expect(Self.keys(written) == writer, "\(written.findings)")
        // b can repair none of a's objects (it never got a's file either).
        let unrepaired = try await fleet.engines[1].doctor(repair: true)
        #expect(unrepaired.findings.allSatisfy { !$0.repaired })
        let repaired = try await fleet.engines[0].doctor(repair: true)
        #expect(Self.keys(repaired) == writer)
        #expect(repaired.isHealthy, "\(repaired.findings)")
        #expect(repaired.findings.allSatisfy { $0.repaired == $0.isProblem }, "\(repaired.findings)")
        #expect(try await fleet.engines[1].doctor().isHealthy)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try fleet.stores[1].record(RecordRef(collection: "notes", id: "cover")) != nil)
        for engine in fleet.engines {
            let report = try await engine.doctor()
            #expect(report.findings.isEmpty, "\(report.findings)")
        }
    }
}

/// Passes every call to a ``FaultyRemote`` and injects one fault into exactly one call: the
/// first one at an armed push step. Keeps tests deterministic whatever else a sync does.
final class OneShotFaults: Remote {
    enum Step: String, Sendable, CustomStringConvertible {
        case file, batch, head, headDelete
        var description: String { rawValue }
    }

    enum Injection: Sendable {
        case plan(FaultyRemote.Plan)
        case crash(FaultyRemote.CrashEffect)
    }

    private struct Armed: Sendable {
        var step: Step?
        var injection: Injection?
        var fired = false
    }

    let faulty: FaultyRemote
    private let armed = Mutex(Armed())

    init(_ faulty: FaultyRemote) { self.faulty = faulty }

    func arm(_ step: OneShotFaults.Step, _ injection: Injection) { armed.withLock { $0 = Armed(step: step, injection: injection) } }
    func disarm() { armed.withLock { $0.step = nil } }
    var fired: Bool { armed.withLock { $0.fired } }

    private func around<T>(_ step: Step?, _ body: () async throws(ConcordError) -> T) async throws(ConcordError) -> T {
        let injection = armed.withLock { (state: inout Armed) -> Injection? in
            guard let step, state.step == step, !state.fired else { return nil }
            state.fired = true
            return state.injection
        }
        switch injection {
        case nil: return try await body()
        case let .plan(plan)?: faulty.plan = plan
        case let .crash(effect)?: faulty.crash(afterMutations: 0, effect: effect)
        }
        defer { faulty.plan = .none }
        return try await body()
    }

    private static func step(_ path: String) -> Step? {
        path.hasPrefix(RemoteLayout.headsPrefix) ? .head : path.hasPrefix(RemoteLayout.replicasPrefix) ? .batch : nil
    }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try await around(Self.step(path)) { () async throws(ConcordError) in try await faulty.put(path, bytes) }
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await faulty.get(path) }

    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await faulty.list(prefix: prefix) }

    func delete(_ path: String) async throws(ConcordError) {
        try await around(Self.step(path) == .head ? .headDelete : nil) { () async throws(ConcordError) in try await faulty.delete(path) }
    }

    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try await around(path.hasPrefix(RemoteLayout.blobsPrefix) ? .file : nil) { () async throws(ConcordError) in
            try await faulty.putStream(path, read: read)
        }
    }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await faulty.getStream(path, write: write)
    }
}

import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// One schedule of the shared-store fuzz (``SyncFuzzTests/sharedStoreSchedulesKeepMembersApart(half:)``):
/// devices with identities on one faulty folder remote; the first shares the store and owns
/// it; at random steps owners add members (owner, writer or reader), remove them (the key
/// rotates), two owners rotate at once, members and former members write and sync — alone
/// or two at a time — through the fault plan of the sync fuzz. The oracle is the model of
/// who is a member with which role when; ``check()`` holds the stores to it after the
/// faults stop.
final class SharedFuzzRun {
    let seed: UInt64
    var random: SeededGenerator
    let ids: SeededReplicaIDs
    let trace = Tally()
    let stats = Tally()
    let scratch: String
    var folder: FolderRemote!
    var passphraseKey: StoreKey!
    var storeID: StoreID!
    let clock = ManualClock(millis: 1_767_268_800_000)

    /// One device: its identity, store and remote stack (faults, then a listing that can
    /// hide key objects, then a turnstile for two syncs at once), and its engine once it
    /// joined (the first device's from the start).
    struct Device {
        let name: String
        let identity: DeviceIdentity
        let store: Store
        let faulty: FaultyRemote
        let keys: KeyRotationTests.StaleKeys
        let gate: TurnstileRemote
        var engine: SyncEngine?
    }
    var devices: [Device] = []

    // The model.
    /// Active members and their roles, as the owners' operations made them.
    var roles: [Int: MemberRole] = [:]
    /// Members removed (never added again), and who removed them.
    var removed: [Int: Int] = [:]
    /// Every write a device made, and whether its record must reach every remaining member
    /// (an owner's or writer's write while a member) or none but its writer (a reader's, a
    /// removed member's after its removal). A removed member's earlier write that the
    /// removing owner had not applied is *undetermined*: the removal's cut keeps it if the
    /// member had pushed it (its head named it), else drops it — at every member alike.
    struct Write {
        let device: Int
        let record: String
        var authorized: Bool
        var undetermined = false
    }
    var writes: [Write] = []

    static let collection = "sharedfuzz"

    init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(seed: seed)
        ids = SeededReplicaIDs(seed: seed ^ 0x5a5e_d1d5)
        scratch = "/dev/shm/concord-sharedfuzz-\(seed)-\(UInt64.random(in: 0...UInt64.max))"
    }

    deinit { try? FileManager.default.removeItem(atPath: scratch) }

    /// An identity drawn from the seed, so member logs' names replay.
    func seededIdentity() throws -> DeviceIdentity {
        func hex() -> String { (0..<4).map { _ in String(format: "%016llx", random.next()) }.joined() }
        let contents = "{\"exchangeSecret\":\"\(hex())\",\"format\":1,\"signingSeed\":\"\(hex())\"}\n"
        return try DeviceIdentity(secretFileContents: Array(contents.utf8))
    }

    func addDevice() throws {
        let index = devices.count
        let store = try Store(path: "\(scratch)/d\(index).db", configuration: .init(clock: clock, newReplicaID: { [ids] in ids.next() }))
        try store.setName("d\(index)")
        let faulty = FaultyRemote(wrapping: folder, seed: seed &* 37 &+ UInt64(index), plan: Self.plan(index))
        let keys = KeyRotationTests.StaleKeys(base: faulty)
        devices.append(Device(name: "d\(index)", identity: try seededIdentity(), store: store, faulty: faulty, keys: keys,
                              gate: TurnstileRemote(wrapping: keys)))
    }

    /// The sync fuzz's storage faults (`FuzzRun.addReplica()`), crashes and clock skew aside.
    static func plan(_ index: Int) -> FaultyRemote.Plan {
        FaultyRemote.Plan(
            failure: 0.05, lostPut: 0.03, tornPut: 0.05, tornPutReportsSuccess: index % 2 == 1,
            lostAcknowledgement: 0.05, lostDelete: 0.05, staleListing: 0.15,
            incompleteListing: 0.1, duplicatedListing: 0.1, reorderedListing: 0.2)
    }

    func engine(_ index: Int, key: StoreKey) -> SyncEngine {
        SyncEngine(store: devices[index].store, remote: devices[index].gate, key: key, storeID: storeID, clock: clock, snapshotEvery: 3,
                   snapshotSlack: 1, requestsInFlight: 1, identity: devices[index].identity)
    }

    /// Runs `body` with `device`'s storage faults off: membership changes and rotations are
    /// made on sound storage (a lost put of a membership log, grant or key object is not
    /// put again by anyone), the syncs around them on faulty storage.
    func soundly(_ device: Int, _ body: () async throws(ConcordError) -> Void) async throws(ConcordError) {
        let plan = devices[device].faulty.plan
        devices[device].faulty.faultsOff()
        defer { devices[device].faulty.plan = plan }
        try await body()
    }

    /// The remaining members and removed members that joined, with engines.
    var joined: [Int] { devices.indices.filter { devices[$0].engine != nil } }
    func owners() -> [Int] { joined.filter { roles[$0] == .owner } }

    func run() async throws -> [String] {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        folder = try FolderRemote(root: scratch + "/remote", createIfMissing: true, clock: clock)
        (passphraseKey, storeID) = try await SyncEngine.createRemote(folder, passphrase: "shared fuzz", limits: .minimum)
        for _ in 0..<random.int(4...6) { try addDevice() }
        devices[0].engine = engine(0, key: passphraseKey)
        roles[0] = .owner
        try write(0, step: -1)
        await sync(0, note: "first sync")
        // The first member makes the store shared.
        try await add(1, role: .writer, by: 0)

        for step in 0..<40 {
            clock.advance(by: Int64(random.int(1...500)))
            let roll = random.int(0...19)
            switch roll {
            case 0...5:
                if let r = joined.randomElement(using: &random) { try write(r, step: step) }
            case 6...10:
                if let r = joined.randomElement(using: &random) { await sync(r, note: "sync") }
            case 11:
                await twoSyncsAtOnce()
            case 12, 13:
                // An owner adds a device that was never a member.
                let fresh = devices.indices.filter { roles[$0] == nil && removed[$0] == nil }
                if let owner = owners().randomElement(using: &random), let device = fresh.randomElement(using: &random) {
                    let role = random.pick([MemberRole.writer, .writer, .reader, .reader, .owner, .owner])
                    try await add(device, role: role, by: owner)
                }
            case 14:
                // A device added earlier whose join has not happened yet tries again.
                for device in devices.indices where devices[device].engine == nil && roles[device] != nil { await join(device) }
            case 15, 16:
                // An owner removes a member (never the store's first owner).
                let members = roles.keys.filter { $0 != 0 }.sorted()
                if let owner = owners().randomElement(using: &random), let target = members.filter({ $0 != owner }).randomElement(using: &random) {
                    try await remove(target, by: owner)
                }
            case 17, 18:
                try await concurrentRotations()
            default:
                if let r = joined.randomElement(using: &random) { await sync(r, note: "sync") }
            }
        }

        for device in devices { device.faulty.faultsOff() }
        return try await check()
    }

    // MARK: Steps

    /// Device `r` writes a record of its own: authorized when it is an owner or writer.
    func write(_ r: Int, step: Int) throws {
        let record = "w\(step + 1)-d\(r)"
        let refused: ConcordError?
        do {
            try devices[r].store.put(RecordRef(collection: Self.collection, id: record), ["by": .scalar(.string(devices[r].name))])
            refused = nil
        } catch {
            refused = error
        }
        if let refused {
            guard refused.code == .removedFromStore else { throw refused }
            // A member whose listing missed the newest key object (the rotation that
            // reached it) takes itself for removed until a sync shows that object: its
            // writes are refused meanwhile, and nothing it had is lost. The end holds every
            // remaining member to syncing again.
            trace.log("d\(r) write \(record) refused: \(removed[r] == nil ? "taken for removed, though a member" : "removed")")
            stats.count(removed[r] == nil ? "refusedWhileMember" : "refusedWrite")
            return
        }
        let authorized = roles[r].map(\.canWrite) ?? false
        writes.append(Write(device: r, record: record, authorized: authorized))
        trace.log("d\(r) writes \(record)\(authorized ? "" : " (unauthorized)")")
        stats.count(authorized ? "write" : removed[r] != nil ? "removedWrite" : "readerWrite")
    }

    func sync(_ r: Int, note: String) async {
        guard let engine = devices[r].engine else { return }
        noteSync(r, note: note, await FuzzRun.outcome(of: engine))
    }

    func noteSync(_ r: Int, note: String, _ outcome: Result<SyncReport, ConcordError>) {
        switch outcome {
        case let .success(report):
            trace.log("d\(r) \(note): applied \(report.applied), pushed \(report.pushed), rejected \(report.rejected.count)\(report.readOnly == nil ? "" : ", pull only")")
            stats.count("sync")
            stats.count("rejected", report.rejected.count)
            stats.count("applied", report.applied)
        case let .failure(error):
            trace.log("d\(r) \(note) failed: \(error.code) \(error.message)")
            stats.count(error.code == .removedFromStore ? "toldRemoved" : "failedSync")
        }
    }

    /// Two devices sync at once, their calls in an order drawn from the seed.
    func twoSyncsAtOnce() async {
        let both = joined
        guard both.count > 1 else { return }
        let a = random.pick(both)
        let b = random.pick(both.filter { $0 != a })
        let turnstile = Turnstile(seed: random.next(), participants: [0, 1])
        devices[a].gate.engage(turnstile, as: 0)
        devices[b].gate.engage(turnstile, as: 1)
        let (engineA, engineB) = (devices[a].engine!, devices[b].engine!)
        async let first = FuzzRun.outcome(of: engineA, through: turnstile, as: 0)
        async let second = FuzzRun.outcome(of: engineB, through: turnstile, as: 1)
        let (ra, rb) = await (first, second)
        devices[a].gate.disengage()
        devices[b].gate.disengage()
        noteSync(a, note: "sync beside d\(b)", ra)
        noteSync(b, note: "sync beside d\(a)", rb)
        stats.count("concurrentSyncs")
    }

    /// Owner `owner` adds `device` with `role`, then the device tries to join.
    func add(_ device: Int, role: MemberRole, by owner: Int) async throws {
        guard let engine = devices[owner].engine else { return }
        do {
            let member = devices[device].identity.publicIdentity, name = devices[device].name
            try await soundly(owner) { () async throws(ConcordError) in _ = try await engine.addMember(member, name: name, role: role) }
        } catch {
            throw SharedFuzzFailure("d\(owner) could not add d\(device) on sound storage: \(error.code) \(error.message)")
        }
        roles[device] = role
        trace.log("d\(owner) adds d\(device) as \(role)")
        stats.count("add")
        await join(device)
    }

    /// `device`, added, finds its grant and becomes a replica (through faulty storage: it
    /// tries again at a later step when that fails).
    func join(_ device: Int) async {
        guard devices[device].engine == nil else { return }
        do {
            guard let granted = try await SyncEngine.grantedKey(devices[device].gate, identity: devices[device].identity) else {
                trace.log("d\(device) finds no grant yet")
                return
            }
            // As `concord join` does: the root pinned, then the members read and kept (the
            // store syncs as a shared one from its first request on).
            try SyncEngine.pinMembershipRoot(granted.root, in: devices[device].store)
            let engine = engine(device, key: granted.key)
            let membership = try await engine.members()
            guard let me = membership.member(signingKey: devices[device].identity.publicIdentity.signingKey), !me.isRemoved else {
                trace.log("d\(device) finds a grant but not itself among the members yet")
                return
            }
            devices[device].engine = engine
            trace.log("d\(device) joins")
            stats.count("join")
            await sync(device, note: "first sync")
        } catch {
            trace.log("d\(device) join failed: \(error)")
        }
    }

    /// Owner `owner` removes `target` (the key rotates). What `target` wrote that the owner
    /// had not applied is past the removal's cut: rejected everywhere from now on.
    func remove(_ target: Int, by owner: Int) async throws {
        guard let engine = devices[owner].engine else { return }
        let held = try recordIDs(owner)
        do {
            let name = devices[target].name
            try await soundly(owner) { () async throws(ConcordError) in _ = try await engine.removeMember(named: name) }
        } catch {
            throw SharedFuzzFailure("d\(owner) could not remove d\(target) on sound storage: \(error.code) \(error.message)")
        }
        roles[target] = nil
        removed[target] = owner
        for index in writes.indices where writes[index].device == target && writes[index].authorized && !held.contains(writes[index].record) {
            writes[index].undetermined = true
            trace.log("\(writes[index].record), not applied by d\(owner), is kept or dropped by the cut of d\(target)'s removal")
            stats.count("pastApplied")
        }
        trace.log("d\(owner) removes d\(target)")
        stats.count("remove")
    }

    /// Two owners rotate the store key at once: the second's listing hides the first's key
    /// object, so both rotate from the same frontier (to the members each knows).
    func concurrentRotations() async throws {
        let both = owners()
        guard both.count > 1 else { return }
        let a = random.pick(both)
        let b = random.pick(both.filter { $0 != a })
        devices[b].keys.hiding = true
        defer { devices[b].keys.hiding = false }
        for owner in [a, b] {
            let engine = devices[owner].engine!
            do {
                try await soundly(owner) { () async throws(ConcordError) in
                    let members = try await engine.members()
                    try await engine.rotateStoreKey(recipients: members.members.values.filter { !$0.isRemoved }.map(\.identity))
                }
            } catch where error.code == .removedFromStore && removed[owner] == nil {
                // An owner whose last listing missed the key object that reached it takes
                // itself for removed until a sync shows it; the second's listing here hides
                // key objects, so it cannot learn otherwise now.
                trace.log("d\(owner) does not rotate: taken for removed, though a member")
                stats.count("refusedWhileMember")
                return
            } catch {
                throw SharedFuzzFailure("d\(owner) could not rotate on sound storage: \(error.code) \(error.message)")
            }
        }
        trace.log("d\(a) and d\(b) rotate at once")
        stats.count("concurrentRotations")
    }

    func recordIDs(_ r: Int) throws -> Set<String> {
        Set(try devices[r].store.records(in: Self.collection).map(\.id))
    }
}

struct SharedFuzzFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

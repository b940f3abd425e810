import ConcordCore

/// A store's key generations as one replica knows them (docs/ARCHITECTURE.md §5): generation
/// 0 (the key of `concord.json`) and every key object whose parents are all known, with the
/// keys this replica can derive.
///
/// The **current** generation — the one every object is sealed under — is the frontier of
/// the key graph: the known generations no known key object follows. With one, its key; with
/// several (concurrent rotations), the key ``StoreKey/merged(_:)`` derives from all of
/// theirs. Every replica that knows the same key objects computes the same frontier, so they
/// converge on one current key without coordination; only a recipient of every concurrent
/// rotation derives it, so a member removed in any of them never does.
///
/// Pure: the same key objects, base key and identity give the same keyring.
public struct Keyring: Sendable {
    /// The known generations' key objects, by id (generation 0 has none).
    public let objects: [KeyGenerationID: KeyObject]
    /// The keys this replica holds, by generation id (generation 0's always).
    public let keys: [KeyGenerationID: StoreKey]
    /// The current generation: the frontier of the key graph.
    public let frontier: KeyGeneration
    /// The key objects left aside because a parent is not known (yet).
    public let waiting: [KeyGenerationID]
    /// The key objects left aside as unauthentic — made by a device that may not rotate the
    /// key, or whose attestation does not verify — each with why. Never part of the graph.
    public let leftAside: [KeyGenerationID: String]

    /// The key of the current generation; nil when this replica lacks a frontier key: it
    /// was removed from the store.
    public var current: StoreKey? { key(for: frontier) }

    /// Whether this replica lacks a key of the current generation: it was not a recipient of
    /// a rotation, so it was removed.
    public var isRemoved: Bool { current == nil }

    /// The frontier generations whose keys this replica lacks.
    public var unopened: [KeyGenerationID] { frontier.ids.filter { keys[$0] == nil } }

    /// The key of `generation` (one generation's, or several merged), when this replica
    /// holds every key it takes.
    public func key(for generation: KeyGeneration) -> StoreKey? {
        var parts: [KeyGenerationID: StoreKey] = [:]
        for id in generation.ids {
            guard let key = keys[id] else { return nil }
            parts[id] = key
        }
        return StoreKey.merged(parts)
    }

    /// The keyring of `base` (generation 0's key) and `objects` as `identity` reads them:
    /// the keys its sealed boxes open, and every older key their chains give.
    ///
    /// `mayRotate` (nil: anyone may, as in a store that is not shared) says whether a signer
    /// may rotate the key — in a shared store, whether it is an owner in the membership in
    /// force. A key object counts when its signer may, when it is one of `adopted` (a key
    /// object this replica already adopted stays adopted: the current generation never goes
    /// back), or when one that counts follows it (an owner's rotation vouches for the
    /// generations it follows: a removed owner's rotations made before its removal). The
    /// signer of a format-2 object is its attested one, which any holder of `base` checks; a
    /// format-1 object names its signer only to its recipients, so any other replica leaves
    /// it aside unless it counts otherwise. Any other key object is left aside
    /// (``leftAside``): not a generation, and it makes nobody removed.
    ///
    /// - Throws: `authenticationFailed` naming the object when one this replica can open
    ///   does not authenticate (its chain or signature was modified, or its chain's signer is
    ///   not its attested one), or two chains give different keys for one generation.
    public init(
        base: StoreKey, objects candidates: [KeyObject], identity: DeviceIdentity?,
        mayRotate: ((PublicIdentity) -> Bool)? = nil, adopted: Set<KeyGenerationID> = []
    ) throws(ConcordError) {
        var byID: [KeyGenerationID: KeyObject] = [:]
        for object in candidates where object.id != .zero { byID[object.id] = byID[object.id] ?? object }
        // Who made each: the attested signer (format 2); for format 1, the chain's, when
        // this replica is a recipient.
        var leftAside: [KeyGenerationID: String] = [:]
        var attested: [KeyGenerationID: PublicIdentity] = [:]
        var direct: Set<KeyGenerationID> = []
        for (id, object) in byID {
            let path = Self.path(id)
            do throws(ConcordError) {
                let signer = try object.attestedSigner(base: base, path: path)
                if let signer { attested[id] = signer }
                if adopted.contains(id) {
                    direct.insert(id)
                    continue
                }
                guard let mayRotate else {
                    direct.insert(id)
                    continue
                }
                let known = signer ?? identity.flatMap { object.key(openedBy: $0) }.flatMap { try? object.chain(openedWith: $0, path: path).signer }
                guard let known else {
                    leftAside[id] = "key object \(path) (format 1) names its signer only to its recipients, and this replica is not one: whether an owner made it cannot be checked; left aside"
                    continue
                }
                if mayRotate(known) { direct.insert(id) } else {
                    leftAside[id] = "key object \(path) was made by \(known.description.prefix(16))…, which may not rotate the store key (only an owner of a shared store does); left aside, nothing is sealed under it"
                }
            } catch {
                leftAside[id] = error.message
            }
        }
        // What counts follows only what counts: every generation a counted one follows counts.
        var counted = direct
        var frontierOfCounting = Array(direct)
        while let id = frontierOfCounting.popLast() {
            for parent in byID[id]?.parents ?? [] where byID[parent] != nil && !counted.contains(parent) {
                counted.insert(parent)
                leftAside[parent] = nil
                frontierOfCounting.append(parent)
            }
        }
        byID = byID.filter { counted.contains($0.key) }
        // Known: generation 0, and every object whose parents are all known.
        var known: Set<KeyGenerationID> = [.zero]
        var progressed = true
        while progressed {
            progressed = false
            for (id, object) in byID where !known.contains(id) && object.parents.allSatisfy(known.contains) {
                known.insert(id)
                progressed = true
            }
        }
        let objects = byID.filter { known.contains($0.key) }
        var keys: [KeyGenerationID: StoreKey] = [.zero: base.of(.zero)]
        if let identity {
            for (id, object) in objects { if let key = object.key(openedBy: identity) { keys[id] = key } }
        }
        // Key chaining: every object whose key is held gives its parents' keys (and is
        // authenticated by opening its chain and checking its signature).
        var chained: Set<KeyGenerationID> = []
        progressed = true
        while progressed {
            progressed = false
            for id in objects.keys.sorted() where !chained.contains(id) {
                guard let key = keys[id], let object = objects[id] else { continue }
                let path = Self.path(id)
                let chain = try object.chain(openedWith: key, path: path)
                if let signer = attested[id], signer != chain.signer {
                    throw ConcordError(.authenticationFailed, "key object \(path) failed authentication: its chained part is signed by another device than its attested signer; it was forged — nothing is sealed under it; run `concord doctor`")
                }
                for (parent, parentKey) in chain.parentKeys {
                    if let held = keys[parent] {
                        guard held == parentKey else {
                            throw ConcordError(.authenticationFailed, "key object \(path) failed authentication: it chains generation \(parent) to another key than this replica holds; it was forged — nothing is sealed under it; run `concord doctor`")
                        }
                    } else {
                        keys[parent] = parentKey
                    }
                }
                chained.insert(id)
                progressed = true
            }
        }
        let parentsOfKnown = Set(objects.values.flatMap(\.parents))
        self.objects = objects
        self.keys = keys
        self.frontier = KeyGeneration(known.subtracting(parentsOfKnown)) ?? .zero
        self.waiting = byID.keys.filter { !known.contains($0) }.sorted()
        self.leftAside = leftAside
    }

    /// The remote path of generation `id`'s key object: `heads/keys/<32 hex>` (the layout's
    /// name, kept below `heads/` so the listing of heads shows it).
    public static func path(_ id: KeyGenerationID) -> String {
        "heads/keys/\(id)"
    }
}

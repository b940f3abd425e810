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
    /// - Throws: `authenticationFailed` naming the object when one this replica can open
    ///   does not authenticate (its chain or signature was modified), or two chains give
    ///   different keys for one generation.
    public init(base: StoreKey, objects candidates: [KeyObject], identity: DeviceIdentity?) throws(ConcordError) {
        var byID: [KeyGenerationID: KeyObject] = [:]
        for object in candidates where object.id != .zero { byID[object.id] = byID[object.id] ?? object }
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
    }

    /// The remote path of generation `id`'s key object: `heads/keys/<32 hex>` (the layout's
    /// name, kept below `heads/` so the listing of heads shows it).
    public static func path(_ id: KeyGenerationID) -> String {
        "heads/keys/\(id)"
    }
}

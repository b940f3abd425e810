import Concord
import ConcordS3
import ConcordWebDAV
import Foundation

/// One libFuzzer target: a parser of bytes that come from outside, and the oracles its
/// results must meet. Every target must never trap on any input; an oracle that fails
/// calls `fatalError`, which libFuzzer records as a crash with its input.
struct Target: Sendable {
    let name: String
    let summary: String
    /// libFuzzer flags this target needs (`ConcordFuzz flags TARGET` prints them).
    var flags: [String] = []
    let run: @Sendable ([UInt8]) -> Void

    static let all: [Target] = [
        Target(name: "delta", summary: "DeltaCodec.decode (format versions 1 and 2); canonical (encode(decode(b)) == b); applied to a new replica", run: delta),
        Target(name: "snapshot", summary: "SnapshotCodec.decode; canonical; joined into a new replica", run: snapshot),
        Target(name: "snapshot-object", summary: "SnapshotObjectCodec.decode(_:path:): seq table and snapshot", run: snapshotObject),
        Target(name: "sealed-plaintext", summary: "input[0] picks batch, snapshot or head; the rest is sealed with the fixed key, opened and decoded as pull does", run: sealedPlaintext),
        Target(name: "sealed-raw", summary: "input[0] picks batch, snapshot or head; the rest is an encrypted object opened with the fixed key, then decoded", run: sealedRaw),
        Target(name: "head", summary: "a head's JSON as Head.decode reads it (JSONDecoder and Head's Decodable)", run: head),
        Target(name: "manifest", summary: "StoreManifest(json:) (concord.json); re-encoding; unlocking at the minimum limits", run: manifest),
        Target(name: "blob", summary: "BlobDecryptor(header:key:name:) and open(frame:), and BlobStream.decrypt with short reads", run: blob),
        Target(name: "remote-layout", summary: "RemoteLayout.parse and the path checks, on remote object names", run: remoteLayout),
        Target(name: "cli-value", summary: "the CLI's FIELD=VALUE parser (ValueParser); what get --json prints reads back", run: cliValue),
        Target(name: "propfind", summary: "PropfindParser (WebDAV PROPFIND answers)", run: propfind),
        Target(name: "s3xml", summary: "S3XML.parse (S3 listings, uploads, errors)", run: s3xml),
    ]

    static func named(_ name: String) -> Target? { all.first { $0.name == name } }

    // MARK: Codecs

    static func delta(_ bytes: [UInt8]) {
        let delta: Delta
        do throws(ConcordError) {
            delta = try DeltaCodec.decode(bytes)
        } catch {
            return requireDamage(error, "delta")
        }
        // Canonical in the format version it was read in.
        require(
            DeltaCodec.encode(delta, version: DeltaCodec.version(of: bytes)!) == bytes,
            "delta: accepted bytes that are not the canonical encoding of the delta they decode to")
        // What pull does next: apply it (to a replica that has seen nothing).
        var replica = Replica(id: ReplicaID(high: .max, low: .max))
        do throws(ConcordError) {
            try replica.apply(delta)
            replica.state._checkInvariants()
        } catch {
            require(error.code == .notReady || Fixed.damage.contains(error.code), "delta: applying a decoded delta failed with \(error)")
        }
    }

    static func snapshot(_ bytes: [UInt8]) {
        let state: StoreState
        do throws(ConcordError) {
            state = try SnapshotCodec.decode(bytes)
        } catch {
            return requireDamage(error, "snapshot")
        }
        state._checkInvariants()
        require((try? SnapshotCodec.encode(state)) == bytes, "snapshot: accepted bytes that are not the canonical encoding of the state they decode to")
        var replica = Replica(id: ReplicaID(high: .max, low: .max))
        replica.join(snapshot: state)
        replica.state._checkInvariants()
        _ = CanonicalDump.json(of: replica.state)
    }

    static func snapshotObject(_ bytes: [UInt8]) {
        // Read as a new replica joins it (record by record, checked to the end): it fails
        // exactly when the whole decode does, with the same error.
        var streamed: ConcordError?
        do throws(ConcordError) {
            try SnapshotObjectReader(bytes, path: Fixed.snapshotPath).records.check()
        } catch {
            streamed = error
        }
        let contents: SnapshotContents
        do throws(ConcordError) {
            contents = try SnapshotObjectCodec.decode(bytes, path: Fixed.snapshotPath)
        } catch {
            require(streamed == error, "snapshot object: read record by record it failed with \(String(describing: streamed)), decoded whole with \(error)")
            return requireDamage(error, "snapshot object")
        }
        require(streamed == nil, "snapshot object: read record by record it failed with \(String(describing: streamed)), decoded whole it did not")
        contents.state._checkInvariants()
        // The state part is canonical (checked by the snapshot target); the seq table is
        // read as a map, so only a round trip through the encoder is checked here.
        let again = try? SnapshotObjectCodec.encode(contents)
        require(again.map { (try? SnapshotObjectCodec.decode($0, path: Fixed.snapshotPath)) == contents } ?? false,
                "snapshot object: a decoded snapshot object does not survive encoding and decoding")
    }

    // MARK: Encrypted objects

    /// The kinds of sealed object a pull opens, as `RemoteObjects` opens them.
    enum Kind: CaseIterable {
        case batch, snapshot, head

        init(selector: UInt8?) { self = Self.allCases[Int(selector ?? 0) % Self.allCases.count] }

        var path: String {
            switch self {
            case .batch: Fixed.batchPath
            case .snapshot: Fixed.snapshotPath
            case .head: Fixed.headPath
            }
        }

        var key: SubKey {
            switch self {
            case .batch: Fixed.batches
            case .snapshot: Fixed.snapshots
            case .head: Fixed.manifests
            }
        }

        var selector: UInt8 { UInt8(Self.allCases.firstIndex(of: self)!) }

        /// Opens and decodes `sealed` found at this kind's fixed path, as `RemoteObjects`
        /// does (`openBatch`, `openSnapshotReader` read to its end, `openHead`; a snapshot opened in place). Opened
        /// in place or into new memory, it gives the same plaintext or the same error.
        func open(_ sealed: [UInt8]) throws(ConcordError) {
            let intoNew: Result<[UInt8], ConcordError>
            do throws(ConcordError) { intoNew = .success(try EncryptedObject.open(sealed, path: path, key: key)) } catch { intoNew = .failure(error) }
            let inPlace: Result<[UInt8], ConcordError>
            do throws(ConcordError) { inPlace = .success(try EncryptedObject.open(consuming: sealed, path: path, key: key)) } catch { inPlace = .failure(error) }
            require(intoNew == inPlace, "sealed \(self): opened in place it gave \(inPlace), into new memory \(intoNew)")
            let plaintext = try inPlace.get()
            switch self {
            case .batch: _ = try DeltaCodec.decode(plaintext)
            case .snapshot: _ = try SnapshotObjectCodec.decode(plaintext, path: path)
            case .head: _ = try decodeHead(plaintext, path: path)
            }
        }
    }

    static func sealedPlaintext(_ bytes: [UInt8]) {
        let kind = Kind(selector: bytes.first)
        let plaintext = Array(bytes.dropFirst())
        let sealed = EncryptedObject.encryptDeterministically(plaintext, path: kind.path, key: kind.key)
        require((try? EncryptedObject.open(sealed, path: kind.path, key: kind.key)) == plaintext, "sealed: an object sealed with the fixed key does not open to its plaintext")
        do throws(ConcordError) {
            try kind.open(sealed)
        } catch {
            require(error.code != .authenticationFailed, "sealed: an authentic object failed authentication")
            requireDamage(error, "sealed \(kind)")
        }
    }

    static func sealedRaw(_ bytes: [UInt8]) {
        let kind = Kind(selector: bytes.first)
        do throws(ConcordError) {
            try kind.open(Array(bytes.dropFirst()))
        } catch {
            requireDamage(error, "sealed \(kind)")
        }
    }

    // MARK: Heads and concord.json

    /// What `Head.decode(_:path:)` (internal to ConcordSync) does: Head's public
    /// `Decodable` through JSONDecoder, any failure as `malformed`.
    static func decodeHead(_ bytes: [UInt8], path: String) throws(ConcordError) -> Head {
        do {
            return try JSONDecoder().decode(Head.self, from: Data(bytes))
        } catch {
            throw ConcordError(.malformed, "remote manifest \(path) does not parse: \(error); run `concord doctor`", cause: error)
        }
    }

    static func head(_ bytes: [UInt8]) {
        guard let head = try? decodeHead(bytes, path: Fixed.headPath) else { return }
        // What the sync layer reads of a head: its replica-keyed maps, by replica id.
        for key in [head.applied, head.vector, head.retired ?? [:], head.stable ?? [:]].flatMap(\.keys) { _ = ReplicaID(hex: key) }
        _ = ReplicaID(hex: head.replica)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let again = try? encoder.encode(head)
        require(again.flatMap { try? decodeHead(Array($0), path: Fixed.headPath) } == head, "head: a decoded head does not survive encoding and decoding")
    }

    static func manifest(_ bytes: [UInt8]) {
        let manifest: StoreManifest
        do throws(ConcordError) {
            manifest = try StoreManifest(json: bytes)
        } catch {
            return require([.malformed, .unsupportedVersion].contains(error.code), "manifest: failed with \(error.code.name): \(error.message)")
        }
        require((try? StoreManifest(json: manifest.jsonBytes())) == manifest, "manifest: a decoded concord.json does not survive encoding and decoding")
        _ = manifest.matches(Fixed.storeKey)
        // Unlocking runs Argon2id: only at the minimum limits, which cost microseconds.
        if manifest.limits == .minimum {
            do throws(ConcordError) {
                let key = try manifest.unlock(passphrase: Fixed.passphrase)
                require(manifest.matches(key), "manifest: unlocked a key the key check refuses")
            } catch {
                require([.wrongKey, .malformed, .invalidKey].contains(error.code), "manifest: unlocking failed with \(error.code.name): \(error.message)")
            }
        }
    }

    // MARK: Blob streams

    static func blob(_ bytes: [UInt8]) {
        // As a caller driving its own I/O reads a blob: the header, then whole frames.
        var plaintext: [UInt8]?
        do throws(ConcordError) {
            var decryptor = try BlobDecryptor(header: bytes.prefix(BlobStream.headerByteCount), key: Fixed.blobContents, name: Fixed.blobPath)
            var rest = bytes.dropFirst(BlobStream.headerByteCount)
            var output: [UInt8] = []
            while !decryptor.isFinished {
                let frame = rest.prefix(BlobStream.frameByteCount)
                rest = rest.dropFirst(frame.count)
                if frame.isEmpty { try decryptor.finish() }
                output += try decryptor.open(frame: frame)
            }
            try decryptor.finish()
            if rest.isEmpty { plaintext = output }
        } catch {
            require([.authenticationFailed, .unsupportedVersion].contains(error.code), "blob: failed with \(error.code.name): \(error.message)")
        }
        // BlobStream.decrypt on the same bytes, read in short pieces, must agree.
        var offset = 0
        var pieces = 0
        var streamed: [UInt8] = []
        let outcome = Result { () throws -> UInt64 in
            try BlobStream.decrypt(
                key: Fixed.blobContents, name: Fixed.blobPath,
                read: { buffer, maxCount in
                    pieces += 1
                    let count = min(maxCount, bytes.count - offset, [1, 7, 4_096, 65_553][pieces % 4])
                    buffer.replaceSubrange(0..<count, with: bytes[offset..<offset + count])
                    offset += count
                    return count
                },
                write: { streamed += $0 })
        }
        switch outcome {
        case let .success(count):
            require(plaintext == streamed && count == UInt64(streamed.count), "blob: BlobStream.decrypt accepted what BlobDecryptor refused, or disagrees on the plaintext")
        case let .failure(error):
            require(plaintext == nil, "blob: BlobStream.decrypt refused what BlobDecryptor accepted: \(error)")
        }
    }

    // MARK: Names

    static func remoteLayout(_ bytes: [UInt8]) {
        let path = String(decoding: bytes, as: UTF8.self)
        let name = RemoteLayout.parse(path)
        if let name {
            require(name.path == path, "remote-layout: parse accepted \(path), which is not the name it builds (\(name.path))")
            _ = RemoteLayout.maxObjectSize(for: name)
        }
        do throws(ConcordError) {
            try RemoteLayout.validateObjectPath(path)
            require(name != nil, "remote-layout: validateObjectPath accepted a path parse refuses")
        } catch {
            require(error.code == .invalidRemotePath && name == nil, "remote-layout: validateObjectPath refused a layout name, or with \(error.code.name)")
        }
        do throws(ConcordError) {
            try RemoteLayout.validatePrefix(path)
        } catch {
            require(error.code == .invalidRemotePath, "remote-layout: validatePrefix failed with \(error.code.name)")
        }
        _ = RemoteLayout.isStoreFolder(path)
        if path.utf8.count == 64 { _ = RemoteLayout.isKeyedName(path) }
    }

    // MARK: The command line

    static func cliValue(_ bytes: [UInt8]) {
        // Arguments are UTF-8 (the CLI refuses any other) and hold no NUL.
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else { return }
        // `put FIELD=VALUE`, and the whole text as one element (`add`, `remove`).
        switch (try? ValueParser.assignment(text))?.write {
        case let .scalar(value)?: readsBack(value, typed: text)
        case let .set(elements)?: for element in elements { readsBack(element, typed: text) }
        default: break
        }
        if let value = try? ValueParser.scalar(text, field: "f") { readsBack(value, typed: text) }
    }

    /// `get --json` prints a value as the canonical dump does; typed back, it is the same
    /// value, bit for bit.
    static func readsBack(_ value: ScalarValue, typed text: String) {
        let printed = CanonicalDump.json(of: [(name: "f", value: FieldValue.scalar(value))])
        require(printed.hasPrefix("{\"f\":") && printed.hasSuffix("}"), "cli-value: unexpected dump \(printed)")
        let again = try? ValueParser.scalar(String(printed.dropFirst(5).dropLast()), field: "f")
        require(again == value, "cli-value: \(text) reads as \(value), which get --json prints as \(printed), which reads as \(String(describing: again))")
    }

    // MARK: XML answers

    static func propfind(_ bytes: [UInt8]) {
        if let entries = PropfindParser.parse(bytes) {
            for entry in entries { require(entry.path.hasPrefix("/"), "propfind: an entry's path \(entry.path) is not absolute") }
        }
        _ = PropfindParser.path(ofHref: String(decoding: bytes.prefix(512), as: UTF8.self))
    }

    static func s3xml(_ bytes: [UInt8]) {
        for record in ["Contents", "Upload", "Part", "-"] { _ = S3XML.parse(bytes, record: record) }
    }
}

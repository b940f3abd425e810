import ConcordCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The identity's secret file: how ``DeviceIdentity`` is kept beside its store.
///
/// Its contents are one line of JSON, `{"exchangeSecret":"<64 hex>","format":1,"signingSeed":"<64 hex>"}`:
/// the X25519 secret key and the Ed25519 seed. The file is created with mode 0600 (its
/// owner reads and writes it, nobody else), never overwritten, and never copied to the
/// remote. Whoever holds it can act as this device.
extension DeviceIdentity {
    /// The secret file's format this release writes and reads.
    public static let secretFileFormat = 1

    /// The secret file's contents. Write them only where only the user can read them.
    public var secretFileContents: [UInt8] {
        let exchange = Hex.encode(exchangeSecret.copiedBytes)
        let seed = Hex.encode(signingSeed.copiedBytes)
        return Array("{\"exchangeSecret\":\"\(exchange)\",\"format\":\(Self.secretFileFormat),\"signingSeed\":\"\(seed)\"}\n".utf8)
    }

    /// Reads a secret file's contents. Throws `invalidKey` for anything
    /// ``secretFileContents`` does not write (`unsupportedVersion` for another format).
    public init(secretFileContents contents: some Collection<UInt8>) throws(ConcordError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(contents)) as? [String: Any] else {
            throw ConcordError(.invalidKey, "an identity file holds one JSON object; this one does not: it is not a file `concord id create` wrote")
        }
        guard let format = object["format"] as? Int, format == Self.secretFileFormat else {
            throw ConcordError(.unsupportedVersion, "the identity file is of format \(object["format"].map { "\($0)" } ?? "none"), which this release does not read")
        }
        guard let exchange = (object["exchangeSecret"] as? String).flatMap(Hex.decode), exchange.count == 32,
              let seed = (object["signingSeed"] as? String).flatMap(Hex.decode), seed.count == 32 else {
            throw ConcordError(.invalidKey, "the identity file's exchangeSecret and signingSeed are 64 hex digits each; they were modified")
        }
        try self.init(exchangeSecret: SecretBytes(copying: exchange), signingSeed: SecretBytes(copying: seed))
    }

    /// Reads the secret file at `path`. Throws `invalidKey` naming the path when there is
    /// none, or it cannot be read or is not an identity.
    public init(contentsOfSecretFile path: String) throws(ConcordError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ConcordError(.invalidKey, "no identity file at \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConcordError(.invalidKey, "cannot read identity file \(path): check that it is readable")
        }
        do {
            try self.init(secretFileContents: [UInt8](data))
        } catch {
            throw ConcordError(error.code, "identity file \(path): \(error.message)")
        }
    }

    /// Writes ``secretFileContents`` to a new file at `path`, mode 0600, and syncs it.
    /// Never overwrites: throws `invalidOperation` when a file is already there (an
    /// identity replaced would lose what was sealed to it), `invalidKey` when it cannot be
    /// written.
    public func writeNewSecretFile(at path: String) throws(ConcordError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let reason = errno
            if reason == EEXIST {
                throw ConcordError(.invalidOperation, "\(path) already exists: this store has an identity (`concord id show`); it is never replaced, since what was sealed to it would be lost")
            }
            throw ConcordError(.invalidKey, "could not create identity file \(path): \(String(cString: strerror(reason)))")
        }
        defer { close(descriptor) }
        // The mode given to open is filtered by the umask; make it exactly 0600.
        _ = fchmod(descriptor, 0o600)
        let bytes = secretFileContents
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            let reason = errno
            unlink(path)
            throw ConcordError(.invalidKey, "could not write identity file \(path): \(String(cString: strerror(reason)))")
        }
    }
}

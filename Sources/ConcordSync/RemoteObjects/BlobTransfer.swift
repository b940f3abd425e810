import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

/// Moves files between the local blob directory and the remote, encrypted with
/// `crypto_secretstream` in 64 KiB chunks: memory stays constant whatever the file's size.
/// A file is sealed under the key it is uploaded with (the current key generation's: the
/// stream's header names it, and every chunk's associated data) and opened under the
/// generation its header names.
package enum BlobTransfer {
    /// Uploads the local file `hash` to `path`, sealed under `key` (of the current generation).
    package static func upload(_ hash: ContentHash, from blobs: BlobStore, to remote: any Remote, path: String, key: SubKey) async throws(ConcordError) -> UInt64 {
        guard let input = FileHandle(forReadingAtPath: blobs.path(for: hash)) else {
            throw ConcordError(.missingBlob, "file \(hash.hex) is not in \(blobs.directory); it cannot be uploaded")
        }
        defer { try? input.close() }
        let upload = Upload(input: input, key: key, name: path)
        try await remote.putStream(path) { () throws(ConcordError) -> [UInt8] in try upload.next() }
        return upload.bytes
    }

    final class Upload {
        let input: FileHandle
        var encryptor: BlobEncryptor
        var sentHeader = false
        var pending: [UInt8]?
        var bytes: UInt64 = 0

        init(input: FileHandle, key: SubKey, name: String) {
            self.input = input
            self.encryptor = BlobEncryptor(key: key, name: name)
        }

        func read() throws(ConcordError) -> [UInt8] {
            do {
                return Array(try input.read(upToCount: BlobStream.chunkByteCount) ?? Data())
            } catch {
                throw ConcordError(.storage, "could not read a local file for upload: \(error)", cause: error)
            }
        }

        /// The next encrypted piece: the header, then one frame per chunk; empty at the end.
        func next() throws(ConcordError) -> [UInt8] {
            if !sentHeader {
                sentHeader = true
                pending = try read()
                return encryptor.header
            }
            guard !encryptor.isFinished, let chunk = pending else { return [] }
            let following = chunk.count == BlobStream.chunkByteCount ? try read() : []
            let isFinal = following.isEmpty
            pending = isFinal ? nil : following
            bytes += UInt64(chunk.count)
            return try encryptor.seal(chunk: chunk, isFinal: isFinal)
        }
    }

    /// Downloads `path` into the blob directory, checking that its content hashes to `hash`,
    /// opened with the file-contents key `keys` gives for the generation its header names.
    /// Returns false when the remote has no such object (yet). `size` is the file's size
    /// from its authenticated reference: the download is refused
    /// (``ConcordCore/ConcordError/Code/limitExceeded``) as soon as it would pass the
    /// encrypted size of that many bytes under any generation it may be sealed under
    /// (`SyncEngine.Keys.maxSealedFileSize(_:)`), so the temporary file never grows past it.
    /// `install` runs the final step (decrypting into the blob directory) and may wrap it
    /// (the store records the arrival: ``ConcordStore/Store/installFile(_:onRemote:_:)``);
    /// `received` hears the count of encrypted bytes so far.
    static func download(
        _ hash: ContentHash, size: UInt64, into blobs: BlobStore, from remote: any Remote, path: String, keys: SyncEngine.Keys,
        install: (() throws(ConcordError) -> Void) throws(ConcordError) -> Void = { (add: () throws(ConcordError) -> Void) throws(ConcordError) in try add() },
        received: (@Sendable (UInt64) -> Void)? = nil
    ) async throws(ConcordError) -> Bool {
        // The encrypted stream goes to a temporary file (constant memory), then is opened
        // frame by frame straight into the blob directory.
        let temporary = blobs.directory + "/tmp/download-\(UInt64.random(in: 0...UInt64.max))"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let output = FileHandle(forWritingAtPath: temporary) else {
            throw ConcordError(.storage, "could not create \(temporary)")
        }
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let found: Bool
        do {
            let limit = keys.maxSealedFileSize(size)
            var count: UInt64 = 0
            found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in
                count += UInt64(chunk.count)
                received?(count)
                do { try output.write(contentsOf: chunk) } catch {
                    throw ConcordError(.storage, "could not write \(temporary): \(error)", cause: error)
                }
            }
            try? output.close()
        }
        guard found else { return false }
        guard let input = FileHandle(forReadingAtPath: temporary) else { throw ConcordError(.storage, "could not reopen \(temporary)") }
        defer { try? input.close() }
        let reader = try Download(input: input, keys: keys, name: path)
        try install { () throws(ConcordError) in
            _ = try blobs.add(expected: hash) { (buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int in
                try reader.fill(buffer)
            }
        }
        return true
    }

    final class Download {
        let input: FileHandle
        var decryptor: BlobDecryptor
        var plaintext: [UInt8] = []
        var offset = 0

        init(input: FileHandle, keys: SyncEngine.Keys, name: String) throws(ConcordError) {
            self.input = input
            // The first bytes tell the header's length (it names the key generation).
            var header = try Self.read(BlobStream.leadByteCount, from: input)
            let length = BlobStream.headerByteCount(startingWith: header)
            if length > header.count { header += try Self.read(length - header.count, from: input) }
            decryptor = try BlobDecryptor(header: header, name: name) { (generation: KeyGeneration) throws(ConcordError) -> SubKey in
                try keys.key(.blobContents, of: generation, at: name)
            }
        }

        func read(_ count: Int) throws(ConcordError) -> [UInt8] {
            try Self.read(count, from: input)
        }

        static func read(_ count: Int, from input: FileHandle) throws(ConcordError) -> [UInt8] {
            do { return Array(try input.read(upToCount: count) ?? Data()) } catch {
                throw ConcordError(.storage, "could not read a downloaded file: \(error)", cause: error)
            }
        }

        /// Copies decrypted bytes into `buffer`; 0 at the authenticated end.
        func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int {
            while offset == plaintext.count {
                if decryptor.isFinished {
                    guard try read(1).isEmpty else {
                        throw ConcordError(.authenticationFailed, "a remote file has bytes after its final chunk; run `concord doctor`")
                    }
                    return 0
                }
                let frame = try read(BlobStream.frameByteCount)
                if frame.isEmpty {
                    try decryptor.finish()  // throws for a stream cut short
                    return 0
                }
                plaintext = try decryptor.open(frame: frame)
                offset = 0
            }
            let count = min(buffer.count, plaintext.count - offset)
            plaintext.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count]))
            }
            offset += count
            return count
        }
    }
}

import ConcordCore
import ConcordCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `read(2)`, named apart from the type's own `read` members.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// A directory of files named by the BLAKE2b-256 of their content (docs/ARCHITECTURE.md §3):
/// `<directory>/<2 hex>/<64 hex>`. Files are streamed in 1 MiB chunks — memory does not
/// grow with file size — written to a temporary name, fsynced and renamed into place, so a
/// crash never leaves a partial file under a content name. Equal content is stored once.
public struct BlobStore: Sendable {
    public let directory: String
    static let chunkSize = 1 << 20

    public init(directory: String) {
        self.directory = directory
    }

    func prepare() throws(ConcordError) {
        if mkdir(directory, 0o755) == 0 {
            // Its entry must reach the disk, or a power loss can take the whole directory,
            // with every file the store's committed writes refer to.
            let parent = (directory as NSString).deletingLastPathComponent
            try Self.syncDirectory(parent.isEmpty ? "." : parent)
        } else if errno != EEXIST {
            throw Self.ioError("create the blob directory \(directory)")
        }
        // Only temporary files, and made again at every open: it needs no sync of its own.
        if mkdir(directory + "/tmp", 0o755) != 0 && errno != EEXIST {
            throw Self.ioError("create the blob directory \(directory)/tmp")
        }
        // What interrupted downloads and attaches left there.
        sweepTemporaryFiles()
    }

    /// Where the file with content `hash` lives.
    public func path(for hash: ContentHash) -> String {
        let hex = hash.hex
        return "\(directory)/\(hex.prefix(2))/\(hex)"
    }

    public func contains(_ hash: ContentHash) -> Bool {
        access(path(for: hash), F_OK) == 0
    }

    /// Copies the file at `source` into the store, hashing it on the way.
    public func add(contentsOf source: String, mediaType: String? = nil) throws(ConcordError) -> FileRef {
        let input = open(source, O_RDONLY)
        guard input >= 0 else { throw Self.ioError("open \(source)") }
        defer { close(input) }
        return try add(mediaType: mediaType, expected: nil) { (buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int in
            let count = systemRead(input, buffer.baseAddress, buffer.count)
            guard count >= 0 else { throw Self.ioError("read \(source)") }
            return count
        }
    }

    /// Stores `bytes`.
    public func add(bytes: [UInt8], mediaType: String? = nil) throws(ConcordError) -> FileRef {
        var offset = 0
        return try add(mediaType: mediaType, expected: nil) { (buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int in
            let count = min(buffer.count, bytes.count - offset)
            bytes.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count]))
            }
            offset += count
            return count
        }
    }

    /// Streams content from `read` (which fills the buffer and returns how many bytes it
    /// wrote, 0 at the end) into the store. With `expected`, content whose hash differs is
    /// refused with `hashMismatch` and nothing is kept.
    public func add(
        mediaType: String? = nil, expected: ContentHash?,
        read: (UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int
    ) throws(ConcordError) -> FileRef {
        var template = Array("\(directory)/tmp/incoming-XXXXXX".utf8CString)
        let output = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard output >= 0 else { throw Self.ioError("create a temporary file in \(directory)/tmp") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var finished = false
        defer {
            if !finished { unlink(temporary) }
        }
        var hasher = ContentHasher()
        var size: UInt64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        do throws(ConcordError) {
            while true {
                let count = try read(buffer)
                if count == 0 { break }
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                try Self.writeAll(output, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), to: temporary)
                size += UInt64(count)
            }
            guard fsync(output) == 0 else { throw Self.ioError("fsync \(temporary)") }
        } catch {
            close(output)
            throw error
        }
        close(output)
        let hash = hasher.finalize()
        if let expected, expected != hash {
            throw ConcordError(.hashMismatch, "file content hashes to \(hash.hex), not the announced \(expected.hex); it was not stored")
        }
        let final = path(for: hash)
        let folder = String(final.dropLast(65))
        if mkdir(folder, 0o755) == 0 {
            // A new folder's own entry must reach the disk too, or a power loss can lose it
            // (and the file in it) after the write that references the file committed.
            try Self.syncDirectory(directory)
        } else if errno != EEXIST {
            throw Self.ioError("create \(folder)")
        }
        if access(final, F_OK) != 0 {
            guard rename(temporary, final) == 0 else { throw Self.ioError("move a file into \(folder)") }
            finished = true
            try Self.syncDirectory(folder)
        }
        return FileRef(hash: hash, size: size, mediaType: mediaType)
    }

    /// Reads a stored file in chunks, checking its hash as it goes: a file damaged on disk
    /// yields `hashMismatch` after its last chunk.
    public func read(_ hash: ContentHash, chunk: (UnsafeRawBufferPointer) throws(ConcordError) -> Void) throws(ConcordError) {
        let source = path(for: hash)
        let input = open(source, O_RDONLY)
        guard input >= 0 else {
            throw ConcordError(.missingBlob, "file \(hash.hex) is not in \(directory); sync to fetch it")
        }
        defer { close(input) }
        var hasher = ContentHasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = systemRead(input, buffer.baseAddress, buffer.count)
            guard count >= 0 else { throw Self.ioError("read \(source)") }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            try chunk(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        guard hasher.finalize() == hash else {
            throw ConcordError(.hashMismatch, "stored file \(hash.hex) is damaged (its content hashes differently); re-fetch it with `concord sync`")
        }
    }

    /// The whole content of a stored file (for small files).
    public func bytes(_ hash: ContentHash) throws(ConcordError) -> [UInt8] {
        var out: [UInt8] = []
        try read(hash) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in out.append(contentsOf: chunk) }
        return out
    }

    /// Copies a stored file to `destination` (temp → fsync → rename → fsync the folder): once
    /// it returns, the copy survives a power cut; before, `destination` holds what it held.
    public func export(_ hash: ContentHash, to destination: String) throws(ConcordError) {
        let temporary = destination + ".concord-tmp"
        let output = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard output >= 0 else { throw Self.ioError("create \(temporary)") }
        do throws(ConcordError) {
            try read(hash) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in try Self.writeAll(output, chunk, to: temporary) }
            guard fsync(output) == 0 else { throw Self.ioError("fsync \(temporary)") }
        } catch {
            close(output)
            unlink(temporary)
            throw error
        }
        close(output)
        guard rename(temporary, destination) == 0 else { throw Self.ioError("write \(destination)") }
        let folder = (destination as NSString).deletingLastPathComponent
        try Self.syncDirectory(folder.isEmpty ? "." : folder)
    }

    public func delete(_ hash: ContentHash) throws(ConcordError) {
        if unlink(path(for: hash)) != 0 && errno != ENOENT { throw Self.ioError("delete \(path(for: hash))") }
    }

    /// Every stored file's hash.
    public func all() throws(ConcordError) -> [ContentHash] {
        var hashes: [ContentHash] = []
        guard let top = opendir(directory) else { throw Self.ioError("list \(directory)") }
        defer { closedir(top) }
        while let entry = readdir(top) {
            let name = Self.name(entry)
            guard name.utf8.count == 2, name != "..", Hex.isLowercase(name.utf8) else { continue }
            guard let sub = opendir("\(directory)/\(name)") else { continue }
            defer { closedir(sub) }
            while let file = readdir(sub) {
                if let hash = ContentHash(hex: Self.name(file)) { hashes.append(hash) }
            }
        }
        return hashes.sorted()
    }

    static func name(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafePointer(to: entry.pointee.d_name) { pointer in
            pointer.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
        }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, to name: String) throws(ConcordError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            guard written > 0 else { throw ioError("write \(name)") }
            offset += written
        }
    }

    /// Fsyncs a folder, so the entries renamed or created in it are durable; a failure is
    /// a typed error (the write that would reference them must not be acknowledged).
    static func syncDirectory(_ path: String) throws(ConcordError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { throw ioError("open \(path) to fsync it") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw ioError("fsync \(path)") }
    }

    static func ioError(_ what: String) -> ConcordError {
        let code = errno
        let reason = String(cString: strerror(code))
        let advice = code == ENOSPC ? "; the disk is full — free space and retry" : code == EROFS || code == EACCES ? "; check permissions" : ""
        return ConcordError(.storage, "could not \(what): \(reason)\(advice)", cause: POSIXErrorCode(rawValue: code).map { POSIXError($0) })
    }
}


import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// A store tells its own file from a copy of it (``Store/fileReplacement()``): a restore
/// from a backup or a store carried to another device is a new file, whatever its bytes.
@Suite struct FileIdentityTests {
    @Test func theStoresOwnFileIsNeverTakenForACopy() throws {
        let directory = TemporaryDirectory("file-identity-own")
        let path = directory.file("a.db")
        do {
            let store = try Store(path: path)
            #expect(try store.fileReplacement() == nil)
            for index in 0..<50 { try store.set(RecordRef(collection: "notes", id: "n\(index)"), "title", .string("note \(index)")) }
            #expect(try store.fileReplacement() == nil)
        }
        let reopened = try Store(path: path)
        #expect(try reopened.fileReplacement() == nil)
        #expect(try reopened.record(RecordRef(collection: "notes", id: "n49")) != nil)
    }

    @Test func aCopyAtAnotherPathIsACopy() throws {
        let directory = TemporaryDirectory("file-identity-copy")
        let original = try Store(path: directory.file("a.db"))
        try original.set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
        let recorded = try #require(StoreFileIdentity.of(path: original.path))
        try copyStoreFile(original.path, to: directory.file("copy.db"))
        let copy = try Store(path: directory.file("copy.db"))
        let replacement = try #require(try copy.fileReplacement())
        #expect(replacement.recorded == recorded)
        #expect(replacement.current == StoreFileIdentity.of(path: copy.path))
        // The original is untouched by its copy.
        #expect(try original.fileReplacement() == nil)
        // Once the copy's file is recorded as its own, it is no longer one.
        try copy.recordFileIdentity()
        #expect(try copy.fileReplacement() == nil)
    }

    /// Deleted, then restored from a backup at the same path: a new file, even when the file
    /// system hands it the inode number of the one deleted (ext4 does), by its birth time.
    @Test func aBackupRestoredAtTheSamePathIsACopy() throws {
        let directory = TemporaryDirectory("file-identity-restore")
        let path = directory.file("a.db")
        do {
            let store = try Store(path: path)
            try store.set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
            // A backup through SQLite's backup API, as an app may take one.
            try store.reader.backup(to: try DatabaseQueue(path: directory.file("backup.db")))
        }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: directory.file("backup.db"), toPath: path)
        let restored = try Store(path: path)
        let replacement = try #require(try restored.fileReplacement())
        #expect(replacement.recorded != replacement.current)
        #expect(try restored.record(RecordRef(collection: "notes", id: "n1")) != nil)
    }

    /// Bytes written back into the store's own file keep the file: not detectable from the
    /// file (the sync then tells from the remote, or names the fork).
    @Test func bytesWrittenBackIntoTheSameFileKeepItsIdentity() throws {
        let directory = TemporaryDirectory("file-identity-in-place")
        let path = directory.file("a.db")
        do {
            let store = try Store(path: path)
            try store.set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
            try store.reader.backup(to: try DatabaseQueue(path: directory.file("backup.db")))
            try store.set(RecordRef(collection: "notes", id: "n2"), "title", .string("two"))
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: directory.file("backup.db"))))
        try handle.close()
        let restored = try Store(path: path)
        #expect(try restored.record(RecordRef(collection: "notes", id: "n2")) == nil)
        #expect(try restored.fileReplacement() == nil)
    }

    /// Another file: a new inode or a new birth time — told only where both carry a birth
    /// time (file systems without one, some renumbering inodes at each mount, tell nothing).
    @Test func anotherFileIsANewInodeOrANewBirthWhereBirthsAreKnown() {
        let born = StoreFileIdentity.Birth(seconds: 1_795_836_277, nanoseconds: 736_889_827)
        let later = StoreFileIdentity.Birth(seconds: 1_795_836_292, nanoseconds: 644_889_503)
        let file = StoreFileIdentity(inode: 6_725_633, birth: born)
        #expect(!file.isAnotherFile(than: file))
        #expect(StoreFileIdentity(inode: 6_725_633, birth: later).isAnotherFile(than: file))  // inode reused
        #expect(StoreFileIdentity(inode: 8_860_608, birth: born).isAnotherFile(than: file))  // creation date kept
        #expect(!StoreFileIdentity(inode: 8_860_608, birth: nil).isAnotherFile(than: file))
        #expect(!file.isAnotherFile(than: StoreFileIdentity(inode: 8_860_608, birth: nil)))
    }
}

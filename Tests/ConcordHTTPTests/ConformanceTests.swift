import ConcordTestServers
import ConcordCore
import ConcordRemote
import ConcordHTTP
import ConcordWebDAV
import ConcordTesting
import Foundation
import Testing

/// The remote conformance suite (ConcordTesting) against every backend on a real server.
@Suite struct HTTPConformanceTests {
    @Test(arguments: (ProcessInfo.processInfo.environment["CONCORD_HTTP_BACKENDS"]?.split(separator: ",").compactMap { ServerKind(rawValue: String($0)) }) ?? ServerKind.conformance)
    func everyBackendKeepsTheRemoteContract(_ kind: ServerKind) async throws {
        let remote = try await Backends.fresh(kind)
        let issues = await RemoteConformance.check(remote)
        #expect(issues == [], "\(kind)")
    }
}

/// Failures a user meets, each as its typed error.
@Suite struct HTTPFailureTests {
    /// moto (with signature checking on) and Ceph's gateway both refuse a wrong secret.
    @Test(arguments: [ServerKind.motoSigned, .rgw])
    func aWrongS3SecretIsAnAuthErrorAndAMissingBucketIsMissing(_ kind: ServerKind) async throws {
        let server = try await LoopbackServers.shared.server(kind)
        let good = try Backends.s3(server, bucket: "concord-auth", prefix: "")
        try await good.createBucket()
        try await good.put("concord.json", Array("{}".utf8))
        #expect(try await good.get("concord.json") == Array("{}".utf8))
        let wrong = try Backends.s3(server, bucket: "concord-auth", prefix: "", secret: "not-the-secret")
        await #expect(throws: ConcordError.self) { try await wrong.put("concord.json", [1]) }
        do {
            _ = try await wrong.get("concord.json")
            Issue.record("a wrong secret read the object")
        } catch {
            #expect(error.code == .remoteAuth)
            #expect(error.message.contains("SignatureDoesNotMatch"))
        }
        #expect(try await good.get("concord.json") == Array("{}".utf8), "the refused put changed nothing")
        let missing = try Backends.s3(server, bucket: "concord-no-such-bucket", prefix: "")
        do {
            _ = try await missing.get("concord.json")
            Issue.record("a missing bucket answered")
        } catch {
            #expect(error.code == .remoteMissing)
        }
        #expect(try await missing.bucketExists() == false)
    }

    @Test func aMissingWebDAVCollectionIsMissingNeverAnEmptyStore() async throws {
        let server = try await LoopbackServers.shared.server(.apache)
        let remote = try WebDAVRemote(url: "\(server.origin)/no/such/folder")
        do {
            _ = try await remote.list(prefix: "heads/")
            Issue.record("a missing collection listed as empty")
        } catch {
            #expect(error.code == .remoteMissing)
        }
        #expect(try await remote.rootExists() == false)
    }

    /// Apache answers a MKCOL that loses a race with another MKCOL of the same folder with
    /// 403 ("File exists"): sixteen stores made at once below one new folder all succeed.
    @Test(arguments: ServerKind.webDAV)
    func foldersMadeAtOnceBelowANewFolderAllSucceed(_ kind: ServerKind) async throws {
        let server = try await LoopbackServers.shared.server(kind)
        let parent = "\(server.origin)/race-\(UUID().uuidString.prefix(8).lowercased())"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let remote = try WebDAVRemote(url: "\(parent)/deep/r\(index)")
                    try await remote.createRoot()
                    try await remote.put(RemoteLayout.manifestPath, [UInt8(index)])
                }
            }
            try await group.waitForAll()
        }
        for index in 0..<16 {
            #expect(try await WebDAVRemote(url: "\(parent)/deep/r\(index)").get(RemoteLayout.manifestPath) == [UInt8(index)])
        }
    }

    /// A certificate the system does not trust is refused, in one line naming the remote
    /// and the certificate; nothing is read or written.
    @Test func aSelfSignedCertificateIsRefusedInOneLine() async throws {
        let server = try await LoopbackServers.shared.server(.nginxSelfSigned)
        let remote = try WebDAVRemote(url: "\(server.origin)/stores/tls", retry: .init(attempts: 2, base: .milliseconds(10)))
        do {
            _ = try await remote.list(prefix: "heads/")
            Issue.record("a self-signed certificate was accepted")
        } catch {
            #expect(error.code == .remote)
            #expect(error.message.contains("TLS certificate") && error.message.contains(server.origin), "\(error)")
            #expect(!error.message.contains("\n"))
        }
        #expect(!FileManager.default.fileExists(atPath: server.directory + "/data/stores/tls"))
    }

    /// A host name that does not resolve (`.invalid` never does) is one line saying so.
    @Test func aHostNameThatDoesNotResolveIsOneLineSayingSo() async throws {
        let remote = try WebDAVRemote(url: "http://concord-test.invalid/store", retry: .init(attempts: 1))
        do {
            _ = try await remote.list(prefix: "heads/")
            Issue.record("a host name in .invalid resolved")
        } catch {
            #expect(error.code == .remote)
            #expect(error.message.contains("does not resolve") && error.message.contains("concord-test.invalid"), "\(error)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test func anUnreachableServerIsARemoteErrorNamingIt() async throws {
        let port = try LoopbackServers.freePort()
        let remote = try WebDAVRemote(url: "http://127.0.0.1:\(port)/dav", retry: .init(attempts: 2, base: .milliseconds(10)))
        do {
            _ = try await remote.get("concord.json")
            Issue.record("nothing listens, yet get answered")
        } catch {
            #expect(error.code == .remote)
            #expect(error.message.contains("127.0.0.1:\(port)"))
        }
    }
}

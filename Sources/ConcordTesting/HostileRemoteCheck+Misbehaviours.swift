import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// The checks of answers no honest server gives (``HostileRemoteCheck/Misbehaviour``).
extension HostileRemoteCheck.Checker {
    // MARK: Answers no honest server gives

    mutating func checkMisbehaviours() async {
        let replica = HostileRemoteCheck.replica
        let cases: [(Misbehaviour, String)] = [
            (.endlessBody, RemoteLayout.manifestPath), (.trickle, RemoteLayout.head(replica, seq: 7)),
            (.endlessNotFound, RemoteLayout.batch(replica, seq: 8)), (.endlessForbidden, RemoteLayout.snapshot(replica, seq: 9)),
            (.endlessListing, RemoteLayout.replicasPrefix), (.endlessListingPage, RemoteLayout.headsPrefix),
        ]
        for (misbehaviour, path) in cases {
            guard await plant("\(misbehaviour) at \(path)", { try await $0.play(misbehaviour, at: $1) }, path) else { continue }
            await answered(misbehaviour, path)
            await unplant(path)
        }
    }

    mutating func answered(_ misbehaviour: Misbehaviour, _ path: String) async {
        let context = "with \(misbehaviour) for \(path)"
        let remote = remote
        let limit = RemoteLayout.maxObjectSize(forPath: path)
        switch misbehaviour {
        case .endlessBody:
            let (outcome, grown) = await measured("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                Self.show(try await remote.get(path, limit: limit))
            }
            expectLimitExceeded(context, "get(\(path), limit: \(limit))", outcome, naming: path, limit: limit)
            if grown > 512 << 20 { issues.append("\(context): get(\(path), limit: \(limit)) grew the peak memory by \(grown >> 20) MiB") }
            await expectBoundedStream(context, path, limit: limit)
        case .trickle:
            let outcome = await call("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                Self.show(try await remote.get(path, limit: limit))
            }
            if outcome.code != .limitExceeded { issues.append("\(context): get(\(path), limit: \(limit)) \(outcome); expected limitExceeded at its time bound") }
            let streamed = await call("\(context): getStream(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                var count = 0
                let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in count += chunk.count }
                return found ? "an object of \(count) bytes" : nil
            }
            if streamed.code != .limitExceeded {
                issues.append("\(context): getStream(\(path), limit: \(limit)) \(streamed); expected limitExceeded at its time bound")
            }
        case .endlessNotFound:
            let calls: [(String, @Sendable () async throws(ConcordError) -> String?)] = [
                ("get(\(path))", { @Sendable () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }),
                ("get(\(path), limit:)", { @Sendable () async throws(ConcordError) -> String? in Self.show(try await remote.get(path, limit: limit)) }),
                ("getStream(\(path))", { @Sendable () async throws(ConcordError) -> String? in
                    try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in } ? "an object" : nil
                }),
                ("getStream(\(path), limit:)", { @Sendable () async throws(ConcordError) -> String? in
                    try await remote.getStream(path, limit: limit) { (_: [UInt8]) throws(ConcordError) in } ? "an object" : nil
                }),
            ]
            for (what, body) in calls {
                let outcome = await call("\(context): \(what)", body)
                if case .returned(nil) = outcome {} else { issues.append("\(context): \(what) \(outcome); expected nothing (not found), promptly") }
            }
        case .endlessForbidden:
            let outcome = await call("\(context): get(\(path))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
            if case let .threw(error) = outcome {
                if !error.message.contains(path) { issues.append("\(context): the error of get(\(path)) does not name the object: \(error.message)") }
            } else {
                issues.append("\(context): get(\(path)) \(outcome); expected a typed error naming it, promptly")
            }
        case .endlessListing:
            let outcome = await call("\(context): list(prefix: \"\(path)\")") { () async throws(ConcordError) -> String? in
                Self.paths(try await remote.list(prefix: path))
            }
            switch outcome {
            case .returned(nil), .threw: break
            case .returned, .hung: issues.append("\(context): list(prefix: \"\(path)\") \(outcome); expected an empty listing or a typed error, promptly")
            }
        case .endlessListingPage:
            let (outcome, grown) = await measured("\(context): list(prefix: \"\(path)\")") { () async throws(ConcordError) -> String? in
                Self.paths(try await remote.list(prefix: path))
            }
            if outcome.code != .limitExceeded { issues.append("\(context): list(prefix: \"\(path)\") \(outcome); expected limitExceeded at the page's bound") }
            if grown > 512 << 20 { issues.append("\(context): list(prefix: \"\(path)\") grew the peak memory by \(grown >> 20) MiB") }
        }
    }
}

import ConcordHTTP
import ConcordS3
import Foundation
import NIOHTTP1

/// moto checks signatures only for an IAM user it made: the first three calls (create a
/// user, allow it `s3:*`, make it a key) run unchecked, after which every request must be
/// signed with the key moto returned.
enum MotoSetup {
    static func createUser(origin: String) async throws -> (String, String) {
        let transport = HTTPTransport(remoteName: "moto at \(origin)")
        // Readiness without spending one of the three unchecked calls.
        for _ in 0..<100 {
            if let response = try? await transport.send("moto-api", prepare: { _ in HTTPRequestSpec(method: .GET, url: origin + "/moto-api/") }),
               response.status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#
        _ = try await call(transport, origin, ["Action": "CreateUser", "UserName": "concord"])
        _ = try await call(transport, origin, ["Action": "PutUserPolicy", "UserName": "concord", "PolicyName": "s3", "PolicyDocument": policy])
        let answer = try await call(transport, origin, ["Action": "CreateAccessKey", "UserName": "concord"])
        guard let xml = S3XML.parse(Array(answer.utf8), record: "-"), let key = xml.fields["AccessKeyId"], let secret = xml.fields["SecretAccessKey"] else {
            throw ServerUnavailable(description: "moto did not return an access key: \(answer.prefix(300))")
        }
        return (key, secret)
    }

    static func call(_ transport: HTTPTransport, _ origin: String, _ parameters: [String: String]) async throws -> String {
        var all = parameters
        all["Version"] = "2010-05-08"
        let body = Array(all.sorted { $0.key < $1.key }.map { "\(SigV4.encode($0.key, keepSlash: false))=\(SigV4.encode($0.value, keepSlash: false))" }
            .joined(separator: "&").utf8)
        let signer = SigV4(credentials: .init(accessKey: "AKIDEXAMPLE", secretKey: "setup"), region: "us-east-1", service: "iam", s3: false)
        let host = String(origin.dropFirst("http://".count))
        let response = try await transport.send("IAM \(parameters["Action"] ?? "")", body: body) { _ in
            let date = S3Remote.amzDate(Date())
            let headers = [("Host", host), ("x-amz-date", date), ("Content-Type", "application/x-www-form-urlencoded")]
            let signature = signer.sign(method: "POST", path: "/", query: [], headers: headers, payloadHash: SigV4.hex(SigV4.sha256(body)), date: date)
            var http = HTTPHeaders(headers)
            http.add(name: "Authorization", value: signature.authorization)
            return HTTPRequestSpec(method: .POST, url: origin + "/", headers: http)
        }
        guard response.status == 200 else { throw ServerUnavailable(description: "moto IAM \(parameters["Action"] ?? ""): HTTP \(response.status) \(response.text.prefix(300))") }
        return response.text
    }
}

import ConcordCore
import Foundation

extension SigV4.Credentials {
    /// Credentials as the AWS tools find them: `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN` if set), else the profile
    /// `AWS_PROFILE` (or `default`) of `AWS_SHARED_CREDENTIALS_FILE` (or
    /// `~/.aws/credentials`). Throws ``/ConcordRemote/ConcordCore/ConcordError/Code/remoteAuth`` naming
    /// what is missing.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConcordError) -> SigV4.Credentials {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let key = value("AWS_ACCESS_KEY_ID") {
            guard let secret = value("AWS_SECRET_ACCESS_KEY") else {
                throw ConcordError(.remoteAuth, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both (and AWS_SESSION_TOKEN for temporary credentials)")
            }
            return SigV4.Credentials(accessKey: key, secretKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        }
        let profile = value("AWS_PROFILE") ?? value("AWS_DEFAULT_PROFILE") ?? "default"
        let home = value("HOME") ?? NSHomeDirectory()
        let file = value("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials"
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw ConcordError(.remoteAuth, "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write profile [\(profile)] in \(file)")
        }
        guard let section = parseINI(text)[profile] else {
            throw ConcordError(.remoteAuth, "no profile [\(profile)] in \(file): set AWS_PROFILE to one it has, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        guard let key = section["aws_access_key_id"], let secret = section["aws_secret_access_key"] else {
            throw ConcordError(.remoteAuth, "profile [\(profile)] in \(file) lacks aws_access_key_id or aws_secret_access_key")
        }
        return SigV4.Credentials(accessKey: key, secretKey: secret, sessionToken: section["aws_session_token"])
    }

    /// `[section]` → `key = value`, as the AWS credentials file writes them.
    static func parseINI(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                var name = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                if name.hasPrefix("profile ") { name = String(name.dropFirst("profile ".count)).trimmingCharacters(in: .whitespaces) }
                current = name
                sections[name, default: [:]] = sections[name] ?? [:]
            } else if let current, let equals = line.firstIndex(of: "=") {
                let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                sections[current]?[key] = value
            }
        }
        return sections
    }
}

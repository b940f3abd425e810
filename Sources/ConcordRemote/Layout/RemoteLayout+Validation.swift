import ConcordCore

extension RemoteLayout {
    /// Checks a path a caller wants to put, get or delete: it must be a name of the layout
    /// (``parse(_:)`` accepts it).
    ///
    /// Rule: remotes call this before touching storage. *Why*: a name outside the layout
    /// could escape the store's root (`..`, `/etc/…`), collide with a remote's temporary
    /// files, or be written and then never seen again, since listings show only layout
    /// names. Throws ``ConcordCore/ConcordError/Code/invalidRemotePath`` — a caller's bug.
    public static func validateObjectPath(_ path: String) throws(ConcordError) {
        try validateSyntax(path, what: "remote path", allowEmptyLast: false)
        guard parse(path) != nil else {
            throw ConcordError(
                .invalidRemotePath,
                "remote path \(quoted(path)) is not a name of the store layout (docs/ARCHITECTURE.md §4: concord.json, "
                    + "heads/<replica>-<seq>, heads/keys/<generation>, heads/peers/<tag>, replicas/<replica>/deltas/<seq>, snapshots/<replica>-<seq>, "
                    + "blobs/<2 hex>/<keyed name>, lowercase hex); nothing was read or written — build paths with RemoteLayout"
            )
        }
    }

    /// Checks a listing prefix: relative, no `..` or `.` or empty folder component, no NUL
    /// or backslash. Any such string is accepted, even one no layout name starts with (its
    /// listing is empty). Throws ``ConcordCore/ConcordError/Code/invalidRemotePath``.
    public static func validatePrefix(_ prefix: String) throws(ConcordError) {
        try validateSyntax(prefix, what: "listing prefix", allowEmptyLast: true)
    }

    private static func validateSyntax(_ path: String, what: String, allowEmptyLast: Bool) throws(ConcordError) {
        func reject(_ why: String) -> ConcordError {
            ConcordError(.invalidRemotePath, "\(what) \(quoted(path)) is invalid: \(why); nothing was read or written — this is a bug in the caller, build paths with RemoteLayout")
        }
        if path.isEmpty && !allowEmptyLast { throw reject("it is empty") }
        if path.hasPrefix("/") { throw reject("it is absolute; paths are relative to the store's root") }
        if path.utf8.contains(0) { throw reject("it contains a NUL byte") }
        if path.utf8.contains(UInt8(ascii: "\\")) { throw reject("it contains a backslash") }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, component) in components.enumerated() {
            let isLast = index == components.count - 1
            if component == ".." { throw reject("it contains \"..\", which could leave the store's root") }
            if component == "." { throw reject("it contains a \".\" component") }
            if component.isEmpty && !(isLast && allowEmptyLast) { throw reject("it has an empty component") }
        }
    }

    /// `path` in quotes, with control characters escaped so a message stays one readable line.
    static func quoted(_ path: String) -> String {
        var out = "\""
        for scalar in path.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7f {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

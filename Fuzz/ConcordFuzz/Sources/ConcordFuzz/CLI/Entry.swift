/// The one helper `ValueParser.swift` takes from the command line's `Entry`
/// (Sources/ConcordCLI/Entry.swift), copied as it is there. `ValueParser.swift` itself is
/// compiled here through a symbolic link, unchanged, since an executable target's code
/// cannot be imported; so is ConcordCore's `Hex.swift`, which it uses and which is
/// `package`-visible only inside the Concord package. (This `Entry` shadows ConcordCore's
/// inside this module, as the CLI's does inside the CLI.)
enum Entry {
    static func clip(_ text: String, to limit: Int = 80) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "… (\(text.utf8.count) bytes)"
    }
}

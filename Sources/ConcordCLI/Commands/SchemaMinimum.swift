import ArgumentParser
import Concord

struct SchemaMinimum: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "minimum", abstract: "Refuse local writes on every replica whose schema version is below N (none: remove it).",
        discussion: "It reaches the other replicas with this replica's next head (`concord sync`); README, \"Evolving your model\".")

    @Argument(help: "The oldest schema version whose writes are accepted, or `none`.") var version: String
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard version == "none" || (Int(version).map { $0 >= 1 } ?? false) else {
            throw ValidationError("the minimum is a schema version (1, 2, …) or `none`")
        }
    }

    func run() throws {
        let store = try options.openStore()
        let minimum = Int(version)
        try store.requireSchemaVersion(atLeast: minimum)
        options.emit(.object([("minimum", minimum.map { .int(Int64($0)) } ?? .null)]),
                     minimum.map { "replicas below schema version \($0) refuse local writes (from their next sync)" } ?? "no minimum schema version")
    }
}

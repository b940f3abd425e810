import ArgumentParser

@main
struct ConcordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "concord",
        abstract: "A conflict-free replicated record store that syncs through dumb storage.",
        subcommands: [Demo.self]
    )
}

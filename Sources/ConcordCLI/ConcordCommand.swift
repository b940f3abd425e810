import ArgumentParser

/// `concord`: the command-line tool over the library (README, "Command line").
struct ConcordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "concord",
        abstract: "A conflict-free replicated record store that syncs through dumb storage.",
        discussion: """
            The store file comes from --store PATH (default $CONCORD_STORE, else ./concord.db); the \
            remote's passphrase from $CONCORD_PASSPHRASE, --key-file FILE, or a prompt on a terminal. \
            Every command accepts --json and then prints one JSON document on stdout. Exit codes: \
            0 success, 1 the operation failed, 2 bad usage.
            """,
        subcommands: [
            Init.self, Put.self, Get.self, ListRecords.self, Delete.self, Add.self, Remove.self,
            Attach.self, Export.self, FilesCommand.self, Conflicts.self, Resolve.self, Versions.self, Restore.self,
            RemoteCommand.self, StoresCommand.self, IdCommand.self, MembersCommand.self, Join.self, KeyCommand.self, Sync.self, Status.self, Replicas.self, Compact.self, Doctor.self,
            Dump.self, SchemaCommand.self, QueryCommand.self, Demo.self,
        ]
    )
}

import ArgumentParser
import Concord
import Foundation

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Declare collections (typed, indexed tables to query), show or drop declarations.",
        discussion: """
            A declaration is this replica's own: it changes how this store reads and indexes records, \
            never what it syncs. README, "Querying", gives the schema file's shape.
            """,
        subcommands: [SchemaApply.self, SchemaShow.self, SchemaDrop.self, SchemaMinimum.self])
}

struct SchemaApply: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply", abstract: "Declare every collection of a schema file (declared again where it changed; others stay).")

    @Argument(help: "The schema file (JSON).") var file: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConcordError(.noFile, "no schema file at \(file)")
        }
        let declarations = try CollectionDeclaration.schema(json: Array(data))
        let store = try options.openStore()
        for declaration in declarations { try store.declare(declaration) }
        // Values kept as written that a column does not read (another type, a failed
        // conversion): said, never changed.
        var unread: [String: [String: Int]] = [:]
        for declaration in declarations { unread[declaration.collection] = try store.unreadValues(in: declaration.collection) }
        var lines = declarations.map { "declared \($0.collection) (version \($0.version)): table \($0.tableName)" }
        for declaration in declarations {
            for (field, count) in (unread[declaration.collection] ?? [:]).sorted(by: { $0.key < $1.key }) {
                lines.append("  \(declaration.collection).\(field): \(count) value\(count == 1 ? "" : "s") kept as written, not read as \(declaration.field(field)!.type) (`concord query \(declaration.collection) --where '\(field) = null'` lists them)")
            }
        }
        options.emit(
            .object([("declared", .array(declarations.map { declaration in
                .object([("collection", .string(declaration.collection)), ("table", .string(declaration.tableName)),
                         ("unread", .object((unread[declaration.collection] ?? [:]).sorted(by: { $0.key < $1.key }).map { ($0.key, .int(Int64($0.value))) })),
                         ("version", .int(Int64(declaration.version)))])
            }))]),
            declarations.isEmpty ? "the schema declares no collection" : lines.joined(separator: "\n"))
    }
}

struct SchemaShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print the declarations: with --json, as a schema file.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let declarations = try store.declarations()
        if options.json {
            print(String(decoding: CollectionDeclaration.schemaJSON(declarations), as: UTF8.self))
            return
        }
        guard !declarations.isEmpty else { return print("no collection is declared") }
        for declaration in declarations {
            print("\(declaration.collection) (table \(declaration.tableName), version \(declaration.version))")
            for field in declaration.fields {
                let notes = [field.indexed ? "indexed" : nil, field.searchable ? "searched" : nil, field.collation.map { "collation \($0.rawValue)" }].compactMap { $0 }
                    + SchemaNotes.changes(of: field, in: declaration)
                print("  \(field.name): \(field.type)\(notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")") column \(declaration.columnName(field.name) ?? "")")
            }
            for field in declaration.evolution.retired { print("  \(field.name): \(field.type) (retired: kept as written, no column)") }
        }
    }
}

struct SchemaDrop: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drop", abstract: "Drop a collection's declaration and its table; its records stay.")

    @Argument(help: "The collection.") var collection: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        guard try store.dropDeclaration(collection) else {
            throw ConcordError(.notFound, "collection \(collection) is not declared: `concord schema show` lists the declarations")
        }
        options.emit(.object([("collection", .string(collection)), ("dropped", .bool(true))]), "dropped the declaration of \(collection)")
    }
}

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query", abstract: "Print the records of a declared collection that match, in order.",
        discussion: """
            --where FIELD OP VALUE, OP one of = != < <= > >= in prefix contains match, VALUE JSON as in \
            put: --where 'level>3' --where 'title prefix "Ze"' --where 'tags contains "rpg"'. Several \
            --where are and-ed. --order FIELD[:desc], repeatable; ties are ordered by id. --conflicted \
            keeps the records with an open conflict, --conflict deleteUpdate or --conflict fileFork those \
            with one of that kind (and-ed with the --where).
            """)

    @Argument(help: "The collection (declared: `concord schema apply`).") var collection: String
    @Option(name: .customLong("where"), help: ArgumentHelp("A condition, FIELD OP VALUE.", valueName: "expr")) var conditions: [String] = []
    @Option(name: .customLong("order"), help: ArgumentHelp("Order by FIELD, or FIELD:desc.", valueName: "field[:desc]")) var orders: [String] = []
    @Option(name: .long, help: "At most N records.") var limit: Int?
    @Option(name: .long, help: "Skip the first N records.") var offset: Int?
    @Flag(name: .long, help: "Only records with an open conflict (deleteUpdate or fileFork).") var conflicted = false
    @Option(name: .long, help: ArgumentHelp("Only records with an open conflict of this kind.", valueName: "deleteUpdate|fileFork")) var conflict: String?
    @Flag(name: .long, help: "Print how many records match instead.") var count = false
    @Flag(name: .long, help: "Print the result again each time it changes (with --json, one document a line).") var follow = false
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        _ = try query()
        if let limit, limit < 0 { throw ValidationError("--limit is not negative") }
        if let offset, offset < 0 { throw ValidationError("--offset is not negative") }
    }

    func query() throws -> Query {
        var filters = try conditions.map(QueryExpression.filter)
        if conflicted { filters.append(.hasConflict) }
        if let conflict {
            guard let kind = [Conflict.Kind.deleteUpdate, .fileFork].first(where: { $0.name == conflict }) else {
                throw ValidationError("--conflict is deleteUpdate or fileFork, not \(conflict)")
            }
            filters.append(.hasConflict(kind))
        }
        return Query(collection, filter: filters.isEmpty ? nil : filters.count == 1 ? filters[0] : .and(filters),
                     orders: try orders.map(QueryExpression.order), limit: limit, offset: offset)
    }

    /// The output for the store as it is. A query that cannot run (a field not declared, a
    /// value of the wrong type) fails with its code and exit 2: bad input (`Entry.fail`).
    func output(_ store: Store, _ query: Query) throws -> (json: JSON, text: String) {
        if count {
            let number = try store.count(query)
            return (.object([("count", .int(Int64(number)))]), "\(number)")
        }
        return Format.records(collection, try store.query(query), empty: "no records match")
    }

    func run() async throws {
        let store = try options.openStore()
        let query = try query()
        guard follow else {
            let output = try output(store, query)
            return options.emit(output.json, output.text)
        }
        // Store.observe yields the results now and after each commit that changed them,
        // this process's or another's (`put`, `sync` in another terminal).
        if count {
            for try await number in store.observeCount(query) {
                options.emit(.object([("count", .int(Int64(number)))]), "\(number)")
                fflush(nil)
            }
        } else {
            for try await records in store.observe(query) {
                let output = Format.records(collection, records, empty: "no records match")
                options.emit(output.json, output.text)
                fflush(nil)
            }
        }
    }
}

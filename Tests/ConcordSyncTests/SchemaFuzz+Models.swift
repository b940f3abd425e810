import ConcordCore
import ConcordStore
import Foundation
import SchemaEvolutionModels

/// The fuzz's model is the schema-evolution tests' (``GameV1``, ``GameV2``, ``GameSchema``).
enum FuzzSchema {
    static func declaration(_ version: Int) throws -> CollectionDeclaration {
        try CollectionDeclaration.schema(json: Array((version == 1 ? GameSchema.version1 : GameSchema.version2).utf8))[0]
    }

    /// The day `n` days after 2024-01-01, as version 1 writes it.
    static func day(_ n: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date(timeIntervalSince1970: 1_704_067_200 + Double(n % 3000) * 86_400))
    }

    /// `text` as version 2 reads it: seconds since 2001 of that UTC day, or nil.
    static func date(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 3, text.count == 10, let year = parts[0], let month = parts[1], let day = parts[2] else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }

    /// What version 1 reads from stored `fields`: the value, and the fields it cannot read.
    static func readingV1(_ id: String, _ fields: [String: FieldValue]) -> (GameV1, Set<String>) {
        var unread: Set<String> = []
        func scalar(_ name: String) -> ScalarValue? { if case let .scalar(value)? = fields[name] { value } else { nil } }
        var game = GameV1(id: id, title: "", level: 0, rating: 0, released: "", tags: [])
        if case let .string(title)? = scalar("title") { game.title = title } else { unread.insert("title") }
        if case let .int(level)? = scalar("level") { game.level = Int(level) } else { unread.insert("level") }
        if case let .int(rating)? = scalar("rating") { game.rating = Int(rating) } else { unread.insert("rating") }
        if case let .string(day)? = scalar("released") { game.released = day } else { unread.insert("released") }
        if case let .set(tags)? = fields["tags"] { game.tags = Set(tags.compactMap { if case let .string(text) = $0 { text } else { nil } }) }
        return (game, unread)
    }

    /// What version 2 reads from stored `fields`.
    static func readingV2(_ id: String, _ fields: [String: FieldValue]) -> (GameV2, Set<String>) {
        var unread: Set<String> = []
        func scalar(_ name: String) -> ScalarValue? { if case let .scalar(value)? = fields[name] { value } else { nil } }
        var game = GameV2(id: id, title: "", tier: 0, rating: 0, released: nil, notes: "", genres: [])
        if case let .string(title)? = scalar("title") { game.title = title } else { unread.insert("title") }
        if case let .int(level)? = scalar("level") { game.tier = Int(level) } else { unread.insert("tier") }
        switch scalar("rating") {
        case let .int(rating)?: game.rating = Double(rating)
        case let .double(rating)?: game.rating = rating
        default: unread.insert("rating")
        }
        switch scalar("released") {
        case let .string(day)?:
            if let date = date(day) { game.released = date } else { unread.insert("released") }
        case let .double(seconds)?: game.released = Date(timeIntervalSinceReferenceDate: seconds)
        case nil: break
        default: unread.insert("released")
        }
        if case let .string(notes)? = scalar("notes") { game.notes = notes }
        if case let .set(genres)? = fields["genres"] { game.genres = Set(genres.compactMap { if case let .string(text) = $0 { text } else { nil } }) }
        return (game, unread)
    }
}

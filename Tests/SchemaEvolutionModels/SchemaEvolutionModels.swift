import ConcordStore
import Foundation

/// Version 1 of the game model that the schema-evolution tests evolve (the store's, the
/// sync fuzz's and the command line's): `level`, an integer `rating`, a `released` day as
/// text (`yyyy-MM-dd`), `tags`.
package struct GameV1: StoredRecord, Equatable {
    package static let collection = "games"
    package var id: String
    package var title: String
    package var level: Int
    package var rating: Int
    package var released: String
    package var tags: Set<String>

    package init(id: String, title: String, level: Int, rating: Int, released: String, tags: Set<String>) {
        (self.id, self.title, self.level, self.rating, self.released, self.tags) = (id, title, level, rating, released, tags)
    }
}

/// Version 2: `level` renamed `tier`, `rating` widened to a double, `released` converted to
/// a date, `notes` added with a default, `genres` a new set, `tags` retired.
package struct GameV2: StoredRecord, Equatable {
    package static let collection = "games"
    package var id: String
    package var title: String
    package var tier: Int
    package var rating: Double
    package var released: Date?
    package var notes: String
    package var genres: Set<String>

    package init(id: String, title: String, tier: Int, rating: Double, released: Date?, notes: String, genres: Set<String>) {
        (self.id, self.title, self.tier, self.rating, self.released, self.notes, self.genres) = (id, title, tier, rating, released, notes, genres)
    }
}

/// The schema files of ``GameV1`` and ``GameV2`` (README, "Evolving your model").
package enum GameSchema {
    package static let version1 = """
        {"version": 1, "collections": {"games": {"fields": {
          "title": {"type": "string", "index": true}, "level": {"type": "int", "index": true},
          "rating": {"type": "int"}, "released": {"type": "string"}, "tags": {"type": "set<string>"}}}}}
        """
    package static let version2 = """
        {"version": 2, "collections": {"games": {"fields": {
          "title": {"type": "string", "index": true},
          "tier": {"type": "int", "index": true, "renamedFrom": "level"},
          "rating": {"type": "double"},
          "released": {"type": "date", "convertedFrom": {"type": "string", "format": "yyyy-MM-dd"}},
          "notes": {"type": "string", "default": ""},
          "genres": {"type": "set<string>"},
          "tags": {"type": "set<string>", "retired": true}}}}}
        """
}

import ArgumentParser
import Concord
import Foundation

/// Reads `query`'s `--where FIELD OP VALUE` and `--order FIELD[:desc]` (README, "Querying").
///
/// OP is one of `= != < <= > >=` (spaces around it optional: `level>3`) or `in prefix
/// contains match` (with spaces: `title prefix "Ze"`); the first operator in the text
/// counts, so a field's name holds none. VALUE is JSON as in `put` (a bare word is a
/// string); `in` takes an array. `= null` means the field is null, `!= null` that it is not.
enum QueryExpression {
    static let words = ["in", "prefix", "contains", "match"]
    static let symbols = ["!=", "<=", ">=", "=", "<", ">"]

    static func filter(_ text: String) throws -> Query.Filter {
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            for symbol in symbols where characters[index...].starts(with: symbol) {
                return try make(String(characters[..<index]), symbol, String(characters[(index + symbol.count)...]), text)
            }
            if characters[index] == " " {
                for word in words where characters[(index + 1)...].starts(with: word + " ") {
                    return try make(String(characters[..<index]), word, String(characters[(index + word.count + 2)...]), text)
                }
            }
            index += 1
        }
        throw ValidationError("--where '\(text)' is not FIELD OP VALUE (OP one of = != < <= > >= in prefix contains match; for example level>3 or title prefix '\"Ze\"')")
    }

    private static func make(_ rawField: String, _ op: String, _ rawValue: String, _ text: String) throws -> Query.Filter {
        let field = rawField.trimmingCharacters(in: .whitespaces)
        let valueText = rawValue.trimmingCharacters(in: .whitespaces)
        guard !field.isEmpty else { throw ValidationError("--where '\(text)' names no field") }
        guard !valueText.isEmpty else { throw ValidationError("--where '\(text)' gives no value") }
        let parsed = try ValueParser.value(valueText, field: field)
        switch (op, parsed) {
        case ("in", let .list(values)): return .isIn(field, values)
        case ("in", .scalar): throw ValidationError("--where '\(text)': in takes a JSON array, for example level in '[1,2]'")
        case (_, .list): throw ValidationError("--where '\(text)': only in takes an array")
        case ("=", .scalar(.null)): return .isNull(field)
        case ("!=", .scalar(.null)): return .not(.isNull(field))
        case let ("prefix", .scalar(.string(prefix))): return .prefix(field, prefix)
        case ("prefix", _): throw ValidationError("--where '\(text)': prefix takes a string")
        case let ("match", .scalar(.string(words))): return .matches(field, words)
        case ("match", _): throw ValidationError("--where '\(text)': match takes a string")
        case let ("contains", .scalar(element)): return .contains(field, element)
        case let (symbol, .scalar(value)):
            guard let comparison = Query.Comparison(rawValue: symbol) else { throw ValidationError("--where '\(text)': unknown operator \(symbol)") }
            return .field(field, comparison, value)
        }
    }

    static func order(_ text: String) throws -> Query.Order {
        if let colon = text.lastIndex(of: ":") {
            let direction = text[text.index(after: colon)...]
            if direction == "desc" || direction == "asc" {
                let field = String(text[..<colon])
                guard !field.isEmpty else { throw ValidationError("--order '\(text)' names no field") }
                return Query.Order(field, descending: direction == "desc")
            }
        }
        guard !text.isEmpty else { throw ValidationError("--order names no field") }
        return Query.Order(text)
    }
}

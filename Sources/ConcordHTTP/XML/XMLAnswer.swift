import NIOCore

/// What turns ``XMLEvent``s into a value: the PROPFIND and S3 answer readers.
public protocol XMLEventReader {
    mutating func take(_ event: XMLEvent)
}

/// An XML answer read as it arrives (``HTTPBodyReader``): the bytes go through an
/// ``XMLStreamParser`` to `Reader`, so only what the reader makes of them and the parser's
/// bounded state (``XMLLimits``) are kept, never the answer itself.
public struct XMLAnswer<Reader: XMLEventReader>: HTTPBodyReader {
    var parser: XMLStreamParser
    /// Nil once the answer failed to parse (or while it is being fed).
    var reader: Reader?

    public init(_ reader: Reader, limits: XMLLimits = XMLLimits()) {
        parser = XMLStreamParser(limits: limits)
        self.reader = reader
    }

    /// A whole answer held in memory: what `reader` made of it, or nil if it is not
    /// well-formed XML within `limits`.
    public static func parse(_ bytes: [UInt8], into reader: Reader, limits: XMLLimits = XMLLimits()) -> Reader? {
        var answer = XMLAnswer(reader, limits: limits)
        answer.feed(bytes)
        return answer.finish()
    }

    public mutating func take(_ bytes: ByteBufferView) -> Bool {
        feed(bytes)
    }

    /// Parses the next bytes; false once the answer has failed to parse.
    @discardableResult
    public mutating func feed(_ bytes: some Collection<UInt8>) -> Bool {
        guard var reader = reader.take() else { return false }
        do throws(XMLStreamError) {
            try parser.feed(bytes) { reader.take($0) }
        } catch {
            return false
        }
        self.reader = reader
        return true
    }

    /// What the reader made of the answer, or nil if it is not well-formed XML within the
    /// limits (truncated, say).
    public mutating func finish() -> Reader? {
        guard var reader = reader.take() else { return nil }
        do throws(XMLStreamError) {
            try parser.finish { reader.take($0) }
        } catch {
            return nil
        }
        return reader
    }
}

import NIOCore

/// What reads a successful answer's body as it arrives
/// (``HTTPTransport/send(_:body:limit:reader:prepare:)``), so that a long answer — a
/// listing page of up to 32 MiB — is never held whole: ``/ConcordHTTP/XMLStreamParser``
/// readers keep only what they make of it.
public protocol HTTPBodyReader {
    /// Takes the next bytes of the body; false stops the read there (the reader knows why:
    /// a parse failure, say), and the rest is never fetched.
    mutating func take(_ bytes: ByteBufferView) -> Bool
}

/// The reader that keeps the body whole, for answers that are small by their kind (an
/// object of known limit, an upload's answer).
struct CollectingReader: HTTPBodyReader {
    var bytes: [UInt8] = []

    mutating func take(_ bytes: ByteBufferView) -> Bool {
        self.bytes += bytes
        return true
    }
}

import ConcordHTTP
import ConcordS3
import ConcordTesting
import ConcordWebDAV
import Testing

/// The XML parser PROPFIND and S3 answers are read with: what servers send reads the same
/// fed whole or cut anywhere; whatever is not well-formed, refused on purpose (DOCTYPE) or
/// over a limit fails with its own code.
@Suite struct XMLStreamParserTests {
    static let dav = "DAV:"
    static let s3 = "http://s3.amazonaws.com/doc/2006-03-01/"

    /// The events of `bytes` fed in `chunks` (split at the given offsets).
    static func events(_ bytes: [UInt8], splitAt cuts: [Int] = [], limits: XMLLimits = XMLLimits()) throws(XMLStreamError) -> [XMLEvent] {
        var parser = XMLStreamParser(limits: limits)
        var events: [XMLEvent] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            try parser.feed(bytes[start..<cut]) { events.append($0) }
            start = cut
        }
        try parser.finish { events.append($0) }
        return events
    }

    static func events(_ text: String, limits: XMLLimits = XMLLimits()) throws(XMLStreamError) -> [XMLEvent] {
        try events(Array(text.utf8), limits: limits)
    }

    /// The code `bytes` fail with, or nil if they parse.
    static func failure(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) -> XMLStreamError.Code? {
        do throws(XMLStreamError) {
            _ = try events(bytes, limits: limits)
            return nil
        } catch {
            return error.code
        }
    }

    static func failure(_ text: String, limits: XMLLimits = XMLLimits()) -> XMLStreamError.Code? {
        failure(Array(text.utf8), limits: limits)
    }

    static func name(_ namespace: String, _ local: String) -> XMLName { XMLName(namespace: namespace, local: local) }

    /// The text of an answer's events, without whitespace-only runs.
    static func texts(_ events: [XMLEvent]) -> [String] {
        events.compactMap { event in
            guard case let .text(text) = event, !text.allSatisfy(\.isWhitespace) else { return nil }
            return text
        }
    }

    // MARK: What servers send

    @Test func namespacePrefixesResolve() throws {
        // Apache binds DAV: again under another prefix on each response; nginx and rclone
        // use D:, Nextcloud a default namespace; S3 a default namespace of its own.
        let apache = try Self.events("""
            <D:multistatus xmlns:D="DAV:"><D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">\
            <lp1:getcontentlength>3</lp1:getcontentlength><lp2:executable>F</lp2:executable></D:response></D:multistatus>
            """)
        #expect(apache == [
            .start(Self.name(Self.dav, "multistatus")), .start(Self.name(Self.dav, "response")),
            .start(Self.name(Self.dav, "getcontentlength")), .text("3"), .end(Self.name(Self.dav, "getcontentlength")),
            .start(Self.name("http://apache.org/dav/props/", "executable")), .text("F"), .end(Self.name("http://apache.org/dav/props/", "executable")),
            .end(Self.name(Self.dav, "response")), .end(Self.name(Self.dav, "multistatus")),
        ])
        let defaults = try Self.events(#"<multistatus xmlns="DAV:"><x:a xmlns:x="urn:x"><b xmlns=""/><c/></x:a></multistatus>"#)
        #expect(defaults.compactMap { if case let .start(name) = $0 { name } else { nil } } == [
            Self.name(Self.dav, "multistatus"), Self.name("urn:x", "a"), Self.name("", "b"), Self.name(Self.dav, "c"),
        ])
        // A prefix bound again inside an element is back to its outer binding after it.
        let rebound = try Self.events(#"<p:a xmlns:p="urn:1"><p:b xmlns:p="urn:2"/><p:c/></p:a>"#)
        #expect(rebound.compactMap { if case let .end(name) = $0 { name } else { nil } } == [
            Self.name("urn:2", "b"), Self.name("urn:1", "c"), Self.name("urn:1", "a"),
        ])
        // A namespace name may hold references; `xml:` needs no declaration.
        let escaped = try Self.events(#"<D:a xmlns:D="D&#65;V:" xml:lang="en"/>"#)
        #expect(escaped == [.start(Self.name(Self.dav, "a")), .end(Self.name(Self.dav, "a"))])
    }

    @Test func entitiesAndCharacterReferences() throws {
        let events = try Self.events("<a>&lt;&gt;&amp;&apos;&quot; &#65;&#x42;&#x1F600; caf\u{E9}</a>")
        #expect(Self.texts(events) == ["<>&'\" AB\u{1F600} caf\u{E9}"])
    }

    @Test func cdataCommentsAndInstructionsInText() throws {
        // One run of text between two tags: CDATA joins it, comments and PIs drop out.
        let events = try Self.events("<a>x<!-- c - d -->y<?pi data?><![CDATA[<b>&amp;]]]]><![CDATA[]]></a>")
        #expect(events == [.start(Self.name("", "a")), .text("xy<b>&amp;]]"), .end(Self.name("", "a"))])
        let bracket = try Self.events("<a><![CDATA[]]]></a><!-- after --><?pi?>")
        #expect(Self.texts(bracket) == ["]"])
    }

    @Test func declarationBOMAndLineEnds() throws {
        let declared = try Self.events(Array([0xEF, 0xBB, 0xBF]) + Array("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone='yes' ?>\r\n<a>1\r\n2\r3</a>\n".utf8))
        #expect(Self.texts(declared) == ["1\n2\n3"])
        #expect(try Self.events("<?xml version='1.0'?><a/>").count == 2)
    }

    /// Answers recorded from Apache, nginx, rclone and moto (the fuzz seeds) and the ones
    /// `ParserTests` quotes read as the same events fed whole, a byte at a time, or cut in
    /// two at every offset.
    @Test func everyChunkBoundaryReadsTheSame() throws {
        var answers = FuzzCorpus.files("Fuzz/Corpus/propfind").filter { $0.name.hasSuffix(".xml") }
            + FuzzCorpus.files("Fuzz/Corpus/s3xml").filter { $0.name.hasSuffix(".xml") }
        answers += [("apache", ParserTests.apache), ("absolute", ParserTests.absolute), ("listing", ParserTests.listing)]
            .map { ($0.0, Array($0.1.utf8)) }
        #expect(answers.count >= 17)
        for answer in answers {
            let whole = try Self.events(answer.bytes)
            #expect(whole.count > 10, "\(answer.name)")
            #expect(try Self.events(answer.bytes, splitAt: Array(1..<answer.bytes.count)) == whole, "\(answer.name) a byte at a time")
            for cut in 0...answer.bytes.count {
                #expect(try Self.events(answer.bytes, splitAt: [cut]) == whole, "\(answer.name) cut at \(cut)")
            }
        }
    }

    /// A failure is the same wherever the answer is cut, at the same offset.
    @Test func everyChunkBoundaryFailsTheSame() {
        let answers = ["<a><b></a>", "<a>&nope;</a>", "<a>caf\u{E9}</a>\u{0}", "<!DOCTYPE a><a/>", "<a>" + String(repeating: "x", count: 100) + "</a>"]
        let limits = XMLLimits(maxTextLength: 50)
        for answer in answers.map({ Array($0.utf8) }) {
            var expected: XMLStreamError?
            do throws(XMLStreamError) { _ = try Self.events(answer, limits: limits) } catch { expected = error }
            #expect(expected != nil)
            for cut in 0...answer.count {
                #expect(throws: expected!) { try Self.events(answer, splitAt: [cut], limits: limits) }
            }
        }
    }

    @Test func recordedAnswersGiveTheirEntries() throws {
        for seed in FuzzCorpus.files("Fuzz/Corpus/propfind") where seed.name.hasSuffix(".xml") {
            let entries = try #require(PropfindParser.parse(seed.bytes), "\(seed.name)")
            #expect(entries.count >= 2, "\(seed.name)")
            #expect(entries.first?.isCollection == true, "\(seed.name): the folder itself comes first")
            #expect(entries.dropFirst().allSatisfy { $0.path.hasPrefix(entries[0].path) }, "\(seed.name)")
            #expect(entries.allSatisfy { $0.modified != nil }, "\(seed.name)")
        }
        let heads = try #require(PropfindParser.parse(FuzzCorpus.files("Fuzz/Corpus/propfind").first { $0.name == "nginx-heads.xml" }?.bytes ?? []))
        #expect(heads == [
            PropfindEntry(path: "/heads/", isCollection: true, size: nil, modified: 1_795_654_194_000),
            PropfindEntry(path: "/heads/0102030405060708090a0b0c0d0e0f10-0000000000000001", isCollection: false, size: 40, modified: 1_795_654_195_000),
        ])
        let uploads = try #require(S3XML.parse(FuzzCorpus.files("Fuzz/Corpus/s3xml").first { $0.name == "moto-uploads.xml" }?.bytes ?? [], record: "Upload"))
        #expect(uploads.root == "ListMultipartUploadsResult")
        #expect(uploads.fields["IsTruncated"] == "false")
        #expect(uploads.records.map { $0["Key"] } == ["store/blobs/ab/big"])
        let error = try #require(S3XML.parse(FuzzCorpus.files("Fuzz/Corpus/s3xml").first { $0.name == "moto-error.xml" }?.bytes ?? [], record: "-"))
        #expect(error.root == "Error")
        #expect(error.fields["Code"] == "NoSuchKey")
    }

    // MARK: What is refused

    @Test(arguments: [
        // Not well-formed.
        ("<a/><b/>", XMLStreamError.Code.malformed), ("text<a/>", .malformed), ("<a/>text", .malformed),
        ("<a>]]></a>", .malformed), ("<a><!-- a -- b --></a>", .malformed), ("<a><!-- x ---></a>", .malformed),
        (" <?xml version=\"1.0\"?><a/>", .malformed), ("<a/><?xml version=\"1.0\"?>", .malformed), ("<?XML version=\"1.0\"?><a/>", .malformed),
        ("<?xml version=\"2.0\"?><a/>", .malformed), ("<?xml encoding=\"UTF-8\"?><a/>", .malformed), ("<?xml version=\"1.0\" standalone=\"maybe\"?><a/>", .malformed),
        ("<a>&</a>", .malformed), ("<a>& amp;</a>", .malformed), ("<a b=1/>", .malformed), ("<a b=\"<\"/>", .malformed), ("<a b/>", .malformed),
        ("<a b=\"1\"c=\"2\"/>", .malformed), ("<a:/>", .malformed), ("<:a/>", .malformed), ("<a:b:c/>", .malformed), ("<a:1b/>", .malformed), ("<1a/>", .malformed),
        ("<a></a >x", .malformed), ("<a></a b>", .malformed), ("<a/ >", .malformed), ("<![CDATA[x]]><a/>", .malformed), ("<a><![CDAT[x]]></a>", .malformed),
        ("</a>", .malformed), ("<a><!x></a>", .malformed), ("<?x:y?><a/>", .malformed), ("<html>not found</html", .truncated),
        // Ends early.
        ("", .truncated), ("  ", .truncated), ("<a>", .truncated), ("<a><b/>", .truncated), ("<a", .truncated), ("<a><!-- x", .truncated),
        ("<?xml version=\"1.0\"?>", .truncated), ("<a><![CDATA[x]]", .truncated),
        // Tags that do not match.
        ("<a></b>", .mismatchedTag), ("<a><b></a></b>", .mismatchedTag), ("<D:a xmlns:D=\"DAV:\" xmlns:E=\"DAV:\"></E:a>", .mismatchedTag),
        // Entities: the five, and characters XML allows.
        ("<a>&nbsp;</a>", .unknownEntity), ("<a>&xxxxxxxxxxxxxxx;</a>", .unknownEntity), ("<a>&#0;</a>", .unknownEntity), ("<a>&#xD800;</a>", .unknownEntity),
        ("<a>&#x110000;</a>", .unknownEntity), ("<a>&#;</a>", .unknownEntity), ("<a>&#x;</a>", .unknownEntity), ("<a>&#12a;</a>", .unknownEntity),
        ("<a b=\"&bad;\"/>", .unknownEntity),
        // DTDs, whatever they hold.
        ("<!DOCTYPE a><a/>", .doctype), ("<!DOCTYPE a [<!ENTITY x \"xxxxxxxx\"><!ENTITY y \"&x;&x;&x;\">]><a>&y;</a>", .doctype),
        ("<?xml version=\"1.0\"?>\n<!DOCTYPE html><html/>", .doctype),
        // Encodings other than UTF-8; characters XML forbids.
        ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>", .unsupportedEncoding), ("<?xml version=\"1.0\" encoding=\"UTF-16\"?><a/>", .unsupportedEncoding),
        ("<a>\u{0}</a>", .invalidCharacter), ("<a>\u{1B}</a>", .invalidCharacter), ("<a>\u{FFFF}</a>", .invalidCharacter),
        // Namespaces.
        ("<p:a/>", .namespace), ("<a p:b=\"1\"/>", .namespace), ("<a xmlns:p=\"\"/>", .namespace), ("<a xmlns:xmlns=\"urn:x\"/>", .namespace),
        ("<a xmlns:xml=\"urn:x\"/>", .namespace), ("<a xmlns:p=\"http://www.w3.org/XML/1998/namespace\"/>", .namespace),
        ("<a xmlns=\"http://www.w3.org/2000/xmlns/\"/>", .namespace), ("<a b=\"1\" b=\"2\"/>", .namespace),
        ("<a xmlns:p=\"u\" xmlns:q=\"u\" p:b=\"1\" q:b=\"2\"/>", .namespace), ("<a><p:b xmlns:p=\"u\"/><p:c/></a>", .namespace),
    ])
    func malformedAnswersFailTyped(answer: String, code: XMLStreamError.Code) {
        #expect(Self.failure(answer) == code, "\(answer)")
    }

    @Test(arguments: [
        ("C0 80 (overlong NUL)", [0xC0, 0x80]), ("ED A0 80 (a surrogate)", [0xED, 0xA0, 0x80]), ("FF", [0xFF]),
        ("F4 90 80 80 (past U+10FFFF)", [0xF4, 0x90, 0x80, 0x80]), ("E0 80 80 (overlong)", [0xE0, 0x80, 0x80]),
        ("C3 28 (no continuation)", [0xC3, 0x28]), ("80 (a lone continuation)", [0x80]),
    ] as [(String, [UInt8])])
    func badUTF8FailsTyped(what: String, bytes: [UInt8]) {
        #expect(Self.failure(Array("<a>".utf8) + bytes + Array("</a>".utf8)) == .invalidCharacter, "\(what) in text")
        #expect(Self.failure(Array("<a".utf8) + bytes + Array("/>".utf8)) == .invalidCharacter, "\(what) in a name")
    }

    @Test func aUTF8SequenceCutAtTheEndFailsTruncated() {
        #expect(Self.failure(Array("<a/>".utf8) + [0xE2, 0x82]) == .truncated)
        #expect(Self.failure(Array("<a/>".utf8) + [0xE2, 0x82, 0xAC]) == .malformed, "U+20AC whole is text after the root")
    }

    @Test func aFailedParserStaysFailed() throws {
        var parser = XMLStreamParser()
        var events: [XMLEvent] = []
        #expect(throws: XMLStreamError.self) { try parser.feed(Array("<a></b>".utf8)) { events.append($0) } }
        let first = parser.bytesRead
        #expect(throws: XMLStreamError.self) { try parser.feed(Array("<a/>".utf8)) { events.append($0) } }
        #expect(throws: XMLStreamError.self) { try parser.finish { events.append($0) } }
        #expect(parser.bytesRead == first)
        #expect(events == [.start(Self.name("", "a"))])
    }

    // MARK: Limits

    @Test func depthOver64FailsTooDeep() {
        func nested(_ depth: Int) -> String { String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) }
        #expect(Self.failure(nested(64)) == nil)
        #expect(Self.failure(nested(65)) == .tooDeep)
        #expect(Self.failure(nested(3), limits: XMLLimits(maxDepth: 2)) == .tooDeep)
        // Deep nesting never reaches the stack: 20,000 levels fail typed.
        #expect(Self.failure(nested(20_000)) == .tooDeep)
    }

    @Test func namesOver256BytesFailNameTooLong() {
        let long = String(repeating: "n", count: 256)
        #expect(Self.failure("<\(long)/>") == nil)
        #expect(Self.failure("<\(long)n/>") == .nameTooLong)
        #expect(Self.failure("<a \(long)n=\"1\"/>") == .nameTooLong)
        #expect(Self.failure("<?\(long)n?><a/>") == .nameTooLong)
        #expect(Self.failure("<a></\(long)n>") == .nameTooLong)
    }

    @Test func textOver64KiBBetweenTagsFailsTextTooLong() {
        let limit = 64 << 10
        #expect(Self.failure("<a>\(String(repeating: "x", count: limit))</a>") == nil)
        #expect(Self.failure("<a>\(String(repeating: "x", count: limit + 1))</a>") == .textTooLong)
        #expect(Self.failure("<a>\(String(repeating: "x", count: limit))&amp;</a>") == .textTooLong)
        #expect(Self.failure("<a><![CDATA[\(String(repeating: "x", count: limit + 1))]]></a>") == .textTooLong)
        // The limit is per run: many runs, each under it, make any length.
        #expect(Self.failure("<a>" + String(repeating: "<b>\(String(repeating: "x", count: limit))</b>", count: 4) + "</a>") == nil)
        #expect(Self.failure("<a>12345</a>", limits: XMLLimits(maxTextLength: 4)) == .textTooLong)
    }

    @Test func over16AttributesOrValuesOver1KiBFail() {
        func attributes(_ count: Int) -> String { (0..<count).map { " a\($0)=\"v\"" }.joined() }
        #expect(Self.failure("<a\(attributes(16))/>") == nil)
        #expect(Self.failure("<a\(attributes(17))/>") == .tooManyAttributes)
        #expect(Self.failure("<a b=\"\(String(repeating: "v", count: 1024))\"/>") == nil)
        #expect(Self.failure("<a b=\"\(String(repeating: "v", count: 1025))\"/>") == .attributeTooLong)
        #expect(Self.failure("<a xmlns:p=\"\(String(repeating: "v", count: 1025))\"/>") == .attributeTooLong)
    }

    @Test func answersOverMaxBytesFailTooLarge() throws {
        let answer = Array("<a>\(String(repeating: "x", count: 1000))</a>".utf8)
        let limits = XMLLimits(maxBytes: UInt64(answer.count))
        #expect(Self.failure(answer, limits: limits) == nil)
        #expect(Self.failure(answer + [0x20], limits: limits) == .tooLarge)
        // Fed in chunks, it fails at the chunk that passes the limit, having read no further.
        var parser = XMLStreamParser(limits: limits)
        try parser.feed(answer.prefix(500)) { _ in }
        #expect(throws: XMLStreamError.self) { try parser.feed(answer.suffix(from: 500) + [0x20]) { _ in } }
        #expect(parser.bytesRead == UInt64(answer.count))
        // The default is a listing page's limit: 32 MiB.
        #expect(XMLLimits().maxBytes == 32 << 20)
        // A chunk that passes the limit fails before any of it is read.
        var big = XMLStreamParser()
        #expect(throws: XMLStreamError.self) { try big.feed([UInt8](repeating: 0x20, count: (32 << 20) + 1)) { _ in } }
        #expect(big.bytesRead == 32 << 20)
    }

    /// The parsers that read answers fail (nil) on what the XML parser refuses.
    @Test func answerParsersReturnNilOnRefusedXML() {
        let listing = Array(ParserTests.listing.utf8)
        #expect(S3XML.parse(listing, record: "Contents") != nil)
        #expect(S3XML.parse(listing, record: "Contents", limits: XMLLimits(maxBytes: UInt64(listing.count - 1))) == nil)
        #expect(S3XML.parse(Array("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><Error><Code>&a;</Code></Error>".utf8), record: "-") == nil)
        let apache = Array(ParserTests.apache.utf8)
        #expect(PropfindParser.parse(apache)?.count == 2)
        #expect(PropfindParser.parse(apache, limits: XMLLimits(maxDepth: 4)) == nil)
        #expect(PropfindParser.parse(Array("<multistatus xmlns=\"urn:not-dav\"/>".utf8)) == nil)
    }
}

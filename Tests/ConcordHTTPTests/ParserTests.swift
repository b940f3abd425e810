import ConcordTestServers
import ConcordHTTP
import ConcordS3
import ConcordTesting
import ConcordWebDAV
import Foundation
import Testing

/// The PROPFIND and ListObjectsV2 parsers on real answers, and on thousands of seeded
/// mutations of them: they read what servers send and never trap on what they should not.
@Suite struct ParserTests {
    /// Apache mod_dav's answer (prefixes on DAV: properties, a 404 propstat for a property).
    static let apache = """
        <?xml version="1.0" encoding="utf-8"?>
        <D:multistatus xmlns:D="DAV:">
        <D:response xmlns:lp1="DAV:"><D:href>/dav/store/heads/</D:href><D:propstat><D:prop>
        <lp1:resourcetype><D:collection/></lp1:resourcetype><lp1:getlastmodified>Tue, 24 Nov 2026 22:25:16 GMT</lp1:getlastmodified>
        </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
        <D:response xmlns:lp1="DAV:"><D:href>/dav/store/heads/a%20b</D:href><D:propstat><D:prop>
        <lp1:resourcetype/><lp1:getcontentlength>3</lp1:getcontentlength><lp1:getlastmodified>Tue, 24 Nov 2026 22:25:16 GMT</lp1:getlastmodified>
        </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
        <D:propstat><D:prop><D:getcontentlength>999</D:getcontentlength></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat></D:response>
        </D:multistatus>
        """
    /// An answer with absolute hrefs and no prefix on the DAV: namespace (as Nextcloud and others send).
    static let absolute = """
        <?xml version="1.0"?><multistatus xmlns="DAV:"><response><href>https://cloud.example.com/remote.php/dav/x/</href>
        <propstat><prop><resourcetype><collection/></resourcetype></prop><status>HTTP/1.1 200 OK</status></propstat></response>
        <response><href>https://cloud.example.com/remote.php/dav/x/f</href><propstat><prop><resourcetype/><getcontentlength>12</getcontentlength></prop>
        <status>HTTP/1.1 200 OK</status></propstat></response></multistatus>
        """
    static let listing = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>store/</Prefix><KeyCount>2</KeyCount>
        <IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>
        <Contents><Key>store/heads/a</Key><LastModified>2026-11-24T22:17:42.123Z</LastModified><Size>42</Size></Contents>
        <Contents><Key>store/blobs/ab/c&amp;d</Key><LastModified>2026-11-24T22:17:43Z</LastModified><Size>7</Size></Contents>
        </ListBucketResult>
        """

    @Test func realAnswersParse() throws {
        let entries = try #require(PropfindParser.parse(Array(Self.apache.utf8)))
        #expect(entries.count == 2)
        #expect(entries[0] == PropfindEntry(path: "/dav/store/heads/", isCollection: true, size: nil, modified: 1_795_559_116_000))
        #expect(entries[1].path == "/dav/store/heads/a b")
        #expect(entries[1].size == 3, "the 404 propstat's value is ignored")
        #expect(!entries[1].isCollection)
        let absolute = try #require(PropfindParser.parse(Array(Self.absolute.utf8)))
        #expect(absolute.map(\.path) == ["/remote.php/dav/x/", "/remote.php/dav/x/f"])
        #expect(absolute.map(\.isCollection) == [true, false])
        let listing = try #require(S3XML.parse(Array(Self.listing.utf8), record: "Contents"))
        #expect(listing.root == "ListBucketResult")
        #expect(listing.fields["IsTruncated"] == "true")
        #expect(listing.fields["NextContinuationToken"] == "tok+/=")
        #expect(listing.records.map { $0["Key"] } == ["store/heads/a", "store/blobs/ab/c&d"])
        #expect(listing.records.map { $0["LastModified"].flatMap(HTTPDate.iso8601Millis) } == [1_795_558_662_123, 1_795_558_663_000])
        #expect(PropfindParser.parse(Array("<html>not found</html>".utf8)) == nil)
    }

    @Test func mutatedAnswersNeverTrap() {
        var random = SeededGenerator(seed: 0xC0FFEE)
        let samples = [Self.apache, Self.absolute, Self.listing].map { Array($0.utf8) }
        let inserts = ["<", ">", "&", "&#0;", "&amp;", "]]>", "<!DOCTYPE x [<!ENTITY a \"aaaa\">]>", "<D:href>", "</D:response>", "%", "%ZZ", "\u{0}", "https://", "\u{FFFF}"]
            .map { Array($0.utf8) }
        var parsed = 0
        for round in 0..<3000 {
            var bytes = samples[round % samples.count]
            for _ in 0..<random.int(1...6) {
                guard !bytes.isEmpty else { break }
                let at = random.int(0...(bytes.count - 1))
                switch random.int(0...3) {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.removeSubrange(at..<min(bytes.count, at + random.int(1...40)))
                case 2: bytes.insert(contentsOf: random.pick(inserts), at: at)
                default: bytes = Array(bytes.prefix(at))
                }
            }
            if let dump = ProcessInfo.processInfo.environment["CONCORD_XML_DUMP"] { _ = FileManager.default.createFile(atPath: dump, contents: Data(bytes)) }
            if PropfindParser.parse(bytes) != nil { parsed += 1 }
            if S3XML.parse(bytes, record: "Contents") != nil { parsed += 1 }
            _ = PropfindParser.path(ofHref: String(decoding: bytes.prefix(80), as: UTF8.self))
            _ = HTTPDate.millis(String(decoding: bytes.suffix(40), as: UTF8.self))
        }
        #expect(parsed > 0, "some mutations stay well-formed and parse")
        // Deep nesting does not exhaust the stack.
        let deep = Array((String(repeating: "<a>", count: 20_000) + String(repeating: "</a>", count: 20_000)).utf8)
        _ = S3XML.parse(deep, record: "Contents")
        _ = PropfindParser.parse(deep)
    }
}

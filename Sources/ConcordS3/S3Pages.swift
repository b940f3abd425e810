import ConcordCore
import ConcordRemote

extension S3Remote {
    /// The pages of one listing, bounded: at most ``/ConcordHTTP/HTTPBounds/maxListingPages``
    /// pages, and each continuation token (or marker) followed once — a server whose tokens
    /// cycle, or never end, stops the listing with one
    /// ``/ConcordRemote/ConcordCore/ConcordError/endlessListing(_:_:_:)`` line instead of looping for ever.
    struct Pages {
        let remote: String
        /// What is listed, as messages name it.
        let listing: String
        /// The most pages it may take.
        let limit: Int
        private var count = 0
        private var followed: Set<String> = []

        init(remote: String, listing: String, limit: Int) {
            self.remote = remote
            self.listing = listing
            self.limit = limit
        }

        /// Counts the page about to be asked for.
        mutating func next() throws(ConcordError) {
            count += 1
            guard count <= limit else {
                throw ConcordError.endlessListing(remote, listing, "answered more than \(limit) pages")
            }
        }

        /// Records the token the next page is asked with; one given before throws.
        mutating func follow(_ token: String) throws(ConcordError) {
            guard followed.insert(token).inserted else {
                throw ConcordError.endlessListing(remote, listing, "gave continuation token \(token.prefix(80)) a second time, after \(count) pages")
            }
        }
    }
}

import ConcordCore
import ConcordRemote

extension S3Remote {
    /// The pages of one listing, bounded: at most ``/ConcordRemote/RemoteLayout/maxListingPages``
    /// pages, and each continuation token (or marker) followed once — a server whose tokens
    /// cycle, or never end, stops the listing with one
    /// ``/ConcordRemote/ConcordCore/ConcordError/endlessListing(_:_:_:)`` line instead of looping for ever.
    struct Pages {
        let remote: String
        /// What is listed, as messages name it.
        let listing: String
        private var count = 0
        private var followed: Set<String> = []

        init(remote: String, listing: String) {
            self.remote = remote
            self.listing = listing
        }

        /// Counts the page about to be asked for.
        mutating func next() throws(ConcordError) {
            count += 1
            guard count <= RemoteLayout.maxListingPages else {
                throw ConcordError.endlessListing(remote, listing, "answered more than \(RemoteLayout.maxListingPages) pages")
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

// The module an app imports: the layers that exist so far (DESIGN.md §1). The remotes and
// the sync engine join this list as they land.
@_exported import ConcordCodec
@_exported import ConcordCore
@_exported import ConcordCrypto
@_exported import ConcordStore

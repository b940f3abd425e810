// The module an app imports: every layer of docs/ARCHITECTURE.md §1.
@_exported import ConcordCodec
@_exported import ConcordCore
@_exported import ConcordCrypto
@_exported import ConcordRemote
@_exported import ConcordStore
@_exported import ConcordSync

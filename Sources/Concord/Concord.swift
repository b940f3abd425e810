// The module an app imports. It re-exports the layers that exist so far; each later layer
// (store, remotes, sync) joins this list as it lands (DESIGN.md §1).
@_exported import ConcordCodec
@_exported import ConcordCore

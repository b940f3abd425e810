// ConcordCrypto: keys, sealed objects, streams, keyed names (DESIGN.md §5). In progress.
import CSodium

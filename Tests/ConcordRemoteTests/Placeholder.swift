// Placeholder until the remote tests land.
import Testing

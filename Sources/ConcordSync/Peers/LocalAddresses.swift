#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The IPv4 addresses of this machine's interfaces that are up, as a peer announcement
/// names them: the non-loopback ones (sorted), then `127.0.0.1`.
enum LocalAddresses {
    static func ipv4() -> [String] {
        var found: Set<String> = []
        #if canImport(Glibc) || canImport(Darwin)
        var first: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&first) == 0, let first {
            defer { freeifaddrs(first) }
            var next: UnsafeMutablePointer<ifaddrs>? = first
            while let entry = next {
                next = entry.pointee.ifa_next
                guard let address = entry.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET,
                    entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
                else { continue }
                var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                let text: String? = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var raw = inet.pointee.sin_addr
                    guard inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)) != nil else { return nil }
                    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
                if let text, !text.hasPrefix("127.") { found.insert(text) }
            }
        }
        #endif
        return found.sorted() + ["127.0.0.1"]
    }
}

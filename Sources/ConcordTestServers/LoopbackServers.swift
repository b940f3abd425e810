import ConcordCore
import ConcordHTTP
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real storage servers the HTTP tests run against, each started once per test process
/// on a free loopback port, in a private folder, and stopped when the process ends (a
/// watchdog shell kills the server once the test process is gone). `make test` installs
/// them (scripts/ensure-packages.sh, scripts/ensure-moto.sh).
public enum ServerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case apache, nginx, rclone, moto
    /// `rclone serve webdav` that asks for HTTP Basic auth: user ``webDAVUser``, password
    /// ``webDAVPassword``.
    case rcloneAuth
    /// moto with signature checking on. Not in ``conformance``: with it on, moto rejects
    /// the (correct) signature of any request whose query has a `/` — a listing's prefix —
    /// as boto3's own requests show.
    case motoSigned
    /// Ceph's RADOS Gateway on a one-node cluster (one monitor, one in-memory OSD), started
    /// by `scripts/start-rgw.sh`. Signatures are always checked.
    case rgw
    /// nginx WebDAV over HTTPS with a self-signed certificate, which clients must refuse.
    case nginxSelfSigned

    public var description: String {
        switch self {
        case .apache: "Apache httpd mod_dav"
        case .nginx: "nginx dav-ext"
        case .rclone: "rclone serve webdav"
        case .rcloneAuth: "rclone serve webdav (Basic auth)"
        case .moto: "moto S3"
        case .motoSigned: "moto S3 (signatures checked)"
        case .rgw: "Ceph RADOS Gateway"
        case .nginxSelfSigned: "nginx dav-ext over HTTPS, self-signed"
        }
    }

    /// The servers the conformance suite and the sync fuzz run on.
    public static let conformance: [ServerKind] = [.apache, .nginx, .rclone, .moto, .rgw]

    public static let s3: [ServerKind] = [.moto, .rgw]

    public static let webDAV: [ServerKind] = [.apache, .nginx, .rclone]

    /// The user and password ``rcloneAuth`` asks for.
    public static let webDAVUser = "concord"
    public static let webDAVPassword = "concord-test-password"

    /// The S3 key the gateway's user is made with.
    public static let rgwAccessKey = "AKIDCONCORDRGW"
    public static let rgwSecretKey = "concord-rgw-test-secret"
}

public struct RunningServer: Sendable {
    public let kind: ServerKind
    public let port: Int
    /// `http://127.0.0.1:PORT`
    public internal(set) var origin: String
    public let directory: String
    /// S3 servers: the access key and secret the tests sign with.
    public internal(set) var accessKey = ""
    public internal(set) var secretKey = ""
}

public struct ServerUnavailable: Error, CustomStringConvertible {
    public let description: String
}

public actor LoopbackServers {
    public static let shared = LoopbackServers()

    private var starting: [ServerKind: Task<RunningServer, any Error>] = [:]

    public func server(_ kind: ServerKind) async throws -> RunningServer {
        if let task = starting[kind] { return try await task.value }
        let task = Task { try await Self.start(kind) }
        starting[kind] = task
        return try await task.value
    }

    static func start(_ kind: ServerKind) async throws -> RunningServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("concord-\(kind.rawValue)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let port = try freePort()
        var command: String
        var ready: String?
        var environment: [String: String] = [:]
        switch kind {
        case .apache:
            let binary = try which("apache2", package: "apache2")
            try FileManager.default.createDirectory(atPath: directory + "/lock", withIntermediateDirectories: true)
            chmod(directory + "/data", 0o777)
            chmod(directory + "/lock", 0o777)
            let modules = "/usr/lib/apache2/modules"
            let asRoot = geteuid() == 0 ? "User www-data\nGroup www-data\n" : ""
            // `Options None`, as a careful deployment sets it: with its default
            // (FollowSymLinks), a link planted in the folder makes Apache serve, overwrite and
            // delete files outside it, and a FIFO planted there hangs the request.
            try """
                ServerRoot \(directory)
                ServerName 127.0.0.1
                Listen 127.0.0.1:\(port)
                PidFile \(directory)/httpd.pid
                ErrorLog \(directory)/error.log
                LoadModule mpm_event_module \(modules)/mod_mpm_event.so
                LoadModule authz_core_module \(modules)/mod_authz_core.so
                LoadModule dav_module \(modules)/mod_dav.so
                LoadModule dav_fs_module \(modules)/mod_dav_fs.so
                \(asRoot)DavLockDB \(directory)/lock/DavLock
                DocumentRoot \(directory)/data
                LimitRequestBody 0
                <Directory \(directory)/data>
                  Dav On
                  Options None
                  AllowOverride None
                  Require all granted
                </Directory>
                """.write(toFile: directory + "/httpd.conf", atomically: true, encoding: .utf8)
            command = "\(binary) -f \(directory)/httpd.conf -DFOREGROUND"
        case .nginx, .nginxSelfSigned:
            let binary = try which("nginx", package: "nginx")
            var listen = "listen 127.0.0.1:\(port);"
            if kind == .nginxSelfSigned {
                let openssl = try which("openssl", package: "openssl")
                try Subprocess.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                                             "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem"])
                listen = "listen 127.0.0.1:\(port) ssl; ssl_certificate \(directory)/cert.pem; ssl_certificate_key \(directory)/key.pem;"
            }
            let module = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"
            guard FileManager.default.fileExists(atPath: module) else {
                throw ServerUnavailable(description: "nginx's dav-ext module is not installed: run `make test`, which installs libnginx-mod-http-dav-ext")
            }
            try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
            // `disable_symlinks on` stops a GET through a link planted in the folder; the dav
            // module's PUT and DELETE and dav-ext's PROPFIND follow links whatever it says, so,
            // as a careful deployment does, the workers run as a user of their own (www-data
            // when the tests run as root): a link to another user's files leads nowhere they
            // may write or list.
            chmod(directory + "/data", 0o777)
            try """
                daemon off;
                \(geteuid() == 0 ? "user www-data;" : "")
                pid \(directory)/nginx.pid;
                error_log \(directory)/error.log;
                load_module \(module);
                events { worker_connections 512; }
                http {
                  access_log off;
                  client_body_temp_path \(directory)/tmp/body;
                  proxy_temp_path \(directory)/tmp/proxy;
                  fastcgi_temp_path \(directory)/tmp/fastcgi;
                  uwsgi_temp_path \(directory)/tmp/uwsgi;
                  scgi_temp_path \(directory)/tmp/scgi;
                  client_max_body_size 0;
                  server {
                    \(listen)
                    root \(directory)/data;
                    disable_symlinks on;
                    location / {
                      dav_methods PUT DELETE MKCOL COPY MOVE;
                      dav_ext_methods PROPFIND OPTIONS;
                      dav_access user:rw group:rw all:r;
                    }
                  }
                }
                """.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            command = "\(binary) -p \(directory) -c \(directory)/nginx.conf"
        case .rclone, .rcloneAuth:
            let binary = try which("rclone", package: "rclone")
            // rclone skips links when it reads, but writes a PUT through a link planted at the
            // object's name: as a careful deployment does, it runs as a user of its own
            // (www-data when the tests run as root), who may not write another user's files. No
            // directory cache: it would hide for minutes what another program wrote in the folder.
            var asUser = ""
            if geteuid() == 0 {
                asUser = try which("setpriv", package: "util-linux") + " --reuid=www-data --regid=www-data --clear-groups "
                try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
                chmod(directory + "/data", 0o777)
                chmod(directory + "/cache", 0o777)
            }
            command = "\(asUser)\(binary) serve webdav \(directory)/data --addr 127.0.0.1:\(port) --config /dev/null"
                + " --cache-dir \(directory)/cache --dir-cache-time 0s"
                + (kind == .rcloneAuth ? " --user \(ServerKind.webDAVUser) --pass \(ServerKind.webDAVPassword)" : "")
        case .moto, .motoSigned:
            let binary = try which("moto_server", package: "moto (pip)")
            if kind == .motoSigned { environment["INITIAL_NO_AUTH_ACTION_COUNT"] = "3" }
            command = "\(binary) -H 127.0.0.1 -p \(port)"
        case .rgw:
            for daemon in ["ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "monmaptool", "ceph"] {
                _ = try which(daemon, package: "ceph-mon ceph-osd radosgw ceph-common")
            }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("scripts/start-rgw.sh").path
            command = "\(script) \(directory)/ceph \(port) \(try freePort()) \(try freePort()) \(ServerKind.rgwAccessKey) \(ServerKind.rgwSecretKey)"
            ready = directory + "/ceph/ready"
        }
        try launch(command, environment: environment, log: directory + "/server.log", removing: directory)
        let origin = (kind == .nginxSelfSigned ? "https" : "http") + "://127.0.0.1:\(port)"
        if let ready {
            try await waitForFile(ready, kind: kind, log: directory + "/server.log")
        } else {
            try await waitForPort(port, kind: kind, log: directory + "/server.log")
        }
        var server = RunningServer(kind: kind, port: port, origin: origin, directory: directory)
        if kind == .motoSigned {
            (server.accessKey, server.secretKey) = try await MotoSetup.createUser(origin: origin)
        } else if kind == .moto {
            (server.accessKey, server.secretKey) = ("AKIDCONCORDTEST", "concord-test-secret")
        } else if kind == .rgw {
            (server.accessKey, server.secretKey) = (ServerKind.rgwAccessKey, ServerKind.rgwSecretKey)
        }
        return server
    }

    /// Starts `command` in a process group of its own, under a watchdog shell that stops
    /// the whole group — a server's workers, a cluster's daemons — when this process ends.
    /// `removing`: a folder the watchdog deletes once the server is stopped (its data).
    static func launch(_ command: String, environment: [String: String], log: String, removing folder: String? = nil) throws {
        let parent = getpid()
        let script = """
            setsid \(command) >>\(log) 2>&1 &
            server=$!
            trap 'kill -TERM -$server 2>/dev/null' EXIT TERM INT
            while kill -0 \(parent) 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done
            kill -TERM -$server 2>/dev/null
            sleep 1
            kill -9 -$server 2>/dev/null
            \(folder.map { "rm -rf '\($0)'" } ?? "")
            """
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let watchdog = try Subprocess.start("/bin/sh", ["-c", script], environment: env)
        Thread.detachNewThread { watchdog.wait() }  // reaped when it ends
    }

    static func which(_ name: String, package: String) throws -> String {
        for folder in ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/sbin"] + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        where FileManager.default.isExecutableFile(atPath: folder + "/" + name) {
            return folder + "/" + name
        }
        throw ServerUnavailable(description: "\(name) is not installed: run `make test`, which installs \(package)")
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerUnavailable(description: "no socket for a free port") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw ServerUnavailable(description: "cannot bind a loopback port") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits for a start-up script to write `path` (the server answers and is set up).
    static func waitForFile(_ path: String, kind: ServerKind, log: String) async throws {
        for _ in 0..<600 {
            if FileManager.default.fileExists(atPath: path) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw ServerUnavailable(description: "\(kind) was not ready within 60 s: \(said.suffix(500))")
    }

    static func waitForPort(_ port: Int, kind: ServerKind, log: String) async throws {
        for _ in 0..<300 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw ServerUnavailable(description: "\(kind) did not start on port \(port) within 30 s: \(said.suffix(500))")
    }
}

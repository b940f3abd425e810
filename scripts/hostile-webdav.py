# A WebDAV server over a folder remote that misbehaves on purpose (scripts/planted-objects.sh): MODE=bigpropfind answers
# every Depth 1 PROPFIND with 200 MiB of entries; MODE=endless answers blob GETs with an endless body.
import os, sys, email.utils
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
ROOT, PORT, MODE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def rel(self):
        p = self.path.split("?")[0]
        assert p.startswith("/dav/")
        return p[len("/dav/"):]
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n: self.rfile.read(n)
    def do_GET(self):
        self.body(); rel = self.rel(); f = os.path.join(ROOT, rel)
        if MODE == "endless" and rel.startswith("blobs/"):
            self.send_response(200); self.send_header("Transfer-Encoding", "chunked"); self.send_header("Connection", "close"); self.end_headers()
            chunk = b"\0" * 65536; frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
            try:
                while True: self.wfile.write(frame)
            except Exception: return
        if not os.path.isfile(f):
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        data = open(f, "rb").read()
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def entry(self, href, isdir, size):
        rt = "<D:resourcetype><D:collection/></D:resourcetype>" if isdir else "<D:resourcetype/>"
        cl = "" if isdir else "<D:getcontentlength>%d</D:getcontentlength>" % size
        return ("<D:response><D:href>%s</D:href><D:propstat><D:prop>%s%s</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>" % (href, rt, cl)).encode()
    def do_PROPFIND(self):
        self.body(); rel = self.rel(); f = os.path.join(ROOT, rel); depth = self.headers.get("Depth", "1")
        if not os.path.exists(f):
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        head = b'<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">'
        if MODE == "bigpropfind" and depth == "1":
            self.send_response(207); self.send_header("Content-Type", "application/xml"); self.send_header("Transfer-Encoding", "chunked"); self.send_header("Connection", "close"); self.end_headers()
            sent = 0; i = 0
            try:
                self.wfile.write(b"%x\r\n" % len(head) + head + b"\r\n")
                while sent < 200 << 20:
                    batch = b"".join(self.entry("/dav/%sheads/%032x-%016x" % (rel, i + k, 1), False, 300) for k in range(1000)); i += 1000
                    self.wfile.write(b"%x\r\n" % len(batch) + batch + b"\r\n"); sent += len(batch)
                tail = b"</D:multistatus>"; self.wfile.write(b"%x\r\n" % len(tail) + tail + b"\r\n0\r\n\r\n")
            except Exception: pass
            return
        parts = [head, self.entry("/dav/" + rel, os.path.isdir(f), 0)]
        if depth == "1" and os.path.isdir(f):
            for name in sorted(os.listdir(f)):
                g = os.path.join(f, name); d = os.path.isdir(g)
                parts.append(self.entry("/dav/" + rel + name + ("/" if d else ""), d, 0 if d else os.path.getsize(g)))
        parts.append(b"</D:multistatus>"); data = b"".join(parts)
        self.send_response(207); self.send_header("Content-Type", "application/xml"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()

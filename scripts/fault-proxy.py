#!/usr/bin/env python3
"""A loopback HTTP proxy that injects faults, for Concord's HTTP tests.

    fault-proxy.py LISTEN_PORT UPSTREAM_ORIGIN

Every request is forwarded to UPSTREAM_ORIGIN (http://127.0.0.1:PORT) unless a fault is
armed. Arm faults with `POST /__fault?mode=MODE&count=N[&method=PUT]`: the next N requests
(of that method, if given) get MODE:

  status503   503 with `Retry-After: 1`, not forwarded
  status429   429 with `Retry-After: 1`, not forwarded
  status500   500, not forwarded
  status507   507 Insufficient Storage (a full disk or a quota), not forwarded
  reset       forwarded; the connection is closed half-way through the response body
  truncate    forwarded; the response claims its full length but stops half-way
  slow        forwarded after a pause of `delay` seconds (default 2)
  unstored    a PUT answered 201 and not forwarded (the server never stores it)
  sizeless    forwarded; a PROPFIND answer loses every `getcontentlength` (it is optional
              in WebDAV: a listing without sizes)

`GET /__fault` answers how many requests each mode hit so far, as `mode=count` lines.
"""
import http.client
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = urllib.parse.urlsplit(sys.argv[2])
LOCK = threading.Lock()
ARMED = []  # [mode, count, method or None, delay]
HITS = {}
CONTENT_LENGTH = re.compile(rb"<(?:[A-Za-z0-9_.-]+:)?getcontentlength\b[^>]*?(?:/>|>[^<]*</(?:[A-Za-z0-9_.-]+:)?getcontentlength\s*>)")


def take(method):
    with LOCK:
        for fault in ARMED:
            if fault[1] > 0 and (fault[2] is None or fault[2] == method):
                fault[1] -= 1
                HITS[fault[0]] = HITS.get(fault[0], 0) + 1
                return fault[0], fault[3]
    return None, 0


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Without it, a small write after the headers waits for the client's delayed ACK
        # (up to 200 ms): the latency measured would be the proxy's, not the link's.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def control(self, body):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if self.command == "POST":
            mode = query["mode"][0]
            with LOCK:
                ARMED.append([mode, int(query.get("count", ["1"])[0]), query.get("method", [None])[0],
                              float(query.get("delay", ["2"])[0])])
            self.answer(204)
        else:
            with LOCK:
                text = "".join(f"{mode}={count}\n" for mode, count in sorted(HITS.items()))
            self.answer(200, text.encode())

    def handle_any(self):
        body = self.body()
        if self.path.startswith("/__fault"):
            return self.control(body)
        mode, delay = take(self.command)
        if mode in ("status503", "status429"):
            return self.answer(int(mode[-3:]), b"injected", [("Retry-After", "1")])
        if mode == "status500":
            return self.answer(500, b"injected")
        if mode == "status507":
            return self.answer(507, b"quota exceeded")
        if mode == "unstored" and self.command == "PUT":
            return self.answer(201)
        if mode == "slow":
            time.sleep(delay)
        upstream = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=60)
        upstream.connect()
        upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection", "content-length")}
        headers["Content-Length"] = str(len(body))
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        if mode == "sizeless" and self.command == "PROPFIND":
            data = CONTENT_LENGTH.sub(b"", data)
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode in ("reset", "truncate") and len(data) > 1:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            if mode == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_OPTIONS = handle_any
    do_PROPFIND = do_MKCOL = do_MOVE = do_COPY = handle_any


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Proxy).serve_forever()

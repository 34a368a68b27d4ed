# A test HTTPS upstream (issue 17's tests): logs each request's line, Authorization, X-Token and
# body digest to ARGV[1] and answers with that line; /ws upgrades and echoes; .../info/refs asks for
# Basic credentials as a git host does. Usage: https-upstream.py LOG ADDRESS CERT KEY
import hashlib, http.server, os, socketserver, ssl, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream_http import read_body, upgrade_and_echo
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        body = read_body(self)
        if self.path == "/ws":
            upgrade_and_echo(self, sys.argv[1], "peer=%s %s auth=%s upgraded\n" % (
                self.client_address[1], self.requestline, self.headers.get("Authorization")))
            return
        if self.path.startswith("/big"):  # benchmarks: 10 MiB, not logged
            self.send_response(200)
            self.send_header("Content-Length", str(10 << 20))
            self.end_headers()
            chunk = b"\0" * 65536
            for _ in range(160):
                self.wfile.write(chunk)
            return
        if self.path.startswith("/ping"):  # benchmarks: a small answer in one write, not logged
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            self.wfile.flush()
            return
        if "/info/refs" in self.path and not self.headers.get("Authorization"):
            # as a git host does: credentials only when asked for
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        line = "peer=%s %s auth=%s x=%s body=%d sha=%s\n" % (
            self.client_address[1], self.requestline, self.headers.get("Authorization"),
            self.headers.get("X-Token"), len(body), hashlib.sha256(body).hexdigest())
        with open(sys.argv[1], "a") as f:
            f.write(line)
        out = line.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_PUT = answer
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S((sys.argv[2], 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()

# A test HTTPS upstream that hands every request back (issue 27's tests): the value of X-Api-Key
# (or Authorization) in the status line's reason, in X-Echo and in a Location, and the request's
# head and body as the answer's body; /chunked answers in 5-byte chunks (a value split across
# them), /gzip compresses when the request accepts gzip, /gzip-always whatever it accepts, /slow
# answers after 300 ms (an API's latency: pipelined requests pile up behind it). Logs
# "port=P key=K auth=A" per request to LOG. Usage: echo-upstream.py LOG ADDRESS CERT KEY PORT...
import gzip, os, socketserver, ssl, sys, threading, time, http.server
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream_http import read_body
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        if self.path.startswith("/slow"):
            time.sleep(0.3)
        body = read_body(self)
        key = self.headers.get("X-Api-Key") or self.headers.get("Authorization") or ""
        with open(sys.argv[1], "a") as f:
            f.write("port=%d key=%s auth=%s\n" % (self.server.server_address[1],
                    self.headers.get("X-Api-Key"), self.headers.get("Authorization")))
        out = (self.requestline + "\r\n" + str(self.headers)).encode() + body
        coded = self.path.startswith("/gzip-always") or (
            self.path.startswith("/gzip") and "gzip" in (self.headers.get("Accept-Encoding") or ""))
        if coded:
            out = gzip.compress(out)
        chunked = self.path.startswith("/chunked") and self.request_version == "HTTP/1.1"
        self.send_response(200, "OK " + key)
        self.send_header("X-Echo", key)
        self.send_header("Location", "/r?k=" + key)
        if coded:
            self.send_header("Content-Encoding", "gzip")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if chunked:
            for i in range(0, len(out), 5):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(out[i:i + 5]), out[i:i + 5]))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(out)
    do_GET = do_POST = do_PUT = do_HEAD = answer
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
servers = []
for port in sys.argv[5:]:
    srv = S((sys.argv[2], int(port)), H)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    servers.append(srv)
for srv in servers[1:]:
    threading.Thread(target=srv.serve_forever, daemon=True).start()
servers[0].serve_forever()

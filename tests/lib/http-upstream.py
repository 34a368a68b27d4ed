# A plain-HTTP/1.1 keep-alive test upstream, as a CDN serves many names from one address: logs
# the Host, request line and body length of every request it reads to ARGV[1] and answers with
# the Host; /ws upgrades and echoes. Python's parser also splits header lines at a bare CR. Like
# `python3 -m http.server`, it never reads a body on GET, HEAD, OPTIONS, TRACE or DELETE: those
# bytes are read as the next request (the smuggling a proxy must not let through). Paths that
# start with /early are answered as soon as the head is read, the body read and thrown away
# after, as RFC 9110 lets a server do.
# Usage: http-upstream.py LOG ADDRESS PORT
import http.server, os, socketserver, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream_http import read_body, upgrade_and_echo
NO_BODY = ("GET", "HEAD", "OPTIONS", "TRACE", "DELETE")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        early = self.path.startswith("/early")
        body = b"" if self.command in NO_BODY or early else read_body(self)
        if self.path == "/ws":
            upgrade_and_echo(self, sys.argv[1],
                             "host=%s \"%s\" upgraded\n" % (self.headers.get("Host"), self.requestline))
            return
        if not early:
            self.log_request_line(body)
        out = ("host=%s\n" % self.headers.get("Host")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        if early:
            self.wfile.flush()
            self.log_request_line(b"" if self.command in NO_BODY else read_body(self))
    def log_request_line(self, body):
        with open(sys.argv[1], "a") as f:
            f.write("host=%s \"%s\" body=%d\n" % (self.headers.get("Host"), self.requestline, len(body)))
    do_GET = do_POST = do_PUT = do_HEAD = do_OPTIONS = do_TRACE = do_DELETE = answer
    def log_message(self, *a):
        pass
# socketserver's TCPServer, not http.server's HTTPServer: that one asks DNS for the name of its
# address (getfqdn) between bind and listen, a query to the machine's resolver that a test must
# never send, and connections are refused until it gives up.
class S(socketserver.TCPServer):
    allow_reuse_address = True
S((sys.argv[2], int(sys.argv[3])), H).serve_forever()

# A plain-HTTP/1.1 keep-alive test upstream, as a CDN serves many names from one address: logs
# the Host, request line and body length of every request it reads to ARGV[1] and answers with
# the Host; /ws upgrades and echoes. Python's parser also splits header lines at a bare CR.
# Usage: http-upstream.py LOG ADDRESS PORT
import http.server, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream_http import read_body, upgrade_and_echo
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        body = read_body(self)
        if self.path == "/ws":
            upgrade_and_echo(self, sys.argv[1],
                             "host=%s \"%s\" upgraded\n" % (self.headers.get("Host"), self.requestline))
            return
        with open(sys.argv[1], "a") as f:
            f.write("host=%s \"%s\" body=%d\n" % (self.headers.get("Host"), self.requestline, len(body)))
        out = ("host=%s\n" % self.headers.get("Host")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = answer
    def log_message(self, *a):
        pass
http.server.HTTPServer((sys.argv[2], int(sys.argv[3])), H).serve_forever()

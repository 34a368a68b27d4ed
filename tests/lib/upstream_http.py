# What the tests' HTTP upstreams (https-upstream.py, http-upstream.py) share: reading a request's
# body by its framing, and the /ws upgrade that echoes raw bytes. Imported, not run.


def read_body(h):
    """The body of the request h (a BaseHTTPRequestHandler) reads: chunked wins over
    Content-Length (RFC 9112)."""
    chunked = (h.headers.get("Transfer-Encoding") or "").lower() == "chunked"
    n = 0 if chunked else int(h.headers.get("Content-Length") or 0)
    body = h.rfile.read(n) if n else b""
    if chunked:
        while True:
            size = int(h.rfile.readline().split(b";")[0], 16)
            body += h.rfile.read(size)
            h.rfile.readline()
            if size == 0:
                break
    return body


def upgrade_and_echo(h, log, line):
    """Append line to the file log, accept the upgrade with 101, then echo raw bytes back
    ("echo:" before each read) until the client closes."""
    with open(log, "a") as f:
        f.write(line)
    h.send_response(101)
    h.send_header("Upgrade", "websocket")
    h.send_header("Connection", "Upgrade")
    h.end_headers()
    h.wfile.flush()
    while True:
        d = h.rfile.read1(4096)
        if not d:
            break
        h.wfile.write(b"echo:" + d)
        h.wfile.flush()
    h.close_connection = True

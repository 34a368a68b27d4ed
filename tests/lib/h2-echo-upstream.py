# A test HTTPS upstream that speaks HTTP/2 (python3-h2) by ALPN, and HTTP/1.1 to clients that do
# not offer h2, and hands every request back (issue 27's HTTP/2 rows). The value of x-api-key (or
# authorization) comes back in x-echo, a location and the body (the request's fields and body);
# /split sends the body in 5-byte DATA frames (a value split across them); /gzip-always says
# content-encoding gzip; /stream answers at once and then echoes each DATA frame as it arrives with the key
# (a gRPC-style call: both directions interleaved on one stream), ending with trailers that quote
# the key. Logs "proto=P path=PATH key=K" per request to LOG.
# Usage: h2-echo-upstream.py LOG ADDRESS CERT KEY PORT
import gzip, socket, ssl, sys, threading
import h2.config, h2.connection, h2.events

LOG, ADDR, CERT, KEYF, PORT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
lock = threading.Lock()


def log(proto, path, key):
    with lock, open(LOG, "a") as f:
        f.write("proto=%s path=%s key=%s\n" % (proto, path, key))


def serve_h2(sock):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False,
                                                                header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    reqs = {}

    def flush():
        data = conn.data_to_send()
        if data:
            sock.sendall(data)

    def answer(sid):
        r = reqs[sid]
        path, key = r["path"], r["key"]
        body = "".join("%s: %s\n" % (n, v) for n, v in r["headers"]).encode() + r["body"]
        hdrs = [(":status", "200"), ("x-echo", key), ("location", "/r?k=" + key),
                ("content-type", "text/plain")]
        if path.startswith("/gzip-always"):
            body = gzip.compress(body)
            hdrs.append(("content-encoding", "gzip"))
        else:
            hdrs.append(("content-length", str(len(body))))
        conn.send_headers(sid, hdrs)
        step = 5 if path.startswith("/split") else 16384
        for i in range(0, len(body), step):
            conn.send_data(sid, body[i:i + step])
        conn.end_stream(sid)

    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if not data:
            return
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                hd = list(ev.headers)
                d = dict(hd)
                key = d.get("x-api-key") or d.get("authorization") or ""
                reqs[ev.stream_id] = {"path": d.get(":path", ""), "key": key, "headers": hd,
                                      "body": b""}
                log("h2", d.get(":path", ""), key)
                if d.get(":path", "").startswith("/stream"):
                    conn.send_headers(ev.stream_id, [(":status", "200"), ("x-echo", key),
                                                     ("content-type", "application/grpc")])
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                r = reqs.get(ev.stream_id)
                if r is None:
                    continue
                if r["path"].startswith("/stream"):
                    conn.send_data(ev.stream_id, b"echo:" + ev.data + b" key=" + r["key"].encode())
                else:
                    r["body"] += ev.data
            elif isinstance(ev, h2.events.StreamEnded):
                r = reqs.get(ev.stream_id)
                if r is None:
                    continue
                if r["path"].startswith("/stream"):
                    conn.send_headers(ev.stream_id, [("grpc-status", "0"),
                                                     ("x-trailer", r["key"])], end_stream=True)
                else:
                    answer(ev.stream_id)
                del reqs[ev.stream_id]
            elif isinstance(ev, h2.events.StreamReset):
                reqs.pop(ev.stream_id, None)
        flush()


def serve_h1(sock):
    f = sock.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            return
        hd, clen = [], 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            n, _, v = h.decode().partition(":")
            hd.append((n.strip().lower(), v.strip()))
            if n.strip().lower() == "content-length":
                clen = int(v)
        body = f.read(clen) if clen else b""
        d = dict(hd)
        key = d.get("x-api-key") or d.get("authorization") or ""
        log("http/1.1", line.split()[1].decode(), key)
        out = line + "".join("%s: %s\n" % (n, v) for n, v in hd).encode() + body
        sock.sendall(b"HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: %d\r\n\r\n%s" %
                     (key.encode(), len(out), out))


def conn_thread(raw, ctx):
    try:
        sock = ctx.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        raw.close()
        return
    try:
        if sock.selected_alpn_protocol() == "h2":
            serve_h2(sock)
        else:
            serve_h1(sock)
    except Exception:
        pass
    finally:
        sock.close()


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEYF)
ctx.set_alpn_protocols(["h2", "http/1.1"])
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((ADDR, PORT))
srv.listen(64)
while True:
    c, _ = srv.accept()
    threading.Thread(target=conn_thread, args=(c, ctx), daemon=True).start()

# A gRPC-style HTTP/2 client (python3-h2) for the box (issue 27): one POST stream to
# https://HOST/stream with x-api-key from $TOK; it sends a message, waits for its echo, sends the
# next, then ends its side and reads the trailers. Prints every DATA chunk, the answer's fields and
# the trailers, one per line, and "done" when the stream ended. Trusts $SSL_CERT_FILE.
# Usage: h2-grpc-client.py HOST MESSAGE...
import os, socket, ssl, sys
import h2.config, h2.connection, h2.events

host, msgs = sys.argv[1], sys.argv[2:]
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=15), server_hostname=host)
print("alpn", s.selected_alpn_protocol(), flush=True)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
c.initiate_connection()
sid = c.get_next_available_stream_id()
c.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", host),
                     (":path", "/stream"), ("content-type", "application/grpc"),
                     ("x-api-key", os.environ.get("TOK", ""))])
s.sendall(c.data_to_send())


def until(pred):
    while True:
        data = s.recv(65536)
        if not data:
            print("closed", flush=True)
            return False
        hit = False
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                for n, v in ev.headers:
                    print("field %s: %s" % (n, v), flush=True)
            elif isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                print("data %s" % ev.data.decode(errors="replace").strip(), flush=True)
                hit = hit or pred(ev)
            elif isinstance(ev, h2.events.TrailersReceived):
                for n, v in ev.headers:
                    print("trailer %s: %s" % (n, v), flush=True)
            elif isinstance(ev, h2.events.StreamEnded):
                print("done", flush=True)
                hit = hit or pred(ev)
            elif isinstance(ev, h2.events.StreamReset):
                print("reset %d" % ev.error_code, flush=True)
                return False
        s.sendall(c.data_to_send())
        if hit:
            return True


for m in msgs:
    c.send_data(sid, m.encode())
    s.sendall(c.data_to_send())
    if not until(lambda ev, m=m: isinstance(ev, h2.events.DataReceived) and
                 ev.data.startswith(b"echo:" + m.encode())):
        sys.exit(1)
c.end_stream(sid)
s.sendall(c.data_to_send())
until(lambda ev: isinstance(ev, h2.events.StreamEnded))

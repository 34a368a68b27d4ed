# Python's own http.server, its handler unmodified (SimpleHTTPRequestHandler, HTTP/1.0, serving
# DIR), behind TLS: the upstream issue 27 found handing values back in a 501
# reason and a 301 Location. Usage: httpd-tls.py ADDRESS CERT KEY DIR
import http.server, os, ssl, sys
srv = http.server.ThreadingHTTPServer((sys.argv[1], 443), http.server.SimpleHTTPRequestHandler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
os.chdir(sys.argv[4])
srv.serve_forever()

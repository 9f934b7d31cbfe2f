# Real servers on host loopback for tests and the demo: an nginx origin that
# logs every request (with the Authorization header) and a dnsmasq answering
# chosen names. Callers define W (a work directory) and PIDS (an array);
# the servers are killed with the caller's PIDS cleanup.

# free_port [N]: a loopback port free for TCP and UDP, and the N-1 ports
# after it too (N is 2 by default: start_origin's upload sink listens on the
# next one). It is picked below the kernel's ephemeral range, so no
# connection a busy test makes meanwhile can take it before its server
# binds; ports given out before (in $W/ports) are not given again.
free_port() {
	python3 -c '
import os, random, socket, sys
n = int(sys.argv[2])
given = sys.argv[1] and sys.argv[1] + "/ports"
taken = set(open(given).read().split()) if given and os.path.exists(given) else set()
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
def free(p):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
        finally:
            s.close()
    return True
while True:
    p = random.randrange(10000, max(low, 10000 + 2 * n) - n)
    block = range(p, p + n)
    if not any(str(q) in taken for q in block) and all(free(q) for q in block):
        if given:
            open(given, "a").write("".join("%d\n" % q for q in block))
        print(p)
        break
' "${W:-}" "${1:-2}"
}

# A real origin server on host loopback: nginx logging every request.
start_origin() { # start_origin PORT
	local port=$1 d=$W/nginx
	mkdir -p "$d/html" "$d/tmp"
	echo '{"answer": 42}' >"$d/html/data.json"
	cat >"$d/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
  log_format withauth '\$request \$status len=\$request_length auth="\$http_authorization"';
  access_log $d/access.log withauth;
  client_body_temp_path $d/tmp;
  proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp;
  uwsgi_temp_path $d/tmp;
  scgi_temp_path $d/tmp;
  server {
    listen 127.0.0.1:$port;
    root $d/html;
    client_max_body_size 64m;
    location /upload { proxy_pass http://127.0.0.1:$((port + 1)); }
  }
}
NGINX
	# Uploads go on to a sink that counts every body byte it really received.
	python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        open(sys.argv[2], "a").write("received %d\n" % len(body))
        self.send_response(200); self.end_headers(); self.wfile.write(b"stored\n")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$((port + 1))" "$d/received.log" &
	PIDS+=($!)
	nginx -c "$d/nginx.conf" -e "$d/error.log" &
	PIDS+=($!)
	for _ in $(seq 100); do
		(echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && (echo >/dev/tcp/127.0.0.1/$((port + 1))) 2>/dev/null && return 0
		sleep 0.1
	done
	echo "origin did not start on 127.0.0.1:$port and :$((port + 1)):" >&2
	tail -5 "$d/error.log" >&2 2>/dev/null
	return 1
}
origin_log() { cat "$W/nginx/access.log" 2>/dev/null; }
# Body bytes the origin really received on /upload, in total.
origin_received() { awk '{ n += $2 } END { print n + 0 }' "$W/nginx/received.log" 2>/dev/null || echo 0; }

# A real DNS server on host loopback answering the demo's names.
start_dns() { # start_dns PORT NAME=IP...
	local port=$1
	shift
	local args=()
	for a in "$@"; do args+=("--address=/${a%%=*}/${a#*=}"); done
	dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=127.0.0.1 --bind-interfaces \
		--port="$port" "${args[@]}" --log-facility=- >"$W/dns.log" 2>&1 &
	PIDS+=($!)
	sleep 0.3
}

# A CA made here and a server certificate it signs for NAME: DIR/ca.pem,
# DIR/srv.pem and DIR/srv.key.
make_tls_cert() { # make_tls_cert DIR NAME
	local d=$1 name=$2
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=sandcap test CA" \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$d/srv.key" \
		-out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s\n' "$name" >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 1 -extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null
	chmod 644 "$d/ca.pem"
}

# A TLS origin for NAME on host loopback (openssl s_server -www), its
# certificate from a CA made here, for this caller only: $W/ca/ca.pem.
start_tls_origin() { # start_tls_origin PORT NAME
	local port=$1 name=$2 d=$W/ca
	make_tls_cert "$d" "$name"
	openssl s_server -quiet -accept "127.0.0.1:$port" -cert "$d/srv.pem" -key "$d/srv.key" -www \
		>/dev/null 2>&1 &
	PIDS+=($!)
	for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0; sleep 0.1; done
	echo "TLS origin did not start" >&2
	return 1
}

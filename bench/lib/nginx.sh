# bench/lib/nginx.sh — the static target the throughput benchmarks share:
# nginx answering "hello, world" on 127.0.0.1:$PORT with keep-alive that
# never ends a connection, and stub_status on 127.0.0.1:$SPORT, so every
# script counts requests where the server counted them. Sourced, not run.
#
#   nginx_start DIR PORT SPORT CPUS [WORKERS]   start it (CPUS: a taskset
#                                               list), sets NGINX_PID
#   served                                      requests nginx has answered
#
# NGINX_BIN names the nginx binary (default: nginx on PATH or /usr/sbin).

nginx_start() {
  local dir=$1 port=$2 sport=$3 cpus=$4 workers=${5:-1}
  NGX_SPORT=$sport
  mkdir -p "$dir/tmp"
  cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes $workers;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        listen 127.0.0.1:$port backlog=8192 reuseport;
        location / { return 200 "hello, world\n"; }
    }
    server { listen 127.0.0.1:$sport; location / { stub_status; } }
}
CONF
  local bin=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
  taskset -c "$cpus" "$bin" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" &
  NGINX_PID=$!
  for _ in $(seq 50); do served >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "nginx did not answer on 127.0.0.1:$sport:" >&2
  cat "$dir/error.log" >&2
  return 1
}

served() {
  python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode().split("\n")[2].split()[2])' \
    "http://127.0.0.1:$NGX_SPORT/"
}

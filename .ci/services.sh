#!/usr/bin/env bash
# Installs (Debian packages) and starts the servers the monitor and demo
# tests talk to: PostgreSQL and Redis, on loopback only. Safe to run again:
# whatever is already installed, running or created is left as it is.
#
# Works as root on a fresh Debian 12 without systemd (CI, containers): the
# servers are started directly rather than through service units. Exports
# nothing; the tests use these fixed URLs unless STAMPEDE_TEST_PG /
# STAMPEDE_TEST_REDIS say otherwise, and the URLs are printed at the end.
set -euo pipefail

PG_USER=stampede
PG_PASS=stampede # a throwaway loopback test role, not a secret
PG_DB=stampede
PG_PORT=5432
REDIS_PORT=6379

log() { echo "services: $*" >&2; }

need=()
command -v pg_ctlcluster >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
# Prometheus is not started here: the remote-write tests start their own
# on a free loopback port with a temp dir, so they never share its data.
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
# nginx: the HTTP/2 tests run a real nginx over TLS with http2 (connection
# rotation by keepalive_requests); they start their own on a free port.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Package scripts try to start the servers; without an init system that
	# either fails or races with our own start below, so forbid it for the
	# install and start them ourselves.
	policy=/usr/sbin/policy-rc.d
	had_policy=0
	[ -e "$policy" ] && had_policy=1
	if [ $had_policy = 0 ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
	fi
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	if [ $had_policy = 0 ]; then rm -f "$policy"; fi
fi

# junitparser reads the JUnit XML back in the report tests: a consumer of
# the format that stampede did not write.
if ! python3 -c 'import junitparser' >/dev/null 2>&1; then
	log "installing junitparser"
	python3 -m pip install -q junitparser >/dev/null 2>&1 ||
		python3 -m pip install -q --break-system-packages junitparser >/dev/null
fi

# --- PostgreSQL ---------------------------------------------------------
ver=$(ls /usr/lib/postgresql | sort -V | tail -n1)
if ! pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main"' | grep -q .; then
	log "creating cluster $ver/main"
	pg_createcluster "$ver" main --port "$PG_PORT" >/dev/null
fi
# The cluster config may have been left listening elsewhere by a package
# default; tests expect loopback only.
conf=/etc/postgresql/$ver/main/postgresql.conf
if ! grep -q "^listen_addresses = 'localhost'" "$conf"; then
	echo "listen_addresses = 'localhost'" >>"$conf"
fi
if ! pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
	log "starting postgresql $ver/main"
	# /run is emptied on boot and systemd-tmpfiles, which recreates the
	# socket directory, is not running here.
	install -d -o postgres -g postgres -m 2775 /var/run/postgresql
	# pg_ctlcluster switches to the cluster owner (postgres) itself.
	pg_ctlcluster "$ver" main start || true
	for _ in $(seq 1 60); do
		pg_isready -q -h 127.0.0.1 -p "$PG_PORT" && break
		sleep 0.5
	done
	pg_isready -h 127.0.0.1 -p "$PG_PORT" >/dev/null || {
		log "postgresql did not start"
		tail -n 30 /var/log/postgresql/postgresql-"$ver"-main.log >&2 || true
		exit 1
	}
fi
# From / so psql, running as postgres, can read its working directory.
psql_su() { (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@"); }
# pg_monitor lets the collector see every session's state and query age
# without being a superuser; CREATEDB lets tests make scratch databases.
psql_su -d postgres <<SQL
SET client_min_messages = warning;
DO \$\$BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_USER') THEN
    CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASS';
  END IF;
END\$\$;
GRANT pg_monitor TO $PG_USER;
SQL
if [ "$(psql_su -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != 1 ]; then
	psql_su -d postgres -c "CREATE DATABASE $PG_DB OWNER $PG_USER"
fi

# --- Redis --------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
	log "starting redis-server"
	# No config file: save "" so tests never write dump.rdb into cwd.
	redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
		--save "" --appendonly no --dir /tmp --logfile /tmp/stampede-redis-$REDIS_PORT.log
	for _ in $(seq 1 40); do
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
		sleep 0.25
	done
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null || {
		log "redis did not start"
		exit 1
	}
fi

echo "postgres: postgres://$PG_USER:$PG_PASS@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable"
echo "redis:    redis://127.0.0.1:$REDIS_PORT/0"

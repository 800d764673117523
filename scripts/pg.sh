#!/usr/bin/env bash
# Prints a DATABASE_URL for PostgreSQL, starting a server when it must.
#
#   scripts/pg.sh test   DATABASE_URL if set, else 127.0.0.1:5432 if it
#                        answers, else a project-local cluster in .data/pg.
#   scripts/pg.sh run    DATABASE_URL if set, else the project-local cluster.
#   scripts/pg.sh stop   stops the project-local cluster.
#   scripts/pg.sh restart  restarts it (fast shutdown), as an outage would.
#
# The project-local cluster listens on 127.0.0.1 only, on PGLOCAL_PORT
# (default 54329), in PGLOCAL_DATA (default .data/pg; the soak's throwaway
# cluster sets both), with trust auth for the local loopback. Run as root it is
# owned by a non-root user (postgres if it exists, else gatehouse), because
# PostgreSQL refuses to run as root. All diagnostics go to stderr.
set -euo pipefail

mode=${1:-test}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${PGLOCAL_DATA:-$root/.data/pg}
run="$data-run"
port=${PGLOCAL_PORT:-54329}
local_url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"

log() { echo "pg.sh: $*" >&2; }

pgbin() {
	local d
	for d in "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

ensure_binaries() {
	if pgbin >/dev/null; then return 0; fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		log "installing PostgreSQL from Debian's packages"
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
		pgbin >/dev/null && return 0
	fi
	log "PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package 'postgresql' or set DATABASE_URL"
	exit 1
}

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		local user=postgres
		if ! id "$user" >/dev/null 2>&1; then
			user=gatehouse
			id "$user" >/dev/null 2>&1 || useradd --system --no-create-home "$user"
		fi
		chown -R "$user" "$data" "$run" 2>/dev/null || true
		# su needs a command string; quote each argument.
		local cmd="" a
		for a in "$@"; do cmd+=" $(printf '%q' "$a")"; done
		su -s /bin/sh "$user" -c "$cmd"
	else
		"$@"
	fi
}

answers() { # host port
	if command -v pg_isready >/dev/null; then
		pg_isready -q -h "$1" -p "$2" -t 2 >/dev/null 2>&1
	else
		(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
	fi
}

start_local() {
	ensure_binaries
	local bin
	bin=$(pgbin)
	mkdir -p "$run"
	# The cluster's owner must be able to traverse into .data, not list it.
	chmod 711 "$root/.data" 2>/dev/null || true
	chmod o+x "$root" 2>/dev/null || true
	if [ ! -f "$data/PG_VERSION" ]; then
		log "initdb into $data"
		mkdir -p "$data"
		as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-sync >/dev/null
	fi
	if ! answers 127.0.0.1 "$port"; then
		log "starting project-local PostgreSQL on 127.0.0.1:$port"
		as_owner "$bin/pg_ctl" -D "$data" -l "$run/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $run -c max_connections=300 -c fsync=off -c full_page_writes=off" start >&2
	fi
	echo "$local_url"
}

case "$mode" in
test)
	if [ -n "${DATABASE_URL:-}" ]; then
		echo "$DATABASE_URL"
	elif answers 127.0.0.1 5432; then
		echo "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	else
		start_local
	fi
	;;
run)
	if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; else start_local; fi
	;;
stop)
	if [ -f "$data/postmaster.pid" ]; then as_owner "$(pgbin)/pg_ctl" -D "$data" -m fast stop >&2; fi
	;;
restart)
	as_owner "$(pgbin)/pg_ctl" -D "$data" -l "$run/server.log" -m fast -w -t 60 restart >&2
	;;
*)
	log "usage: scripts/pg.sh test|run|stop|restart"
	exit 2
	;;
esac

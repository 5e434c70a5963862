#!/usr/bin/env bash
# Prints a PostgreSQL URL for a maintenance database (postgres) that this
# machine can use, trying in order:
#   1. $DATABASE_URL (its server is used; the database in it is kept for `make run`)
#   2. a server on the local socket or 127.0.0.1:5432, as user postgres
#   3. a private cluster under .data/postgres (port 54329), created with the
#      system's initdb and started with pg_ctl; run as the postgres user when
#      we are root
# and otherwise fails with a message that says how to install PostgreSQL.
# With --server it prints the URL of the server's maintenance database.
set -euo pipefail
cd "$(dirname "$0")/.."
want_server=0
[ "${1:-}" = "--server" ] && want_server=1

say() { echo "find-postgres: $*" >&2; }

if [ -n "${DATABASE_URL:-}" ]; then
  if [ "$want_server" = 1 ]; then
    echo "$DATABASE_URL" | sed -E 's#/[^/?]*(\?|$)#/postgres\1#'
  else
    echo "$DATABASE_URL"
  fi
  exit 0
fi

pgbin() {
  local tool=$1
  if command -v "$tool" >/dev/null 2>&1; then command -v "$tool"; return; fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/$tool" ] && { echo "$d/$tool"; return; }
  done
  return 1
}

ready() { # host port
  local isready
  isready=$(pgbin pg_isready) || return 1
  "$isready" -q -h "$1" -p "$2" -U postgres >/dev/null 2>&1
}

for host in /var/run/postgresql /tmp 127.0.0.1; do
  if ready "$host" 5432; then
    if [ "$host" = 127.0.0.1 ]; then
      echo "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
    else
      echo "postgres:///postgres?host=$host&user=postgres&sslmode=disable"
    fi
    exit 0
  fi
done

data=$PWD/.data/postgres
port=54329
if ready 127.0.0.1 $port; then
  echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  exit 0
fi
initdb=$(pgbin initdb) || { say "no PostgreSQL server found and no initdb to start one. Install PostgreSQL (Debian: apt-get install postgresql) or set DATABASE_URL."; exit 1; }
pgctl=$(pgbin pg_ctl)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || { say "running as root needs a 'postgres' user to own the private cluster (apt-get install postgresql creates it), or set DATABASE_URL."; exit 1; }
  as_pg=(runuser -u postgres --)
fi
mkdir -p "$PWD/.data"
if [ ! -s "$data/PG_VERSION" ]; then
  say "creating a private cluster in $data"
  mkdir -p "$data"
  [ "${#as_pg[@]}" -gt 0 ] && chown postgres "$data" "$PWD/.data"
  "${as_pg[@]}" "$initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
fi
say "starting the private cluster on port $port"
"${as_pg[@]}" "$pgctl" -D "$data" -l "$data/server.log" -w -o "-p $port -k $data -c listen_addresses=127.0.0.1" start >/dev/null
echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"

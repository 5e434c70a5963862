#!/usr/bin/env bash
# make bench-tenants (issue 36, "Ten thousand tenants"): do reads of one
# tenant get slower when the database holds ten thousand others?
#
# On a private, throw-away PostgreSQL cluster (initdb on a free port, as
# scripts/bench-webhooks.sh starts one; never the shared server: the
# load is minutes of bulk writes) it builds two databases:
#   A: TENANTS_BENCH_BASE (10) small tenants + one large tenant;
#   B: A copied (CREATE DATABASE … TEMPLATE) + small tenants up to
#      TENANTS_BENCH_SMALL (10,000) in all.
# A small tenant has 100 contacts (email and address each) and 300 gifts
# (one-line cash donation orders, Completed, over two years, one fund,
# one batch), the large one TENANTS_BENCH_LARGE (1,000,000) contacts and
# three gifts each; every tenant, contact and gift has its audit row
# (cmd/almoner/tools/tenantsbench load: INSERT … SELECT with the triggers
# off, then orders.rebuild_contact_giving per tenant, VACUUM ANALYZE).
#
# Then, TENANTS_BENCH_ROUNDS (6) times, A then B in odd rounds and B
# then A in even ones (A B, B A, A B, …: whichever goes first in a round
# is first as often, so neither gets the quieter half of the machine's
# moods), it starts the one-process server (`almoner serve`, as scripts/bench.sh)
# on the database, and times TENANTS_BENCH_REQUESTS (300) requests from
# TENANTS_BENCH_CLIENTS (4) clients on loopback of each read: the contact
# list's page 1 (small and large tenant), the large tenant's page 1,000
# by pageToken, an order by id, a donations-by-fund report run and the
# event feed's first page (small tenant). The small tenant is small
# tenant 0, loaded with A, in both databases (its rows are A's rows);
# on B the small tenant's reads are timed again for small tenant
# TENANTS_BENCH_BASE, loaded among B's others, whose rows share pages
# with ten thousand tenants' (column B'). It prints the per-tenant
# database objects of A and B and the table of p50/p99 with the ratio of
# the p99s to A's (target: within 1.5×). Results: bin/bench/tenants/.
#
#   make bench-tenants
#   TENANTS_BENCH_SMALL=200 TENANTS_BENCH_LARGE=20000 ./scripts/bench-tenants.sh   # a quick try
#
# TENANTS_BENCH_BIN (bin) is where bin/almoner is (make bench-tenants
# builds it) and tenantsbench is built. TENANTS_BENCH_KEEP=1 leaves the
# cluster's folder (stopped) for another run's TENANTS_BENCH_REUSE=<that
# folder>, which skips the load.
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${TENANTS_BENCH_SMALL:-10000}
BASE=${TENANTS_BENCH_BASE:-10}
LARGE=${TENANTS_BENCH_LARGE:-1000000}
ROUNDS=${TENANTS_BENCH_ROUNDS:-6}
REQUESTS=${TENANTS_BENCH_REQUESTS:-300}
CLIENTS=${TENANTS_BENCH_CLIENTS:-4}
[ "$SMALL" -gt "$BASE" ] || { echo "bench-tenants: TENANTS_BENCH_SMALL ($SMALL) must exceed TENANTS_BENCH_BASE ($BASE)" >&2; exit 1; }
# The deep page must exist: 20 contacts a page.
[ "$LARGE" -ge 20000 ] || { echo "bench-tenants: TENANTS_BENCH_LARGE must be at least 20000 (page 1,000 of 20)" >&2; exit 1; }
bindir=$(mkdir -p "${TENANTS_BENCH_BIN:-bin}" && cd "${TENANTS_BENCH_BIN:-bin}" && pwd)
[ -x "$bindir/almoner" ] || { echo "bench-tenants: no $bindir/almoner: run make build (or make bench-tenants)" >&2; exit 1; }
out=$bindir/bench/tenants
mkdir -p "$out"
rm -f "$out"/round-*.json "$out"/server-*.log
(cd cmd/almoner && go build -o "$bindir/tenantsbench" ./tools/tenantsbench)
# The server and the admin commands sign their calls with a key of this
# run's own.
ALMONER_INTERNAL_KEY=$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')
export ALMONER_INTERNAL_KEY

pgbin() {
  local tool=$1
  if command -v "$tool" >/dev/null 2>&1; then command -v "$tool"; return; fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/$tool" ] && { echo "$d/$tool"; return; }
  done
  return 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
initdb=$(pgbin initdb) || { echo "bench-tenants: no initdb (apt-get install postgresql)" >&2; exit 1; }
pgctl=$(pgbin pg_ctl)
as_pg=()
if [ -n "${TENANTS_BENCH_REUSE:-}" ]; then
  data=$TENANTS_BENCH_REUSE
else
  data=$(mktemp -d "${TMPDIR:-/tmp}/almoner-bench-tenants.XXXXXX")
fi
[ "$(id -u)" = 0 ] && { as_pg=(runuser -u postgres --); chown postgres "$data"; }
port=$(free_port)
spid=
cleanup() {
  if [ -n "$spid" ]; then kill -TERM "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi
  "${as_pg[@]}" "$pgctl" -D "$data/pg" -m fast stop >/dev/null 2>&1 || true
  if [ "${TENANTS_BENCH_KEEP:-0}" = 1 ]; then
    echo "bench-tenants: kept the cluster in $data (TENANTS_BENCH_REUSE=$data; rm -rf it when done)"
  else
    rm -rf "$data"
  fi
}
trap cleanup EXIT

# The server's settings: shared_buffers of 1 GB (the default 128 MB is a
# laptop's), the rest PostgreSQL's defaults. The load adds what a
# throw-away bulk load may: no fsync, no full-page writes, minimal WAL,
# rare checkpoints, no autovacuum (the loader runs VACUUM ANALYZE).
pg_common=(-p "$port" -k "$data/pg" -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=1GB)
pg_load=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_level=minimal -c max_wal_senders=0
  -c max_wal_size=8GB -c checkpoint_timeout=1h -c autovacuum=off)
pg_start() { "${as_pg[@]}" "$pgctl" -D "$data/pg" -l "$data/pg/server.log" -w -t 600 -o "$*" start >/dev/null; }
pg_stop() { "${as_pg[@]}" "$pgctl" -D "$data/pg" -m fast -w -t 600 stop >/dev/null; }
server="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
url_a="postgres://postgres@127.0.0.1:$port/tenants_a?sslmode=disable"
url_b="postgres://postgres@127.0.0.1:$port/tenants_b?sslmode=disable"
ids=$out/tenants.json
ids_b=$out/tenants-b.json

echo "bench-tenants: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); A: $BASE small + 1 large ($LARGE contacts), B: $SMALL small + the same large"
if [ -z "${TENANTS_BENCH_REUSE:-}" ]; then
  "${as_pg[@]}" "$initdb" -D "$data/pg" -U postgres --auth=trust -E UTF8 >/dev/null
  pg_start "${pg_common[*]} ${pg_load[*]}"
  echo "bench-tenants: private PostgreSQL cluster on port $port in $data ($("$pgctl" --version))"
  psql "$server" -qc "CREATE DATABASE tenants_a" >/dev/null
  DATABASE_URL=$url_a "$bindir/almoner" migrate
  t0=$(date +%s)
  echo "== load A: the large tenant and small tenants 0-$((BASE - 1))"
  "$bindir/tenantsbench" load -database-url "$url_a" -small-from 0 -small-to "$BASE" -large "$LARGE" | tee "$ids"
  t1=$(date +%s)
  echo "== B: a copy of A, then small tenants $BASE-$((SMALL - 1))"
  psql "$server" -qc "CREATE DATABASE tenants_b TEMPLATE tenants_a STRATEGY FILE_COPY" >/dev/null
  "$bindir/tenantsbench" load -database-url "$url_b" -small-from "$BASE" -small-to "$SMALL" | tee "$ids_b"
  t2=$(date +%s)
  echo "bench-tenants: loaded A in $((t1 - t0)) s, B in $((t2 - t1)) s more (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  pg_stop
  cp "$ids" "$data/tenants.json"
  cp "$ids_b" "$data/tenants-b.json"
else
  cp "$data/tenants.json" "$ids"
  cp "$data/tenants-b.json" "$ids_b"
fi
small=$(sed -n 's/.*"smallTenant":"\([^"]*\)".*/\1/p' "$ids")
large=$(sed -n 's/.*"largeTenant":"\([^"]*\)".*/\1/p' "$ids")
peer=$(sed -n 's/.*"smallTenant":"\([^"]*\)".*/\1/p' "$ids_b")
pg_start "${pg_common[*]}"

# What grows with tenants, counted in each database (docs/scaling.md,
# "Ten thousand tenants").
{
  echo "| object (count) | A | B |"
  echo "|---|---|---|"
  while IFS='|' read -r what q; do
    printf '| %s | %s | %s |\n' "$what" "$(psql "$url_a" -XAtqc "$q")" "$(psql "$url_b" -XAtqc "$q")"
  done <<'SQL'
tenants (auth.tenants)|SELECT count(*) FROM auth.tenants
schemas|SELECT count(*) FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
sequences|SELECT count(*) FROM pg_sequences
roles (cluster)|SELECT count(*) FROM pg_roles
relations (pg_class: tables, indexes, views, sequences, TOAST)|SELECT count(*) FROM pg_class
functions in Almoner's schemas|SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname IN ('auth','contacts','orders','reports','webhooks','imports','inventory','audit','mail','ratelimit')
contacts.counters rows|SELECT count(*) FROM contacts.counters
orders.counters rows|SELECT count(*) FROM orders.counters
reports.document_counters rows|SELECT count(*) FROM reports.document_counters
auth.tenant_settings rows|SELECT count(*) FROM auth.tenant_settings
auth.api_keys rows|SELECT count(*) FROM auth.api_keys
contacts|SELECT count(*) FROM contacts.contacts
orders|SELECT count(*) FROM orders.orders
orders.contact_giving_months rows|SELECT count(*) FROM orders.contact_giving_months
audit.events rows|SELECT count(*) FROM audit.events
database size|SELECT pg_size_pretty(pg_database_size(current_database()))
SQL
} | tee "$out/objects.md"

http=127.0.0.1:$(free_port)
grpc=127.0.0.1:$(free_port)
admin() { "$bindir/almoner" admin "$@" --auth-addr="$grpc"; }
# serve DB LABEL: start the one-process server on DB and wait until the
# auth service and the gateway answer.
serve() {
  DATABASE_URL=$1 ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_METRICS_ADDR=off ALMONER_LOG_FORMAT=text \
    "$bindir/almoner" serve >>"$out/server-$2.log" 2>&1 &
  spid=$!
  local got=
  for _ in $(seq 1 300); do
    kill -0 "$spid" 2>/dev/null || { echo "bench-tenants: the server exited: $out/server-$2.log" >&2; exit 1; }
    got=$(admin tenant get --tenant 00000000-0000-0000-0000-000000000000 2>&1 || true)
    case $got in *"not found"*) curl -sf "http://$http/readyz" >/dev/null 2>&1 && return ;; esac
    sleep 0.2
  done
  echo "bench-tenants: the server did not become ready: $got" >&2
  exit 1
}
stop_server() { kill -TERM "$spid"; wait "$spid" 2>/dev/null || true; spid=; }
key() { admin key create --tenant "$1" --name bench-tenants --scopes all | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p'; }

measure() { # label round small-tenant small-key [large-tenant large-key]
  "$bindir/tenantsbench" measure -base "http://$http" -label "$1" -round "$2" -requests "$REQUESTS" -clients "$CLIENTS" \
    -small-tenant "$3" -small-key "$4" ${5:+-large-tenant "$5" -large-key "$6"}
}
declare -A small_key large_key
peer_key=
for r in $(seq 1 "$ROUNDS"); do
  order="A B"
  [ $((r % 2)) = 0 ] && order="B A"
  for label in $order; do
    dburl=$url_a
    [ "$label" = B ] && dburl=$url_b
    serve "$dburl" "$label"
    if [ -z "${small_key[$label]:-}" ]; then
      small_key[$label]=$(key "$small")
      large_key[$label]=$(key "$large")
    fi
    echo "== round $r, database $label (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    measure "$label" "$r" "$small" "${small_key[$label]}" "$large" "${large_key[$label]}" >"$out/round-$r-$label.json"
    if [ "$label" = B ]; then
      [ -n "$peer_key" ] || peer_key=$(key "$peer")
      measure "B'" "$r" "$peer" "$peer_key" >"$out/round-$r-Bp.json"
    fi
    stop_server
  done
done

echo
cat "$out"/round-*.json | "$bindir/tenantsbench" report -labels "A,B,B'" \
  -titles "A: $BASE small + 1 large tenant;B: $SMALL small + 1 large, small tenant 0 (loaded with A);B': B, small tenant $BASE (loaded among B's)" |
  tee "$out/table.md"

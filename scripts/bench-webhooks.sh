#!/usr/bin/env bash
# Webhook dispatcher throughput and lag (issue 6):
#   scripts/bench-webhooks.sh <postgres server URL>
#
# Runs BenchmarkDispatcher (services/webhooks/bench_test.go): the real
# dispatcher with the limits raised (1 ms tick, enqueue batches of 10,000,
# WEBHOOK_BENCH_SEND_LIMIT sends in flight) against a local HTTPS receiver.
# It reports deliveries/s draining a backlog of WEBHOOK_BENCH_EVENTS
# (20,000) events, and the commit → first-attempt lag of
# WEBHOOK_BENCH_LAG_EVENTS (10,000) events written one per transaction at
# WEBHOOK_BENCH_RATE (2,000) per second. BENCH_ROUNDS (3) runs; the table
# gives each run and the medians. Raw output: bin/bench/webhooks/bench.txt.
#
# PostgreSQL: by default a private, throw-away cluster on this machine, not
# the server given as $1. The audit reader never reads past the oldest
# transaction still running anywhere on its server (docs/audit-log.md), so
# on a shared server another engineer's long write transaction (a seed
# load in another database) stalls delivery for as long as it runs, and the
# figures would measure that transaction. BENCH_WEBHOOKS_SHARED=1 uses $1.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: scripts/bench-webhooks.sh <postgres server URL>}
ROUNDS=${BENCH_ROUNDS:-3}
out=bin/bench/webhooks
mkdir -p "$out"

pgbin() {
  local tool=$1
  if command -v "$tool" >/dev/null 2>&1; then command -v "$tool"; return; fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/$tool" ] && { echo "$d/$tool"; return; }
  done
  return 1
}

if [ "${BENCH_WEBHOOKS_SHARED:-0}" != 1 ]; then
  initdb=$(pgbin initdb) || { echo "bench-webhooks: no initdb; set BENCH_WEBHOOKS_SHARED=1 to use $server" >&2; exit 1; }
  pgctl=$(pgbin pg_ctl)
  as_pg=()
  data=$(mktemp -d /tmp/almoner-bench-webhooks.XXXXXX)
  if [ "$(id -u)" = 0 ]; then
    as_pg=(runuser -u postgres --)
    chown postgres "$data"
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as_pg[@]}" "$initdb" -D "$data/pg" -U postgres --auth=trust -E UTF8 >/dev/null
  "${as_pg[@]}" "$pgctl" -D "$data/pg" -l "$data/pg/server.log" -w \
    -o "-p $port -k $data/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
  trap '"${as_pg[@]}" "$pgctl" -D "$data/pg" -m fast stop >/dev/null 2>&1 || true; rm -rf "$data"' EXIT
  server="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  echo "bench-webhooks: private PostgreSQL cluster on port $port ($("${as_pg[@]}" "$pgctl" --version))"
fi

(cd services/webhooks && ALMONER_TEST_DATABASE_URL=$server \
  go test -run '^$' -bench '^BenchmarkDispatcher$' -benchtime 1x -count "$ROUNDS" -timeout 30m .) | tee "$out/bench.txt"

python3 - "$out/bench.txt" <<'PY'
import re, statistics, sys
runs = []
for line in open(sys.argv[1]):
    if line.startswith("BenchmarkDispatcher"):
        f = line.split()
        runs.append({f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)})
if not runs:
    sys.exit("bench-webhooks: no result")
cols = [("drain-deliveries/s", "drain deliveries/s"), ("paced-deliveries/s", "paced deliveries/s"),
        ("p50-lag-ms", "p50 lag ms"), ("p99-lag-ms", "p99 lag ms"), ("max-lag-ms", "max lag ms"),
        ("receiver-conns", "TLS connections"), ("repeat-attempts", "repeat attempts"), ("load-avg-1m", "load avg")]
print()
print("| run | " + " | ".join(c[1] for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for i, r in enumerate(runs, 1):
    print(f"| {i} | " + " | ".join(f"{r.get(k, float('nan')):.1f}" if k == "load-avg-1m" else f"{r.get(k, float('nan')):.0f}" for k, _ in cols) + " |")
print("| median | " + " | ".join(f"{statistics.median(r.get(k, float('nan')) for r in runs):.1f}" if k == "load-avg-1m" else f"{statistics.median(r.get(k, float('nan')) for r in runs):.0f}" for k, _ in cols) + " |")
print("targets: >= 2000 deliveries/s; p99 lag < 101 ms (one 1 ms tick + 100 ms)")
PY

# The event feed (issue 17): how soon a reader following GET …/events sees
# an order committed while EVENT_BENCH_RATE (1,000) orders/s are written
# (BenchmarkEventFeedLag in services/webhooks/feed_bench_test.go), on the
# same cluster, BENCH_ROUNDS runs, medians. Target: lag under 1 s.
(cd services/webhooks && ALMONER_TEST_DATABASE_URL=$server \
  go test -run '^$' -bench '^BenchmarkEventFeedLag$' -benchtime 1x -count "$ROUNDS" -timeout 30m .) | tee "$out/feed.txt"

python3 - "$out/feed.txt" <<'PY'
import statistics, sys
runs = []
for line in open(sys.argv[1]):
    if line.startswith("BenchmarkEventFeedLag"):
        f = line.split()
        runs.append({f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)})
if not runs:
    sys.exit("bench-webhooks: no event feed result")
cols = [("orders/s", "orders/s written"), ("lag-p50-ms", "p50 lag ms"), ("lag-p99-ms", "p99 lag ms"), ("lag-max-ms", "max lag ms")]
print()
print("| feed run | " + " | ".join(c[1] for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for i, r in enumerate(runs, 1):
    print(f"| {i} | " + " | ".join(f"{r.get(k, float('nan')):.0f}" for k, _ in cols) + " |")
print("| median | " + " | ".join(f"{statistics.median(r.get(k, float('nan')) for r in runs):.0f}" for k, _ in cols) + " |")
print("target: a committed change seen within 1 s (max lag < 1000 ms) at 1,000 orders/s")
PY

#!/usr/bin/env bash
# make bench: start the one-process server on a fresh database, load it from
# a second process on loopback, and run pgbench on the same database in the
# same run, so the figures can be read as ratios. Results: bin/bench/*.json
# and a table on stdout; docs/performance.md records them.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
secs=${DURATION%s}
out=bin/bench
mkdir -p "$out"
(cd cmd/almoner && go build -o ../../bin/loadgen ./tools/loadgen)

server=$(./scripts/find-postgres.sh --server)
db=almoner_bench
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
psql "$server" -qc "CREATE DATABASE $db" >/dev/null
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")

http=127.0.0.1:18080
grpc=127.0.0.1:19090
DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text \
  ./bin/almoner serve >"$out/server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
admin() { ./bin/almoner admin "$@" --auth-addr=$grpc; }
for _ in $(seq 1 100); do
  tenant=$(admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" 2>/dev/null) && break
  sleep 0.2
done
tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
key=$(admin key create --tenant "$tid" --name bench --scopes all | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
base=http://$http/api/tenants/$tid

echo "== pgbench -S (select-only), $CLIENTS clients, $DURATION"
pgbench -i -q -s 10 "$url" >/dev/null 2>&1
pgbench -S -n -c "$CLIENTS" -j 2 -T "$secs" "$url" >"$out/pgbench-select.txt" 2>&1
pg_select=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-select.txt" | head -1)
echo "pgbench select-only tps: $pg_select"

run() { # name, then loadgen flags
  local name=$1; shift
  GOGC=400 ./bin/loadgen -name "$name" -c "$CLIENTS" -d "$DURATION" "$@" | tee "$out/$name.json"
}

echo "== authenticated GET api-keys, $CLIENTS clients, $DURATION"
run list-api-keys -url "$base/api-keys" -H "X-Api-Key: $key"

python3 - "$out" "$pg_select" <<'PY'
import json, sys, os
out, pg = sys.argv[1], float(sys.argv[2])
r = json.load(open(os.path.join(out, "list-api-keys.json")))
print()
print(f"| measure | value |")
print(f"|---|---|")
print(f"| pgbench -S tps | {pg:.0f} |")
print(f"| GET api-keys rps | {r['rps']:.0f} |")
print(f"| GET api-keys p50 / p99 ms | {r['p50Ms']:.2f} / {r['p99Ms']:.2f} |")
print(f"| ratio to pgbench -S | {r['rps']/pg:.1%} (target >= 25%, p99 < 10 ms) |")
PY

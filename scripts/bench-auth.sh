#!/usr/bin/env bash
# The authenticated read path with the gateway's key-validation cache off
# and on, side by side (issue 2):
#   scripts/bench-auth.sh <postgres server URL>
#
# Each of BENCH_ROUNDS (3) rounds runs pgbench -S; then the floor
# (cmd/almoner/tools/floor: grpc-gateway's mux, one gRPC hop and pgbench -S's
# own SELECT, nothing else) on the same pgbench database; then GET api-keys
# through `almoner serve` with ALMONER_KEY_CACHE_WINDOW=off, then with the
# default window, each on a fresh database; BENCH_CLIENTS (16) keep-alive
# clients for BENCH_DURATION (10s) after a 2 s warm-up. It prints each round
# and the medians, with every rate as a ratio to the same round's pgbench -S.
# Raw results: bin/bench/auth/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The servers this script starts sign their internal calls with this key,
# and its admin commands sign theirs with it too: one of this run's own.
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
server=${1:?usage: scripts/bench-auth.sh <postgres server URL>}
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
out=bin/bench/auth
mkdir -p "$out"
[ -x bin/almoner ] || (cd cmd/almoner && go build -o ../../bin/almoner .)
(cd cmd/almoner && go build -o ../../bin/loadgen ./tools/loadgen && go build -o ../../bin/floor ./tools/floor)

db=almoner_bench_auth
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
http=127.0.0.1:18180
grpc=127.0.0.1:19190
pid=
stop() { if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap stop EXIT

fresh() {
  psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  psql "$server" -qc "CREATE DATABASE $db" >/dev/null
}

# serve <window>: a fresh database and server; sets base and key.
serve() {
  fresh
  DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text \
    ALMONER_KEY_CACHE_WINDOW=$1 ./bin/almoner serve >"$out/server-$1.log" 2>&1 &
  pid=$!
  local tenant=
  for _ in $(seq 1 100); do
    tenant=$(./bin/almoner admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" --auth-addr=$grpc 2>/dev/null) && break
    sleep 0.2
  done
  local tid
  tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$(./bin/almoner admin key create --tenant "$tid" --name bench --scopes all --auth-addr=$grpc |
    sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  base=http://$http/api/tenants/$tid
}

: >"$out/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
  fresh
  pgbench -i -q -s 10 "$url" >/dev/null 2>&1
  pgbench -S -n -c "$CLIENTS" -j 2 -T "${DURATION%s}" "$url" >"$out/pgbench-$r.txt" 2>&1
  pg=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-$r.txt" | head -1)
  ./bin/floor -database "$url" -http 127.0.0.1:18280 -grpc 127.0.0.1:19290 2>"$out/floor-$r.log" &
  pid=$!
  for _ in $(seq 1 50); do curl -sf http://127.0.0.1:18280/floor/1 >/dev/null && break; sleep 0.1; done
  GOGC=400 ./bin/loadgen -name floor -c "$CLIENTS" -d "$DURATION" -url "http://127.0.0.1:18280/floor/4242" >"$out/floor-$r.json"
  stop
  for w in off 500ms; do
    serve "$w"
    GOGC=400 ./bin/loadgen -name "keys-$w" -c "$CLIENTS" -d "$DURATION" -url "$base/api-keys" -H "X-Api-Key: $key" >"$out/keys-$w-$r.json"
    stop
  done
  echo "$r $pg $(cat "$out/floor-$r.json") $(cat "$out/keys-off-$r.json") $(cat "$out/keys-500ms-$r.json") $(cut -d' ' -f1 /proc/loadavg)" >>"$out/rounds.txt"
  echo "round $r done"
done
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1

python3 - "$out/rounds.txt" <<'PY'
import json, statistics, sys
rows = []
for line in open(sys.argv[1]):
    r, pg, rest = line.split(" ", 2)
    dec, objs = json.JSONDecoder(), []
    for _ in range(3):
        rest = rest.lstrip()
        o, i = dec.raw_decode(rest)
        objs.append(o)
        rest = rest[i:]
    rows.append((int(r), float(pg), *objs, rest.strip()))
fmt = lambda x: f"{x['rps']:,.0f} ({x['p50Ms']:.2f} / {x['p99Ms']:.2f})"
print()
print("| round | pgbench -S tps | floor req/s (p50 / p99 ms) | cache off req/s (p50 / p99 ms) | cache on req/s (p50 / p99 ms) | floor ratio | off ratio | on ratio | on ÷ floor | load avg |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r, pg, fl, off, on, load in rows:
    print(f"| {r} | {pg:,.0f} | {fmt(fl)} | {fmt(off)} | {fmt(on)} | {fl['rps']/pg:.1%} | {off['rps']/pg:.1%} | {on['rps']/pg:.1%} | {on['rps']/fl['rps']:.2f} | {load} |")
med = lambda f: statistics.median(f(x) for x in rows)
print(f"| median | {med(lambda x: x[1]):,.0f} | {med(lambda x: x[2]['rps']):,.0f} (p99 {med(lambda x: x[2]['p99Ms']):.2f}) "
      f"| {med(lambda x: x[3]['rps']):,.0f} (p99 {med(lambda x: x[3]['p99Ms']):.2f}) | {med(lambda x: x[4]['rps']):,.0f} (p99 {med(lambda x: x[4]['p99Ms']):.2f}) "
      f"| {med(lambda x: x[2]['rps']/x[1]):.1%} | {med(lambda x: x[3]['rps']/x[1]):.1%} | {med(lambda x: x[4]['rps']/x[1]):.1%} | {med(lambda x: x[4]['rps']/x[2]['rps']):.2f} | |")
print("target: >= 25% of pgbench -S, p99 < 10 ms (cache on is what serve runs by default)")
print("floor: grpc-gateway mux + one gRPC hop + pgbench -S's SELECT and nothing else; no service on this skeleton can pass it")
PY

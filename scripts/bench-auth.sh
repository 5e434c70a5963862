#!/usr/bin/env bash
# The authenticated read path with the gateway's key-validation cache off
# and on, side by side (issue 2), against its floor (issue 38):
#   scripts/bench-auth.sh <postgres server URL>
#
# Each of BENCH_ROUNDS (3) rounds runs pgbench -S; then the floor
# (cmd/almoner/tools/floor: grpc-gateway's mux, one gRPC hop and pgbench -S's
# own SELECT, nothing else) on the same pgbench database; then GET api-keys
# through `almoner serve` with each ALMONER_KEY_CACHE_WINDOW of
# BENCH_AUTH_WINDOWS ("off 500ms": off, then the default window), each on a
# fresh database; BENCH_CLIENTS (16) keep-alive clients for BENCH_DURATION
# (10s) after a 2 s warm-up. BENCH_AUTH_BINS (default ./bin/almoner, built
# when missing: make bench builds it) compares binaries side by side
# ("before after", paths): within a round every binary runs every window,
# one after the other (in reverse order every other round), so "before"
# and "after" share the machine's state. It prints each round and the
# medians, every rate as a ratio to the same round's floor and pgbench -S.
# The key has every scope (BENCH_AUTH_SCOPES=all: the list answers them
# all, and every internal call asserts them). Raw results: BENCH_AUTH_OUT
# (bin/bench/auth).
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
WINDOWS=${BENCH_AUTH_WINDOWS:-off 500ms}
SCOPES=${BENCH_AUTH_SCOPES:-all}
out=${BENCH_AUTH_OUT:-bin/bench/auth}
mkdir -p "$out"
if [ -z "${BENCH_AUTH_BINS:-}" ]; then
  [ -x bin/almoner ] || (cd cmd/almoner && go build -o ../../bin/almoner .)
  BENCH_AUTH_BINS=./bin/almoner
fi
tools=$(cd "$out" && pwd)
(cd cmd/almoner && go build -o "$tools/loadgen" ./tools/loadgen && go build -o "$tools/floor" ./tools/floor)

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

# serve <binary> <window> <log>: a fresh database and server; sets base and key.
serve() {
  fresh
  DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text \
    ALMONER_KEY_CACHE_WINDOW=$2 "$1" serve >"$3" 2>&1 &
  pid=$!
  local tenant=
  for _ in $(seq 1 100); do
    tenant=$("$1" admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" --auth-addr=$grpc 2>/dev/null) && break
    sleep 0.2
  done
  local tid
  tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$("$1" admin key create --tenant "$tid" --name bench --scopes "$SCOPES" --auth-addr=$grpc |
    sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  base=http://$http/api/tenants/$tid
}

# One line per measurement: round, label, load average, loadgen's JSON.
: >"$out/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
  fresh
  pgbench -i -q -s 10 "$url" >/dev/null 2>&1
  pgbench -S -n -c "$CLIENTS" -j 2 -T "${DURATION%s}" "$url" >"$out/pgbench-$r.txt" 2>&1
  pg=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-$r.txt" | head -1)
  echo "$r pgbench $(cut -d' ' -f1 /proc/loadavg) {\"rps\":$pg}" >>"$out/rounds.txt"
  "$tools/floor" -database "$url" -http 127.0.0.1:18280 -grpc 127.0.0.1:19290 2>"$out/floor-$r.log" &
  pid=$!
  for _ in $(seq 1 50); do curl -sf http://127.0.0.1:18280/floor/1 >/dev/null && break; sleep 0.1; done
  GOGC=400 "$tools/loadgen" -name floor -c "$CLIENTS" -d "$DURATION" -url "http://127.0.0.1:18280/floor/4242" >"$out/floor-$r.json"
  stop
  echo "$r floor $(cut -d' ' -f1 /proc/loadavg) $(cat "$out/floor-$r.json")" >>"$out/rounds.txt"
  # Odd rounds take the binaries in the order given, even rounds in
  # reverse, so that neither always runs first after the floor.
  bins=$BENCH_AUTH_BINS
  if [ $((r % 2)) = 0 ]; then bins=$(echo "$bins" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for bin in $bins; do
    # shellcheck disable=SC2086 # the list's words, one per line
    b=$(printf '%s\n' $BENCH_AUTH_BINS | grep -nxF -- "$bin" | head -1 | cut -d: -f1)
    for w in $WINDOWS; do
      label="$(basename "$bin")@$w"
      serve "$bin" "$w" "$out/server-$r-$b-$w.log"
      GOGC=400 "$tools/loadgen" -name "$label" -c "$CLIENTS" -d "$DURATION" -url "$base/api-keys" -H "X-Api-Key: $key" >"$out/keys-$r-$b-$w.json"
      stop
      echo "$r $label $(cut -d' ' -f1 /proc/loadavg) $(cat "$out/keys-$r-$b-$w.json")" >>"$out/rounds.txt"
    done
  done
  echo "round $r done"
done
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1

python3 - "$out/rounds.txt" <<'PY'
import json, statistics, sys
rounds, labels = {}, []
for line in open(sys.argv[1]):
    r, label, load, rest = line.split(" ", 3)
    rounds.setdefault(int(r), {})[label] = (json.loads(rest), load)
    if label not in ("pgbench", "floor") and label not in labels:
        labels.append(label)
fmt = lambda x: f"{x['rps']:,.0f} ({x['p50Ms']:.2f} / {x['p99Ms']:.2f})"
print()
print("| round | pgbench -S tps | floor req/s (p50 / p99 ms) | " + " | ".join(f"{l} req/s (p50 / p99 ms) | {l} ÷ floor" for l in labels) + " | floor ÷ pgbench | load avg |")
print("|---" * (4 + 2 * len(labels)) + "|---|")
for r, m in sorted(rounds.items()):
    pg, fl = m["pgbench"][0]["rps"], m["floor"][0]
    cells = [f"{fmt(m[l][0])} | {m[l][0]['rps'] / fl['rps']:.2f}" for l in labels]
    loads = sorted(float(v[1]) for v in m.values())
    loads = f"{loads[0]:.1f}–{loads[-1]:.1f}"
    print(f"| {r} | {pg:,.0f} | {fmt(fl)} | " + " | ".join(cells) + f" | {fl['rps'] / pg:.1%} | {loads} |")
med = lambda f: statistics.median(f(m) for m in rounds.values())
cells = [f"{med(lambda m: m[l][0]['rps']):,.0f} (p99 {med(lambda m: m[l][0]['p99Ms']):.2f}) | **{med(lambda m: m[l][0]['rps'] / m['floor'][0]['rps']):.2f}**" for l in labels]
print(f"| median | {med(lambda m: m['pgbench'][0]['rps']):,.0f} | {med(lambda m: m['floor'][0]['rps']):,.0f} (p99 {med(lambda m: m['floor'][0]['p99Ms']):.2f}) | "
      + " | ".join(cells) + f" | {med(lambda m: m['floor'][0]['rps'] / m['pgbench'][0]['rps']):.1%} | |")
print("target (issue 38): cache on (what serve runs by default) >= 0.80 of the floor, p99 < 5 ms, 16 clients")
print("floor: grpc-gateway mux + one gRPC hop + pgbench -S's SELECT and nothing else")
PY

#!/usr/bin/env bash
# CPU and allocation profiles of the authenticated read path under load
# (issue 38): scripts/profile-auth.sh <postgres server URL> <binary|floor> [seconds]
#
# With an almoner binary it starts `<binary> serve` on a fresh database with
# the debug listener (ALMONER_DEBUG_ADDR, loopback; pprof is never on the
# API port), creates a tenant and an all-scope key, and loads GET api-keys
# with BENCH_CLIENTS (16) clients; with "floor" it runs the floor
# (cmd/almoner/tools/floor, -pprof) on a pgbench database. After a 2 s
# warm-up it takes a CPU profile of the given seconds (12) and a 1 s
# allocation profile, and prints the load generator's result with the
# process's CPU per request (from /proc, the whole load). Profiles land in
# BENCH_AUTH_OUT (bin/bench/auth-profile) as <label>-cpu.pprof and
# <label>-allocs.pprof; read them with
#   go tool pprof -top <binary> <profile>
#   go tool pprof -sample_index=alloc_objects -top <binary> <profile>
set -euo pipefail
cd "$(dirname "$0")/.."
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
server=${1:?usage: scripts/profile-auth.sh <postgres server URL> <binary|floor> [seconds]}
target=${2:?usage: scripts/profile-auth.sh <postgres server URL> <binary|floor> [seconds]}
secs=${3:-12}
CLIENTS=${BENCH_CLIENTS:-16}
out=${BENCH_AUTH_OUT:-bin/bench/auth-profile}
mkdir -p "$out"
tools=$(cd "$out" && pwd)
(cd cmd/almoner && go build -o "$tools/loadgen" ./tools/loadgen && go build -o "$tools/floor" ./tools/floor)

db=almoner_profile_auth
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
debug=127.0.0.1:18390
pid=
stop() { if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap stop EXIT
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
psql "$server" -qc "CREATE DATABASE $db" >/dev/null

if [ "$target" = floor ]; then
  label=floor
  pgbench -i -q -s 10 "$url" >/dev/null 2>&1
  "$tools/floor" -database "$url" -http 127.0.0.1:18380 -grpc 127.0.0.1:19390 -pprof "$debug" 2>"$out/floor.log" &
  pid=$!
  for _ in $(seq 1 50); do curl -sf http://127.0.0.1:18380/floor/1 >/dev/null && break; sleep 0.1; done
  load=(-url "http://127.0.0.1:18380/floor/4242")
else
  label=$(basename "$target")
  grpc=127.0.0.1:19390
  DATABASE_URL=$url ALMONER_HTTP_ADDR=127.0.0.1:18380 ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text ALMONER_DEBUG_ADDR=$debug \
    "$target" serve >"$out/$label.log" 2>&1 &
  pid=$!
  tenant=
  for _ in $(seq 1 100); do
    tenant=$("$target" admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" --auth-addr=$grpc 2>/dev/null) && break
    sleep 0.2
  done
  tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$("$target" admin key create --tenant "$tid" --name bench --scopes all --auth-addr=$grpc |
    sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  load=(-url "http://127.0.0.1:18380/api/tenants/$tid/api-keys" -H "X-Api-Key: $key")
fi

GOGC=400 "$tools/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s "${load[@]}" >/dev/null
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks)
(
  curl -sf -o "$out/$label-cpu.pprof" "http://$debug/debug/pprof/profile?seconds=$secs"
  curl -sf -o "$out/$label-allocs.pprof" "http://$debug/debug/pprof/allocs?seconds=1"
) &
prof=$!
GOGC=400 "$tools/loadgen" -name "$label" -c "$CLIENTS" -d "$((secs + 2))s" -warmup 0s "${load[@]}" | tee "$out/$label.json"
t1=$(ticks)
wait "$prof"
stop
python3 - "$out/$label.json" "$t0" "$t1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = (float(sys.argv[3]) - float(sys.argv[2])) / float(sys.argv[4])
print(f"{r['name']}: {r['rps']:,.0f} req/s, the process used {cpu:.2f} s of CPU: {cpu / r['requests'] * 1e6:.0f} µs per request")
PY
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true

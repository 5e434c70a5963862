#!/usr/bin/env bash
# CPU profile of the order path under load (issue 38: card orders against
# cash ones): scripts/profile-orders.sh <postgres server URL> <binary> <cash|card|item> [seconds]
#
# Starts the test suite's fake Stripe on loopback and `<binary> serve` on a
# fresh database with the debug listener (ALMONER_DEBUG_ADDR, loopback;
# pprof is never on the API port), creates a tenant with the Stripe
# processor set as make bench does, and loads make bench's POST /orders of
# the given kind with BENCH_CLIENTS (16) clients. After a 2 s warm-up it
# takes a CPU profile of the given seconds (8) and prints the load
# generator's result, the CPU per order of the server and of the fake
# (from /proc, the whole load) and of the load generator (/usr/bin/time),
# and the TCP connections the server opened to the fake meanwhile. BENCH_ORDERS_PROFILE_DB, _HTTP, _GRPC and _DEBUG
# move it out of another run's way. Profiles land in
# BENCH_ORDERS_PROFILE_OUT (bin/bench/orders-profile) as <binary>-<kind>-cpu.pprof; read them with
#   go tool pprof -top <binary> <profile>
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/spread-contacts.sh
source scripts/lib/spread-contacts.sh
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
usage='usage: scripts/profile-orders.sh <postgres server URL> <binary> <cash|card|item> [seconds]'
server=${1:?$usage}
bin=${2:?$usage}
kind=${3:?$usage}
secs=${4:-8}
CLIENTS=${BENCH_CLIENTS:-16}
out=${BENCH_ORDERS_PROFILE_OUT:-bin/bench/orders-profile}
mkdir -p "$out"
tools=$(cd "$out" && pwd)
[ -x "$tools/loadgen" ] || (cd cmd/almoner && go build -o "$tools/loadgen" ./tools/loadgen)
[ -x "$tools/fakestripe" ] || (cd cmd/almoner && go build -o "$tools/fakestripe" ./tools/fakestripe)

db=${BENCH_ORDERS_PROFILE_DB:-almoner_profile_orders}
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
http=${BENCH_ORDERS_PROFILE_HTTP:-127.0.0.1:18391}
grpc=${BENCH_ORDERS_PROFILE_GRPC:-127.0.0.1:19391}
debug=${BENCH_ORDERS_PROFILE_DEBUG:-127.0.0.1:18392}
pid= fpid=
stop() {
  [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
  [ -z "$fpid" ] || kill -TERM "$fpid" 2>/dev/null || true
  wait 2>/dev/null || true
  pid= fpid=
}
trap stop EXIT
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
psql "$server" -qc "CREATE DATABASE $db" >/dev/null

label=$(basename "$bin")-$kind
rm -f "$out/fakestripe.url"
"$tools/fakestripe" >"$out/fakestripe.url" 2>/dev/null &
fpid=$!
for _ in $(seq 1 50); do [ -s "$out/fakestripe.url" ] && break; sleep 0.1; done
stripe_base=$(head -1 "$out/fakestripe.url")
DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_METRICS_ADDR=off ALMONER_LOG_FORMAT=text \
  ALMONER_DEBUG_ADDR=$debug ALMONER_STRIPE_API_BASE=$stripe_base "$bin" serve >"$out/$label.log" 2>&1 &
pid=$!
tenant=
for _ in $(seq 1 100); do
  tenant=$("$bin" admin tenant create --name Bench --slug "prof-$RANDOM$RANDOM" --features api-access:enabled,payment-processor:enabled \
    --auth-addr=$grpc 2>/dev/null) && break
  sleep 0.2
done
tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
key=$("$bin" admin key create --tenant "$tid" --name bench --scopes all --auth-addr=$grpc | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
"$bin" admin tenant processor set --tenant "$tid" --provider stripe --secret-key sk_test_bench0123456789 \
  --webhook-secret whsec_bench0123456789 --auth-addr=$grpc >/dev/null
base=http://$http/api/tenants/$tid
post() { curl -sf -X POST "$base$1" -H "X-Api-Key: $key" -H 'Content-Type: application/json' -d "$2"; }
id_of() { sed -n 's/^{"id":"\{0,1\}\([^",]*\)"\{0,1\},.*/\1/p'; }
item=$(post /inventory '{"sku":"BENCH-1","name":"Bench tote","price":25.00,"trackStock":false}' | id_of)
# Each order names one of 1,000 contacts (scripts/lib/spread-contacts.sh),
# so the cash and card profiles do not wait on one contact's lock.
read -r lo hi < <(spread_contacts "$url" "$tid" 1000)
[ -n "$hi" ] || exit 1
contact="{{random:$lo:$hi}}"
fund=$(post /funds '{"name":"General","isTaxDeductible":true}' | id_of)
case $kind in
cash) body='{"contactId":'"$contact"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}' ;;
card) body='{"contactId":'"$contact"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Card","amount":25.00,"paymentToken":"pm_card_visa"}]}' ;;
item) body='{"contactId":'"$contact"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}' ;;
*) echo "$usage" >&2; exit 2 ;;
esac
load=(-method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" -body "$body")
"$tools/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s "${load[@]}" >/dev/null
psql "$url" -qc "VACUUM ANALYZE" >/dev/null
psql "$url" -qc CHECKPOINT >/dev/null
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
port=${stripe_base##*:}
port=${port%%/*}
conns() { # client sockets to the fake, open and in TIME_WAIT: many means a connection per charge
  ss -Htan "( dport = :$port )" 2>/dev/null | awk '{n[$1]++} END {for (s in n) printf "%s %d ", s, n[s]}'
}
s0=$(ticks "$pid") f0=$(ticks "$fpid")
(curl -sf -o "$out/$label-cpu.pprof" "http://$debug/debug/pprof/profile?seconds=$secs") &
prof=$!
(sleep $((secs / 2)); conns >"$out/$label.conns") &
cpid=$!
# The load generator's own CPU (user + system seconds) is printed per
# order too: on two shared cores it competes with the server and
# PostgreSQL, as pgbench does with PostgreSQL in the floors.
/usr/bin/time -f '%U %S' -o "$out/$label.loadgen-cpu" \
  "$tools/loadgen" -name "$label" -c "$CLIENTS" -d "$((secs + 2))s" -warmup 0s "${load[@]}" >"$out/$label.json"
s1=$(ticks "$pid") f1=$(ticks "$fpid")
wait "$prof" "$cpid"
stop
python3 - "$out/$label.json" "$s0" "$s1" "$f0" "$f1" "$(getconf CLK_TCK)" "$(cat "$out/$label.conns")" "$(tail -1 "$out/$label.loadgen-cpu")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s0, s1, f0, f1, hz = map(float, sys.argv[2:7])
lg = sum(map(float, sys.argv[8].split()))
n = r["requests"]
print(f"{r['name']}: {r['rps']:,.0f} orders/s (p50 {r['p50Ms']:.1f} / p99 {r['p99Ms']:.1f} ms), "
      f"server {(s1 - s0) / hz / n * 1e6:.0f} µs of CPU per order, load generator {lg / n * 1e6:.0f} µs, "
      f"fake Stripe {(f1 - f0) / hz / n * 1e6:.0f} µs; sockets to the fake mid-load: {sys.argv[7]}")
PY

#!/usr/bin/env bash
# bench-writes.sh SERVER_URL: creating a contact against creating a
# donation order, side by side (issue 38: a contact should be created at
# least at the donation order's rate). Each binary of BENCH_WRITES_BINS
# (default: bin/almoner) gets a fresh database and server in every round,
# rounds alternate the binaries (BENCH_ROUNDS, default 2); in each, make
# bench's two scenarios run one after the other: POST /contacts (a new
# contact with one email each time) and POST /orders (a cash donation of
# one contact), BENCH_CLIENTS (16) clients for BENCH_DURATION (10s) after
# a CHECKPOINT; then the donation order's floor: its own statements
# replayed by pgbench (scripts/bench-orders-floor-donation.sql), same
# clients and duration, on the same database. BENCH_PGSTAT=1 also samples pg_stat_activity's wait events
# every 0.2 s during each scenario. Results in $BENCH_BIN/bench/writes/.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: bench-writes.sh SERVER_URL}
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
bindir=$(mkdir -p "${BENCH_BIN:-bin}" && cd "${BENCH_BIN:-bin}" && pwd)
out=$bindir/bench/writes
mkdir -p "$out"
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
http=${BENCH_WRITES_HTTP:-127.0.0.1:18480}
grpc=${BENCH_WRITES_GRPC:-127.0.0.1:19480}
db=${BENCH_WRITES_DB:-almoner_bench_writes}
[ -x "$bindir/loadgen" ] || (cd cmd/almoner && go build -o "$bindir/loadgen" ./tools/loadgen)
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null || true' EXIT

sample() { # name: wait events of the database's active backends
  local name=$1 end=$((SECONDS + ${DURATION%s}))
  while [ $SECONDS -lt $end ]; do
    psql "$url" -Atqc "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()" 2>/dev/null || true
    sleep 0.2
  done | sort | uniq -c | sort -rn | head -8 >"$out/$name.waits"
}

one() { # binary round
  local bin=$1 round=$2 tag
  tag=$(basename "$bin")-$round
  psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  psql "$server" -qc "CREATE DATABASE $db" >/dev/null
  url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
  DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_METRICS_ADDR=off ALMONER_LOG_FORMAT=text \
    "$bin" serve >"$out/server-$tag.log" 2>&1 &
  pid=$!
  local tenant= tid key base contact fund
  for _ in $(seq 1 100); do
    tenant=$("$bin" admin tenant create --name Bench --slug "writes-$RANDOM$RANDOM" --features api-access:enabled --auth-addr=$grpc 2>/dev/null) && break
    sleep 0.2
  done
  tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$("$bin" admin key create --tenant "$tid" --name bench --scopes all --auth-addr=$grpc | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  base=http://$http/api/tenants/$tid
  post() { curl -sf -X POST "$base$1" -H "X-Api-Key: $key" -H 'Content-Type: application/json' -d "$2"; }
  id_of() { sed -n 's/^{"id":"\{0,1\}\([^",]*\)"\{0,1\},.*/\1/p'; }
  contact=$(post /contacts '{"contactType":"Individual","firstName":"Bench","lastName":"Donor","emails":[{"emailAddress":"bench@example.org","emailType":"Personal","isPrimary":true}]}' | id_of)
  fund=$(post /funds '{"name":"General","isTaxDeductible":true}' | id_of)
  local order='{"contactId":'"$contact"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  # Warm both paths and give the fresh tables statistics, as make bench does.
  "$bindir/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" -body "$order" >/dev/null || true
  "$bindir/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 -url "$base/contacts" -H "X-Api-Key: $key" \
    -body '{"contactType":"Individual","firstName":"Warm","lastName":"Donor{{n}}","emails":[{"emailAddress":"warm{{n}}@example.org","emailType":"Personal","isPrimary":true}]}' >/dev/null || true
  psql "$url" -qc "VACUUM ANALYZE" >/dev/null
  local name
  for name in create-contact create-order; do
    psql "$url" -qc CHECKPOINT >/dev/null
    local spid=
    if [ "${BENCH_PGSTAT:-0}" = 1 ]; then
      (sleep 2; sample "$name-$tag") &
      spid=$!
    fi
    if [ $name = create-contact ]; then
      "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/contacts" -H "X-Api-Key: $key" \
        -body '{"contactType":"Individual","firstName":"Load","lastName":"Donor{{n}}","emails":[{"emailAddress":"load{{n}}@example.org","emailType":"Personal","isPrimary":true}]}' >"$out/$name-$tag.json"
    else
      "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" -body "$order" >"$out/$name-$tag.json"
    fi
    [ -z "$spid" ] || wait "$spid"
  done
  # The order's floor: its own statements replayed by pgbench on the same
  # database, same clients (scripts/bench-orders-floor-donation.sql).
  local batch
  batch=$(psql "$url" -Atc "SELECT id FROM orders.batches WHERE tenant_id = '$tid' AND state = 'Open' ORDER BY created_at DESC LIMIT 1")
  psql "$url" -qc CHECKPOINT >/dev/null
  pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "${DURATION%s}" -f scripts/bench-orders-floor-donation.sql \
    -D tid="$tid" -D fund="$fund" -D contact="$contact" -D batch="$batch" "$url" >"$out/order-floor-$tag.txt" 2>&1 || true
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
  python3 - "$out" "$tag" <<'PY'
import json, sys, os, re
out, tag = sys.argv[1], sys.argv[2]
c = json.load(open(os.path.join(out, f"create-contact-{tag}.json")))
o = json.load(open(os.path.join(out, f"create-order-{tag}.json")))
m = re.search(r"^tps = ([0-9.]+)", open(os.path.join(out, f"order-floor-{tag}.txt")).read(), re.M)
floor = float(m.group(1)) if m else float("nan")
print(f"| {tag} | {c['rps']:,.0f}/s ({c['p50Ms']:.1f} / {c['p99Ms']:.1f}) | {o['rps']:,.0f}/s ({o['p50Ms']:.1f} / {o['p99Ms']:.1f}) | "
      f"{c['rps'] / o['rps']:.2f} | {floor:,.0f} | {o['rps'] / floor:.2f} |")
PY
}

echo "| binary-round | create contact req/s (p50 / p99 ms) | create donation order req/s (p50 / p99 ms) | contact ÷ order | order floor tps (pgbench) | order ÷ floor |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
  for b in ${BENCH_WRITES_BINS:-$bindir/almoner}; do
    one "$b" "$round"
  done
done

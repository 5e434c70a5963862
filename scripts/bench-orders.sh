#!/usr/bin/env bash
# The create-order scenarios of make bench on their own, with a side-by-side
# mode: scripts/bench-orders.sh <postgres server URL>
#
# For each round and each binary in BENCH_ORDERS_BINS (default ./bin/almoner,
# built first when it is the default), it runs pgbench's TPC-B-like script on
# the same server, then starts `almoner serve` on a fresh database and loads
# POST /orders from loadgen: donation-only (cash) and one item line (cash),
# all orders for ONE contact and the tenant's daily batch, as make bench does.
# Binaries alternate within a round, so "before" and "after" share the
# machine's state; the table gives per-round ratios to TPC-B and the medians.
#
# BENCH_DURATION (10s), BENCH_CLIENTS (16), BENCH_ROUNDS (1); BENCH_ORDERS_DB_URL
# adds settings to the server's DATABASE_URL (e.g. "pool_max_conns=32").
# BENCH_ORDERS_POOLER=1 runs every binary twice per round: directly, and
# behind PgBouncer in transaction mode (ALMONER_DATABASE_POOL_MODE=
# transaction, docs/scaling.md), labelled "<binary> (PgBouncer)".
# Results: bin/bench/orders/*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
# The servers this script starts sign their internal calls with this key,
# and its admin commands sign theirs with it too: one of this run's own.
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
server=${1:?usage: scripts/bench-orders.sh <postgres server URL>}
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
ROUNDS=${BENCH_ROUNDS:-1}
secs=${DURATION%s}
out=bin/bench/orders
mkdir -p "$out"
rm -f "$out"/*.json
if [ -z "${BENCH_ORDERS_BINS:-}" ]; then
  (cd cmd/almoner && go build -o ../../bin/almoner .)
  BENCH_ORDERS_BINS=./bin/almoner
fi
(cd cmd/almoner && go build -o "../../$out/loadgen" ./tools/loadgen)
modes=direct
pooler_pid=
if [ "${BENCH_ORDERS_POOLER:-0}" = 1 ]; then
  (cd cmd/almoner && go build -o "../../$out/pgbouncer" ./tools/pgbouncer)
  "$out/pgbouncer" -server "$server" >"$out/pgbouncer.port" 2>"$out/pgbouncer.log" &
  pooler_pid=$!
  for _ in $(seq 1 100); do [ -s "$out/pgbouncer.port" ] && break; sleep 0.1; done
  pooler_port=$(cat "$out/pgbouncer.port")
  modes="direct pooled"
  echo "PgBouncer (transaction mode) on 127.0.0.1:$pooler_port"
fi

dburl() { # database name → URL on $server, with the extra settings
  local u
  u=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$1\1#")
  if [ -n "${BENCH_ORDERS_DB_URL:-}" ]; then
    case $u in *\?*) u="$u&$BENCH_ORDERS_DB_URL" ;; *) u="$u?$BENCH_ORDERS_DB_URL" ;; esac
  fi
  echo "$u"
}
fresh() { # database name
  psql "$server" -qc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null
  psql "$server" -qc "CREATE DATABASE $1" >/dev/null
}

# Every measured run starts right after a CHECKPOINT, so no run has the
# previous runs' dirty pages written under it: on a server with the default
# max_wal_size (1 GB) most checkpoints are forced by WAL volume, at any
# moment of a run. The server's checkpoint count is printed with each run.
checkpoint() { psql "$server" -qc CHECKPOINT >/dev/null; }
checkpoints() { psql "$server" -Atc "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"; }

pgdb=almoner_bench_orders_pgbench
fresh $pgdb
pgbench -i -q -s 10 "$(echo "$server" | sed -E "s#/postgres(\?|$)#/$pgdb\1#")" >/dev/null 2>&1

http=127.0.0.1:18180
grpc=127.0.0.1:19190
pid=
stop_server() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
stop_all() {
  stop_server
  if [ -n "$pooler_pid" ]; then kill -TERM "$pooler_pid" 2>/dev/null || true; wait "$pooler_pid" 2>/dev/null || true; fi
}
trap stop_all EXIT
labels=()
for bin in $BENCH_ORDERS_BINS; do
  for mode in $modes; do
    if [ "$mode" = pooled ]; then labels+=("$bin (PgBouncer)"); else labels+=("$bin"); fi
  done
done

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round: pgbench TPC-B-like, $CLIENTS clients, $DURATION (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  checkpoint
  pgbench -n -c "$CLIENTS" -j 2 -T "$secs" "$(echo "$server" | sed -E "s#/postgres(\?|$)#/$pgdb\1#")" >"$out/pgbench-$round.txt" 2>&1
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-$round.txt" | head -1)
  echo "{\"name\":\"pgbench-tpcb\",\"round\":$round,\"rps\":$tps}" >"$out/pgbench-$round.json"
  echo "tps: $tps"
  b=0
  for target in $(for bin in $BENCH_ORDERS_BINS; do for mode in $modes; do echo "$bin@$mode"; done; done); do
    bin=${target%@*}
    mode=${target#*@}
    b=$((b + 1))
    db=almoner_bench_orders_$b
    fresh $db
    url=$(dburl $db)
    pooled=()
    if [ "$mode" = pooled ]; then
      # Migrated on the server, served through the pooler.
      "$bin" migrate --database-url="$url" >/dev/null
      pooled=(ALMONER_MIGRATE=false ALMONER_DATABASE_POOL_MODE=transaction ALMONER_DIRECT_DATABASE_URL="$url")
      url="postgres://postgres@127.0.0.1:$pooler_port/$db?sslmode=disable"
    fi
    env "${pooled[@]}" DATABASE_URL="$url" ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text \
      "$bin" serve >"$out/server-$round-$b.log" 2>&1 &
    pid=$!
    admin() { "$bin" admin "$@" --auth-addr=$grpc; }
    tenant=
    for _ in $(seq 1 150); do
      tenant=$(admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" 2>/dev/null) && break
      sleep 0.2
    done
    tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
    key=$(admin key create --tenant "$tid" --name bench --scopes all | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
    base=http://$http/api/tenants/$tid
    post() { curl -sf -X POST "$base$1" -H "X-Api-Key: $key" -H 'Content-Type: application/json' -d "$2"; }
    id_of() { sed -n 's/^{"id":"\{0,1\}\([^",]*\)"\{0,1\},.*/\1/p'; }
    item=$(post /inventory '{"sku":"BENCH-1","name":"Bench tote","price":25.00,"trackStock":false}' | id_of)
    contact=$(post /contacts '{"contactType":"Individual","firstName":"Bench","lastName":"Donor","emails":[{"emailAddress":"bench@example.org","emailType":"Personal","isPrimary":true}]}' | id_of)
    fund=$(post /funds '{"name":"General","isTaxDeductible":true}' | id_of)
    run() { # scenario, body
      checkpoint
      echo "-- $bin $1 (load: $(cut -d' ' -f1-3 /proc/loadavg); checkpoints so far: $(checkpoints))"
      GOGC=400 "$out/loadgen" -name "$1" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 \
        -url "$base/orders" -H "X-Api-Key: $key" -body "$2" >"$out/$1-$round-$b.json" || true
      cat "$out/$1-$round-$b.json"
    }
    donation='{"contactId":'"$contact"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
    itemorder='{"contactId":'"$contact"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
    # A production database has statistics; a fresh one has none until
    # autovacuum first visits it (up to a minute), and plans made without
    # them can pick any index that leads with tenant_id: the foreign-key
    # check of an order's lines then walked every order of the tenant
    # through orders_report_gifts, slower with every order (docs/orders.md).
    # So a short unmeasured load of both scenarios, then ANALYZE, then the
    # measured runs.
    for body in "$donation" "$itemorder"; do
      "$out/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 \
        -url "$base/orders" -H "X-Api-Key: $key" -body "$body" >/dev/null || true
    done
    psql "$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")" -qc ANALYZE >/dev/null
    run create-order "$donation"
    run create-order-item "$itemorder"
    stop_server
    psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  done
done
psql "$server" -qc "DROP DATABASE IF EXISTS $pgdb WITH (FORCE)" >/dev/null

python3 - "$out" "$ROUNDS" "${labels[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
print()
print("| binary | scenario | round | TPC-B tps | orders/s | p50 ms | p99 ms | errors | ratio to TPC-B |")
print("|---|---|---|---|---|---|---|---|---|")
summary = {}
for r in range(1, rounds + 1):
    tps = load(f"pgbench-{r}")["rps"]
    for b, binary in enumerate(bins, 1):
        for sc in ("create-order", "create-order-item"):
            x = load(f"{sc}-{r}-{b}")
            if x is None:
                print(f"| {binary} | {sc} | {r} | {tps:.0f} | failed | | | | |")
                continue
            ratio = x["rps"] / tps
            summary.setdefault((binary, sc), []).append((ratio, x["rps"], x["p50Ms"], x["p99Ms"]))
            print(f"| {binary} | {sc} | {r} | {tps:.0f} | {x['rps']:.0f} | {x['p50Ms']:.2f} | {x['p99Ms']:.2f} | {x['errors']} | {ratio:.1%} |")
print()
print("Medians over rounds (target: >= 30% of TPC-B, p99 < 25 ms):")
print()
print("| binary | scenario | orders/s | p50 ms | p99 ms | ratio to TPC-B |")
print("|---|---|---|---|---|---|")
for (binary, sc), v in summary.items():
    med = lambda i: statistics.median(t[i] for t in v)
    print(f"| {binary} | {sc} | {med(1):.0f} | {med(2):.2f} | {med(3):.2f} | {med(0):.1%} |")
PY

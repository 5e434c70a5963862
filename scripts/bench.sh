#!/usr/bin/env bash
# make bench: start the one-process server on a fresh database, load it from
# a second process on loopback, and run pgbench on the same database in the
# same run, so the figures can be read as ratios. Results: bin/bench/*.json
# and a table on stdout; docs/performance.md records them.
# BENCH_ONLY=imports runs only the imports step (bench_imports below).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/spread-contacts.sh
source scripts/lib/spread-contacts.sh
# The servers this script starts sign their internal calls with this key,
# and its admin commands sign theirs with it too: one of this run's own.
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
secs=${DURATION%s}
# BENCH_BIN (bin) is where the binaries are and the results go.
bindir=$(mkdir -p "${BENCH_BIN:-bin}" && cd "${BENCH_BIN:-bin}" && pwd)
out=$bindir/bench
mkdir -p "$out"
pid= fpid= ipid= bpid=
cleanup() {
  for p in $pid $fpid $ipid $bpid; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $pid $fpid $ipid $bpid; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# bench_imports: IMPORTS_BENCH_ROWS (1,000,000) contacts, then as many
# gifts (one per contact, fund by name, contact by externalId), from CSV,
# end to end through a one-process server of their own on a fresh
# database: POST /imports streams the file, then GET …/imports/{id} is
# polled every 0.5 s until it succeeded. Reports per file the upload time,
# the wall time from the first byte sent to succeeded, and the server
# process's peak RSS so far (/proc/<pid>/status VmHWM: gateway and every
# service in that one process; PostgreSQL's own memory is not in it).
# Right before each file, in the same database, its floor: PostgreSQL
# alone loading the same CSV into tables like the import's, with their
# indexes and foreign keys (COPY into staging, then INSERT … SELECT per
# table and batch of ALMONER_IMPORTS_BATCH rows, each batch its own
# transaction: scripts/bench-imports-floor-*.sql); the ratio is
# wall ÷ floor.
# IMPORTS_BENCH_BINS (the built binary) lists binaries to compare, and
# IMPORTS_BENCH_ROUNDS (1) how often each runs, alternating.
# Targets (issue 38): each file within 1.3× its floor, peak under 256 MB.
bench_imports() {
  local rows=${IMPORTS_BENCH_ROWS:-1000000} rounds=${IMPORTS_BENCH_ROUNDS:-1}
  echo "== imports: generating $rows contacts and $rows gifts (CSV)"
  python3 - "$rows" "$out/imports-contacts.csv" "$out/imports-gifts.csv" <<'PY'
import sys
n, cpath, gpath = int(sys.argv[1]), sys.argv[2], sys.argv[3]
letters = "abcdefghijklmnopqrstuvwxyz"
def word(i, k):
    # A scrambled base-26 word per row: names no two rows share closely,
    # so the duplicate matching (names at one postal code) finds none.
    x = (i * 2654435761 + k) % (26 ** 7)
    out = []
    for _ in range(7):
        x, r = divmod(x, 26)
        out.append(letters[r])
    return "".join(out).capitalize()
with open(cpath, "w") as f:
    f.write("externalId,firstName,lastName,email,line1,city,postalCode,country,tags\n")
    for i in range(n):
        f.write(f"B-{i},{word(i, 1)},{word(i, 2)},donor{i}@example.org,{i % 9999 + 1} Main St,Springfield,{i % 99991:05d},US,bench;import\n")
with open(gpath, "w") as f:
    f.write("externalId,contactExternalId,date,amount,currency,fund,paymentMethod\n")
    for i in range(n):
        f.write(f"G-{i},B-{i},2025-{i % 12 + 1:02d}-{i % 28 + 1:02d},{10 + i % 90}.{i % 100:02d},USD,General,Cash\n")
PY
  echo "| binary | file | status | upload | wall (upload to succeeded) | floor (COPY + INSERT … SELECT) | wall ÷ floor | rows/s | server peak RSS | counts |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  local r b
  for r in $(seq 1 "$rounds"); do
    for b in ${IMPORTS_BENCH_BINS:-$bindir/almoner}; do
      bench_imports_one "$b" "$rows"
    done
  done
}

# bench_imports_one BINARY ROWS: one fresh database, server and tenant;
# the contacts file then the gifts file, each right after its floor.
bench_imports_one() {
  local bin=$1 rows=$2
  local ihttp=${IMPORTS_BENCH_HTTP:-127.0.0.1:18081} igrpc=${IMPORTS_BENCH_GRPC:-127.0.0.1:19091}
  local idb=${IMPORTS_BENCH_DB:-almoner_bench_imports}
  psql "$server" -qc "DROP DATABASE IF EXISTS $idb WITH (FORCE)" >/dev/null
  psql "$server" -qc "CREATE DATABASE $idb" >/dev/null
  local iurl
  iurl=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$idb\1#")
  DATABASE_URL=$iurl ALMONER_HTTP_ADDR=$ihttp ALMONER_GRPC_ADDR=$igrpc ALMONER_METRICS_ADDR=off ALMONER_LOG_FORMAT=text \
    "$bin" serve >"$out/imports-server.log" 2>&1 &
  ipid=$!
  local itenant= tid key
  for _ in $(seq 1 100); do
    itenant=$("$bin" admin tenant create --name "Imports bench" --slug "imports-$RANDOM$RANDOM" --features api-access:enabled --auth-addr=$igrpc 2>/dev/null) && break
    sleep 0.2
  done
  tid=$(echo "$itenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$("$bin" admin key create --tenant "$tid" --name bench --scopes all --auth-addr=$igrpc | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  local ibase=http://$ihttp/api/tenants/$tid
  curl -sf -X POST "$ibase/funds" -H "X-Api-Key: $key" -H 'Content-Type: application/json' -d '{"name":"General"}' >/dev/null
  local kind file start uploaded end id status state floor
  for kind in contacts gifts; do
    file=$out/imports-$kind.csv
    psql "$iurl" -qc CHECKPOINT >/dev/null
    floor=$(psql "$iurl" -q -v tenant="$tid" -v file="$file" -v batch="${ALMONER_IMPORTS_BATCH:-5000}" -f "scripts/bench-imports-floor-$kind.sql" | sed -n 's/^floor_seconds //p')
    psql "$iurl" -qc CHECKPOINT >/dev/null
    start=$(date +%s.%N)
    # -T streams the file from disk; no Expect: 100-continue round trip.
    id=$(curl -sS -X POST -T "$file" -H 'Expect:' -H "X-Api-Key: $key" -H 'Content-Type: text/csv' "$ibase/imports?kind=$kind&format=csv" |
      tee "$out/imports-$kind-upload.json" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
    uploaded=$(date +%s.%N)
    [ -n "$id" ] || { echo "imports: the upload of $file was refused"; return 1; }
    while :; do
      # A poll that fails (a timeout under load) is noted and retried.
      state=$(curl -sS -m 10 -w '\n%{http_code}' "$ibase/imports/$id" -H "X-Api-Key: $key" 2>&1) || true
      if [ "${state##*$'\n'}" != 200 ]; then
        echo "imports: poll answered: $state" >&2
        sleep 0.5
        continue
      fi
      state=${state%$'\n'*}
      status=$(echo "$state" | sed -n 's/.*"status":"\([^"]*\)".*/\1/p')
      case $status in succeeded|failed) break ;; esac
      sleep 0.5
    done
    end=$(date +%s.%N)
    echo "$state" >"$out/imports-$kind.json"
    python3 - "$bin" "$kind" "$rows" "$start" "$uploaded" "$end" "$floor" "$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$ipid/status)" "$state" <<'PY' | tee -a "$out/imports.txt"
import json, sys
binary, kind, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
start, up, end, floor = map(float, sys.argv[4:8])
hwm, state = int(sys.argv[8]), json.loads(sys.argv[9])
counts = " ".join(f"{k}={state[k]}" for k in ("rows", "created", "updated", "skipped", "failed"))
print(f"| {binary} | {rows:,} {kind} | {state['status']} | {up - start:.1f} s | {end - start:.1f} s | {floor:.1f} s | "
      f"{(end - start) / floor:.2f} | {rows / (end - start):,.0f} | {hwm / 1024:.1f} MB | {counts} |")
PY
  done
  kill -TERM $ipid 2>/dev/null || true
  wait $ipid 2>/dev/null || true
  ipid=
}
if [ "${BENCH_ONLY:-}" != imports ]; then
  (cd cmd/almoner && go build -o "$bindir/loadgen" ./tools/loadgen && go build -o "$bindir/fakestripe" ./tools/fakestripe)
fi

server=$(./scripts/find-postgres.sh --server)
if [ "${BENCH_ONLY:-}" = imports ]; then
  bench_imports
  exit 0
fi
db=almoner_bench
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
psql "$server" -qc "CREATE DATABASE $db" >/dev/null
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")

http=127.0.0.1:18080
grpc=127.0.0.1:19090
# The card scenario charges the test suite's fake Stripe on loopback: the
# figure is our side of a card order (the PaymentIntent round trip, the
# processor lookup, the number taken ahead), not Stripe's latency.
"$bindir/fakestripe" >"$out/fakestripe.url" 2>"$out/fakestripe.log" &
fpid=$!
for _ in $(seq 1 50); do [ -s "$out/fakestripe.url" ] && break; sleep 0.1; done
stripe_base=$(head -1 "$out/fakestripe.url")
DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text ALMONER_STRIPE_API_BASE=$stripe_base \
  "$bindir/almoner" serve >"$out/server.log" 2>&1 &
pid=$!
admin() { "$bindir/almoner" admin "$@" --auth-addr=$grpc; }
for _ in $(seq 1 100); do
  tenant=$(admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" --features api-access:enabled,payment-processor:enabled 2>/dev/null) && break
  sleep 0.2
done
tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
key=$(admin key create --tenant "$tid" --name bench --scopes all | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
admin tenant processor set --tenant "$tid" --provider stripe --secret-key sk_test_bench0123456789 --webhook-secret whsec_bench0123456789 >/dev/null
base=http://$http/api/tenants/$tid

echo "== pgbench -S (select-only), $CLIENTS clients, $DURATION"
pgbench -i -q -s 10 "$url" >/dev/null 2>&1
pgbench -S -n -c "$CLIENTS" -j 2 -T "$secs" "$url" >"$out/pgbench-select.txt" 2>&1
pg_select=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-select.txt" | head -1)
echo "pgbench select-only tps: $pg_select"

# Every scenario starts right after a CHECKPOINT, as in bench-orders.sh, so
# no scenario has the previous ones' dirty pages written under it.
run() { # name, then loadgen flags
  local name=$1; shift
  psql "$url" -qc CHECKPOINT >/dev/null
  GOGC=400 "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" "$@" | tee "$out/$name.json"
}

echo "== authenticated GET api-keys, $CLIENTS clients, $DURATION"
run list-api-keys -url "$base/api-keys" -H "X-Api-Key: $key"

# Data for the other scenarios, created through the API.
post() { curl -sf -X POST "$base$1" -H "X-Api-Key: $key" -H 'Content-Type: application/json' -d "$2"; }
id_of() { sed -n 's/^{"id":"\{0,1\}\([^",]*\)"\{0,1\},.*/\1/p'; }
item=$(post /inventory '{"sku":"BENCH-1","name":"Bench tote","price":25.00,"trackStock":false}' | id_of)
contact=$(post /contacts '{"contactType":"Individual","firstName":"Bench","lastName":"Donor","emails":[{"emailAddress":"bench@example.org","emailType":"Personal","isPrimary":true}]}' | id_of)
fund=$(post /funds '{"name":"General","isTaxDeductible":true}' | id_of)
# The order scenarios name one of BENCH_CONTACTS (1,000) contacts drawn per
# request (scripts/lib/spread-contacts.sh): with every order for one
# contact they measured that contact's giving-summary lock, not the path
# (performance.md, session 14). scripts/bench-writes.sh keeps the
# one-contact case as its own row.
read -r spread_lo spread_hi < <(spread_contacts "$url" "$tid" "${BENCH_CONTACTS:-1000}")
[ -n "$spread_hi" ] || exit 1
donor="{{random:$spread_lo:$spread_hi}}"

echo "== pgbench TPC-B-like (default script), $CLIENTS clients, $DURATION"
pgbench -n -c "$CLIENTS" -j 2 -T "$secs" "$url" >"$out/pgbench-tpcb.txt" 2>&1
pg_tpcb=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/pgbench-tpcb.txt" | head -1)
echo "pgbench TPC-B tps: $pg_tpcb"

echo "== get inventory item"
run get-item -url "$base/inventory/$item" -H "X-Api-Key: $key"
echo "== get contact"
run get-contact -url "$base/contacts/$contact" -H "X-Api-Key: $key"
echo "== create contact"
run create-contact -method POST -status 201 -url "$base/contacts" -H "X-Api-Key: $key" \
  -body '{"contactType":"Individual","firstName":"Load","lastName":"Donor{{n}}","emails":[{"emailAddress":"load{{n}}@example.org","emailType":"Personal","isPrimary":true}]}'
# As scripts/bench-orders.sh: give the fresh database statistics before the
# order scenarios, or plans made on empty tables decide the figures.
for body in '{"contactId":'"$donor"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}' \
            '{"contactId":'"$donor"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'; do
  "$bindir/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" -body "$body" >/dev/null || true
done
# VACUUM as well: the contact scenario leaves thousands of rows, whose
# autovacuum (and the GIN pending lists of the contact search indexes)
# would otherwise run during the order scenarios and be measured as theirs.
psql "$url" -qc "VACUUM ANALYZE" >/dev/null
echo "== create order (donation only, cash)"
run create-order -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
  -body '{"contactId":'"$donor"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
echo "== create order (donation only, card through Stripe: the fake on loopback)"
run create-order-card -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
  -body '{"contactId":'"$donor"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Card","amount":25.00,"paymentToken":"pm_card_visa"}]}'
echo "== create order (one item line, cash)"
run create-order-item -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
  -body '{"contactId":'"$donor"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'

# The same reads and orders through PgBouncer in transaction mode (issue
# 36, docs/scaling.md): the direct server stops, and a server on the same
# database, tenant and key serves through a pooler started as make
# test-pgbouncer starts one (cmd/almoner/tools/pgbouncer: Debian's
# pgbouncer on a free port). The table gives each scenario's ratio to its
# direct run above. BENCH_POOLER=0 skips it.
pooled=
if [ "${BENCH_POOLER:-1}" = 1 ]; then
  (cd cmd/almoner && go build -o "$bindir/pgbouncer" ./tools/pgbouncer)
  "$bindir/pgbouncer" -server "$server" >"$out/pgbouncer.port" 2>"$out/pgbouncer.log" &
  bpid=$!
  for _ in $(seq 1 100); do [ -s "$out/pgbouncer.port" ] && break; sleep 0.1; done
  [ -s "$out/pgbouncer.port" ] || { echo "bench: PgBouncer did not start: $(cat "$out/pgbouncer.log")" >&2; exit 1; }
  kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
  pooled_url="postgres://postgres@127.0.0.1:$(cat "$out/pgbouncer.port")/$db?sslmode=disable"
  ALMONER_MIGRATE=false ALMONER_DATABASE_POOL_MODE=transaction ALMONER_DIRECT_DATABASE_URL=$url DATABASE_URL=$pooled_url \
    ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text ALMONER_STRIPE_API_BASE=$stripe_base \
    "$bindir/almoner" serve >"$out/server-pgbouncer.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do curl -sf "http://$http/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
  echo "== through PgBouncer (transaction mode): the reads and orders again"
  run list-api-keys-pgbouncer -url "$base/api-keys" -H "X-Api-Key: $key"
  run get-item-pgbouncer -url "$base/inventory/$item" -H "X-Api-Key: $key"
  run get-contact-pgbouncer -url "$base/contacts/$contact" -H "X-Api-Key: $key"
  run create-order-pgbouncer -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
    -body '{"contactId":'"$donor"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  run create-order-item-pgbouncer -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
    -body '{"contactId":'"$donor"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  pooled=1
fi

python3 - "$out" "$pg_select" "$pg_tpcb" "$pooled" <<'PY'
import json, sys, os
out, pg, tpcb, pooled = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
def r(name): return json.load(open(os.path.join(out, name + ".json")))
print()
print("| measure | requests/s | p50 ms | p99 ms | ratio |")
print("|---|---|---|---|---|")
print(f"| pgbench -S (select-only) | {pg:.0f} | | | |")
print(f"| pgbench TPC-B-like | {tpcb:.0f} | | | |")
for name, base, label, target in [
    ("list-api-keys", pg, "of pgbench -S", "target >= 25%, p99 < 10 ms"),
    ("get-item", pg, "of pgbench -S", ""),
    ("get-contact", pg, "of pgbench -S", ""),
    ("create-contact", tpcb, "of TPC-B", ""),
    ("create-order", tpcb, "of TPC-B", "target >= 30%, p99 < 25 ms"),
    ("create-order-item", tpcb, "of TPC-B", ""),
]:
    x = r(name)
    print(f"| {name} | {x['rps']:.0f} | {x['p50Ms']:.2f} | {x['p99Ms']:.2f} | {x['rps']/base:.1%} {label} {('(' + target + ')') if target else ''} |")
cash, card = r("create-order"), r("create-order-card")
print(f"| create-order-card | {card['rps']:.0f} | {card['p50Ms']:.2f} | {card['p99Ms']:.2f} | {card['rps']/cash['rps']:.1%} of cash orders' requests/s, p50 {card['p50Ms']/cash['p50Ms']:.2f}x |")
if pooled:
    for name in ("list-api-keys", "get-item", "get-contact", "create-order", "create-order-item"):
        d, p = r(name), r(name + "-pgbouncer")
        print(f"| {name} through PgBouncer | {p['rps']:.0f} | {p['p50Ms']:.2f} | {p['p99Ms']:.2f} | {p['rps']/d['rps']:.1%} of direct requests/s, p99 {p['p99Ms']/d['p99Ms']:.2f}x |")
PY

# Service-level Go benchmarks (against PostgreSQL, without HTTP). Set
# BENCH_GO=0 to skip them; they take a few minutes (the contacts one seeds
# 1,000,000 contacts once and keeps the database for later runs).
if [ "${BENCH_GO:-1}" = 1 ]; then
  export ALMONER_TEST_DATABASE_URL=$server
  echo "== inventory: BenchmarkReserve"
  (cd services/inventory && go test -run '^$' -bench Reserve -benchtime 2000x ./store/ | grep -E '^Benchmark')
  echo "== contacts at 1,000,000: create, get, check-duplicates, list page 1 vs page 10,000 by pageToken"
  (cd services/contacts && go test -run '^$' -bench . -benchtime 1000x -timeout 30m . | grep -E '^Benchmark')
  echo "== orders: create (donation only), list page 1 vs 10,000 deep (ORDERS_BENCH_ROWS, default 1,000,000)"
  (cd services/orders && go test -run '^$' -bench . -benchtime 200x -timeout 30m . | grep -E '^Benchmark')
fi

# Per-service benchmark scripts (each owns its setup and prints its own
# table): scripts/bench-<service>.sh, given the PostgreSQL server URL.
# BENCH_ONLY=webhooks (or reports, ...) runs just those; imports is the
# step above (bench_imports), after the others.
for s in auth staff webhooks reports dashboard cohorts taxruns letters fulfillment imports; do
  case " ${BENCH_ONLY:-auth staff webhooks reports dashboard cohorts taxruns letters fulfillment imports} " in *" $s "*) ;; *) continue ;; esac
  if [ "$s" = imports ]; then
    kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; pid=
    echo "== imports (bench_imports)"
    bench_imports
  elif [ -x "scripts/bench-$s.sh" ]; then
    echo "== $s (scripts/bench-$s.sh)"
    ./scripts/bench-$s.sh "$server"
  fi
done

#!/usr/bin/env bash
# bench-writes.sh SERVER_URL: the write paths against each other and
# against their own statements (issue 38). Each binary of BENCH_WRITES_BINS
# (default: $BENCH_BIN/almoner) gets a fresh database, server and fake
# Stripe in every round; rounds alternate the binaries (BENCH_ROUNDS,
# default 2). Setup makes BENCH_WRITES_CONTACTS (1000) contacts with one
# set-based INSERT (ids taken from the tenant's contact counter, so the
# server never hands them out again), and each order below names one of
# them drawn at random per request (loadgen's {{random:LO:HI}}, pgbench's
# random(LO, HI)): every gift takes its contact's giving-summary lock at
# commit, and orders of one contact would measure that lock's queue, not
# the path. In each round make bench's scenarios run one after the other,
# BENCH_CLIENTS (16) clients for BENCH_DURATION (10s) each after a
# CHECKPOINT:
#   create-contact     POST /contacts (a new contact with one email)
#   create-order       POST /orders, a cash donation of one of the contacts
#   create-order-card  the same donation paid by card (pm_card_visa) through
#                      the test suite's fake Stripe on loopback
#                      (cmd/almoner/tools/fakestripe, as make bench starts it)
#   floor-donation     the cash donation order's own statements replayed by
#                      pgbench (scripts/bench-orders-floor-donation.sql)
#   create-order-item  POST /orders of one item line, paid in cash
#   floor-item         its own statements in pgbench
#                      (scripts/bench-orders-floor-item.sql)
#   create-order-hot   the cash donation, every order for one contact (the
#                      hot donor: one contact's orders commit one at a time
#                      on its giving-summary lock)
#   floor-donation-hot the donation floor, every transaction for that contact
# The floors run with the same clients and duration on the same database,
# with --log: their p50 and p99 come from pgbench's per-transaction
# latencies. Two tables follow: the contact against the cash donation
# order, then each order kind against its floor and the card order
# against the cash one, with the CPU the load generator and pgbench spent
# per request and per transaction (/usr/bin/time): on two shared cores a
# client's CPU is taken from the server and PostgreSQL. BENCH_PGSTAT=1
# also samples pg_stat_activity's wait events every 0.2 s during each
# scenario. Results in
# $BENCH_BIN/bench/writes/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/spread-contacts.sh
source scripts/lib/spread-contacts.sh
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
ncontacts=${BENCH_WRITES_CONTACTS:-1000}
[ -x "$bindir/loadgen" ] || (cd cmd/almoner && go build -o "$bindir/loadgen" ./tools/loadgen)
[ -x "$bindir/fakestripe" ] || (cd cmd/almoner && go build -o "$bindir/fakestripe" ./tools/fakestripe)
pid= fpid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; [ -n "$fpid" ] && kill -TERM "$fpid" 2>/dev/null; wait 2>/dev/null || true' EXIT
tags=()

sample() { # name: wait events of the database's active backends
  local name=$1 end=$((SECONDS + ${DURATION%s}))
  while [ $SECONDS -lt $end ]; do
    psql "$url" -Atqc "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()" 2>/dev/null || true
    sleep 0.2
  done | sort | uniq -c | sort -rn | head -8 >"$out/$name.waits"
}

timed() { # command...: run it, its CPU (user + system seconds) in $out/$name-$tag.cpu
  /usr/bin/time -f '%U %S' -o "$out/$name-$tag.cpu" "$@"
}

one() { # binary round
  local bin=$1 round=$2 tag
  tag=$(basename "$bin")-$round
  tags+=("$tag")
  psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  psql "$server" -qc "CREATE DATABASE $db" >/dev/null
  url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
  # The card order charges the test suite's fake Stripe on loopback, as in
  # make bench: the figure is our side of a card order, not Stripe's latency.
  rm -f "$out/fakestripe.url"
  "$bindir/fakestripe" >"$out/fakestripe.url" 2>"$out/fakestripe-$tag.log" &
  fpid=$!
  for _ in $(seq 1 50); do [ -s "$out/fakestripe.url" ] && break; sleep 0.1; done
  local stripe_base
  stripe_base=$(head -1 "$out/fakestripe.url")
  DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_METRICS_ADDR=off ALMONER_LOG_FORMAT=text \
    ALMONER_STRIPE_API_BASE=$stripe_base "$bin" serve >"$out/server-$tag.log" 2>&1 &
  pid=$!
  local tenant= tid key base contact fund item
  for _ in $(seq 1 100); do
    tenant=$("$bin" admin tenant create --name Bench --slug "writes-$RANDOM$RANDOM" --features api-access:enabled,payment-processor:enabled \
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
  contact=$(post /contacts '{"contactType":"Individual","firstName":"Bench","lastName":"Donor","emails":[{"emailAddress":"bench@example.org","emailType":"Personal","isPrimary":true}]}' | id_of)
  fund=$(post /funds '{"name":"General","isTaxDeductible":true}' | id_of)
  # The donors orders are spread over (scripts/lib/spread-contacts.sh).
  local lo hi
  read -r lo hi < <(spread_contacts "$url" "$tid" "$ncontacts")
  [ -n "$hi" ] || exit 1
  local spread="{{random:$lo:$hi}}"
  local order='{"contactId":'"$spread"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  local card='{"contactId":'"$spread"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Card","amount":25.00,"paymentToken":"pm_card_visa"}]}'
  local itemorder='{"contactId":'"$spread"',"items":[{"itemId":"'"$item"'","quantity":1}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  local hot='{"contactId":'"$contact"',"donations":[{"fundId":"'"$fund"'","amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}'
  local contactbody='{"contactType":"Individual","firstName":"Load","lastName":"Donor{{n}}","emails":[{"emailAddress":"load{{n}}@example.org","emailType":"Personal","isPrimary":true}]}'
  # Warm every path and give the fresh tables statistics, as make bench does.
  local body
  for body in "$order" "$card" "$itemorder" "$hot"; do
    "$bindir/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" -body "$body" >/dev/null || true
  done
  "$bindir/loadgen" -name warm -c "$CLIENTS" -d 2s -warmup 0s -method POST -status 201 -url "$base/contacts" -H "X-Api-Key: $key" \
    -body '{"contactType":"Individual","firstName":"Warm","lastName":"Donor{{n}}","emails":[{"emailAddress":"warm{{n}}@example.org","emailType":"Personal","isPrimary":true}]}' >/dev/null || true
  psql "$url" -qc "VACUUM ANALYZE" >/dev/null
  local batch
  batch=$(psql "$url" -Atc "SELECT id FROM orders.batches WHERE tenant_id = '$tid' AND state = 'Open' ORDER BY created_at DESC LIMIT 1")
  local name
  for name in create-contact create-order create-order-card floor-donation create-order-item floor-item create-order-hot floor-donation-hot; do
    psql "$url" -qc CHECKPOINT >/dev/null
    local spid=
    if [ "${BENCH_PGSTAT:-0}" = 1 ]; then
      (sleep 2; sample "$name-$tag") &
      spid=$!
    fi
    case $name in
    create-contact) timed "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/contacts" -H "X-Api-Key: $key" \
      -body "$contactbody" >"$out/$name-$tag.json" ;;
    create-order) timed "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
      -body "$order" >"$out/$name-$tag.json" ;;
    create-order-card) timed "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
      -body "$card" >"$out/$name-$tag.json" ;;
    create-order-item) timed "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
      -body "$itemorder" >"$out/$name-$tag.json" ;;
    create-order-hot) timed "$bindir/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" -method POST -status 201 -url "$base/orders" -H "X-Api-Key: $key" \
      -body "$hot" >"$out/$name-$tag.json" ;;
    floor-*)
      # An order's floor: its own statements replayed by pgbench on the same
      # database, same clients, each transaction's latency logged.
      # Each transaction draws its contact from contact_lo..contact_hi: the
      # spread contacts, or the hot one alone.
      local logs=$out/$name-$tag.log.d script=${name%-hot} clo=$lo chi=$hi
      [ "$name" = "$script" ] || clo=$contact chi=$contact
      rm -rf "$logs" && mkdir -p "$logs"
      timed pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "${DURATION%s}" -f "scripts/bench-orders-$script.sql" --log --log-prefix="$logs/tx" \
        -D tid="$tid" -D fund="$fund" -D item="$item" -D contact_lo="$clo" -D contact_hi="$chi" -D batch="$batch" "$url" >"$out/$name-$tag.txt" 2>&1 || true
      ;;
    esac
    [ -z "$spid" ] || wait "$spid"
  done
  kill -TERM "$pid" "$fpid" 2>/dev/null || true
  wait "$pid" "$fpid" 2>/dev/null || true
  pid= fpid=
  echo "round $tag done ($(uptime | sed 's/.*load average/load average/'))" >&2
}

for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
  for b in ${BENCH_WRITES_BINS:-$bindir/almoner}; do
    one "$b" "$round"
  done
done

python3 - "$out" "${tags[@]}" <<'PY'
import glob, json, math, os, re, sys
out, tags = sys.argv[1], sys.argv[2:]

def load(name, tag):
    return json.load(open(os.path.join(out, f"{name}-{tag}.json")))

def floor(name, tag):
    """tps from pgbench's summary, p50 and p99 (ms) from its per-transaction
    log (third field: the transaction's latency in microseconds)."""
    txt = open(os.path.join(out, f"{name}-{tag}.txt")).read()
    m = re.search(r"^tps = ([0-9.]+)", txt, re.M)
    tps = float(m.group(1)) if m else math.nan
    lat = []
    for f in glob.glob(os.path.join(out, f"{name}-{tag}.log.d", "tx*")):
        for line in open(f):
            p = line.split()
            if len(p) >= 3 and p[2].isdigit():
                lat.append(int(p[2]) / 1000)
    lat.sort()
    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else math.nan
    return tps, pct(0.50), pct(0.99)

def client_cpu(name, tag, n):
    """The load generator's or pgbench's CPU (µs) per request or transaction:
    on two shared cores it is taken from the server and PostgreSQL."""
    try:
        u, st = map(float, open(os.path.join(out, f"{name}-{tag}.cpu")).read().split()[-2:])
    except (OSError, ValueError):
        return math.nan
    return (u + st) / n * 1e6 if n else math.nan

def sent(r):
    """Requests loadgen sent, its warm-up (2 s) included, at the measured rate."""
    return r["rps"] * (r["seconds"] + 2)

def processed(name, tag):
    m = re.search(r"^number of transactions actually processed: ([0-9]+)", open(os.path.join(out, f"{name}-{tag}.txt")).read(), re.M)
    return int(m.group(1)) if m else 0

def rate(r):
    s = f"{r['rps']:,.0f}/s ({r['p50Ms']:.1f} / {r['p99Ms']:.1f})"
    return s + (f", {r['errors']} errors" if r.get("errors") else "")

print("| binary-round | create contact req/s (p50 / p99 ms) | create donation order req/s (p50 / p99 ms) | contact ÷ order | order floor tps (pgbench) | order ÷ floor |")
print("|---|---|---|---|---|---|")
for tag in tags:
    c, o = load("create-contact", tag), load("create-order", tag)
    tps = floor("floor-donation", tag)[0]
    print(f"| {tag} | {rate(c)} | {rate(o)} | {c['rps'] / o['rps']:.2f} | {tps:,.0f} | {o['rps'] / tps:.2f} |")
print()
print("| binary-round | order | req/s (p50 / p99 ms) | floor tps (p50 / p99 ms) | order ÷ floor | card ÷ cash | client CPU µs: loadgen / pgbench |")
print("|---|---|---|---|---|---|---|")
for tag in tags:
    cash, card, item, hot = (load(n, tag) for n in ("create-order", "create-order-card", "create-order-item", "create-order-hot"))
    dt, d50, d99 = floor("floor-donation", tag)
    it, i50, i99 = floor("floor-item", tag)
    ht, h50, h99 = floor("floor-donation-hot", tag)
    def cpu(load, r, floor):
        return f"{client_cpu(load, tag, sent(r)):.0f} / {client_cpu(floor, tag, processed(floor, tag)):.0f}"
    print(f"| {tag} | cash donation | {rate(cash)} | {dt:,.0f} ({d50:.1f} / {d99:.1f}) | {cash['rps'] / dt:.2f} | | {cpu('create-order', cash, 'floor-donation')} |")
    print(f"| {tag} | card donation | {rate(card)} | — | — | {card['rps'] / cash['rps']:.2f} | {client_cpu('create-order-card', tag, sent(card)):.0f} / — |")
    print(f"| {tag} | cash item | {rate(item)} | {it:,.0f} ({i50:.1f} / {i99:.1f}) | {item['rps'] / it:.2f} | | {cpu('create-order-item', item, 'floor-item')} |")
    print(f"| {tag} | cash donation, one contact | {rate(hot)} | {ht:,.0f} ({h50:.1f} / {h99:.1f}) | {hot['rps'] / ht:.2f} | | {cpu('create-order-hot', hot, 'floor-donation-hot')} |")
PY

#!/usr/bin/env bash
# Fulfillment at scale, for make bench (scripts/bench.sh passes the
# PostgreSQL server URL as $1), each in its own process on a fresh
# database:
#   - the packing slips of 2,000 shipments (three lines each) in one PDF,
#     read through the inventory views and rendered as
#     POST …/shipments/packing-slips does, under /usr/bin/time -v for the
#     process's real peak RSS (seeding included);
#   - one ship-bulk call of 1,000 rows against the inventory store.
# Targets (issue 33): slips under 10 s and 128 MB, bulk ship under 2 s.
# docs/performance.md records the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: scripts/bench-fulfillment.sh <postgres server url>}
out=bin/bench
mkdir -p "$out"
export ALMONER_TEST_DATABASE_URL=$server
(cd services/reports && go test -c -o ../../bin/slips.test ./fulfillment/)
(cd services/inventory && go test -c -o ../../bin/shipbulk.test ./fulfillment/)

echo "== packing slips: 2,000 shipments in one PDF"
/usr/bin/time -v -o "$out/slips-time.txt" ./bin/slips.test -test.run '^$' -test.bench 'PackingSlips$' -test.benchtime 1x >"$out/slips-run.txt"
line=$(grep -E '^Benchmark' "$out/slips-run.txt")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/slips-time.txt")
echo "$line $rss peak-rss-kB" | tee "$out/slips.txt"

echo "== ship-bulk: 1,000 rows in one call"
./bin/shipbulk.test -test.run '^$' -test.bench 'ShipBulk$' -test.benchtime 1x | grep -E '^Benchmark' | tee "$out/shipbulk.txt"

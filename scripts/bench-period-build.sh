#!/usr/bin/env bash
# A tenant's calendar change against its gifts' commits (issue 34,
# docs/cohorts.md "A calendar change is built in steps"):
#   scripts/bench-period-build.sh <database URL> <zone> <fiscal year start> <steps|one>
#
# On a database loaded by BenchmarkCohorts (ALMONER_COHORTS_BENCH=1000000),
# changes the calendar of the tenant with the most donors either as the
# housekeeping does (orders.start_giving_calendar, then
# orders.build_giving_periods steps sized as stepContacts sizes them, each
# its own transaction, 100 ms target) or in one transaction
# (orders.set_giving_calendar), while pgbench takes the tenant's giving lock
# shared, as each gift's commit does, from 2 clients. Prints the build's
# time, its steps, and the lock waits the "gifts" saw (pgbench's per
# transaction log).
set -euo pipefail
usage='usage: scripts/bench-period-build.sh <database URL> <zone> <fiscal year start> <steps|one>'
url=${1:?$usage}
zone=${2:?$usage}
fy=${3:?$usage}
mode=${4:?$usage}
tenant=$(psql "$url" -Atc "SELECT tenant_id FROM orders.contact_giving GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
work=$(mktemp -d)
trap 'kill $pg 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/lock.sql" <<SQL
BEGIN;
SELECT orders.giving_rolling_lock('$tenant', false);
COMMIT;
SQL
(cd "$work" && exec pgbench "$url" -n -c 2 -T 36000 -f "$work/lock.sql" -l >"$work/pgbench.out" 2>&1) &
pg=$!
sleep 2
start=$(date +%s.%N)
if [ "$mode" = one ]; then
  psql "$url" -Atqc "SELECT orders.set_giving_calendar('$tenant', '$zone', $fy::smallint)" >/dev/null
else
  psql "$url" -Atqc "SELECT orders.start_giving_calendar('$tenant', '$zone', $fy::smallint)" >/dev/null
  # A DO block may commit between steps (PostgreSQL 11+): each step is
  # its own transaction, timed with its commit.
  psql "$url" -X -q -c "DO \$\$
DECLARE n int := 200; t0 timestamptz; ms float; done bool := false;
BEGIN
  WHILE NOT done LOOP
    t0 := clock_timestamp();
    done := orders.build_giving_periods('$tenant', n);
    COMMIT;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    RAISE NOTICE 'step % %', n, round(ms::numeric, 1);
    n := greatest(100, least(5000, least(2 * n, (n * 100 / greatest(ms, 1))::int)));
  END LOOP;
END \$\$" 2>&1 | awk '/step/ {print $3, $4}' >"$work/steps.txt"
fi
end=$(date +%s.%N)
sleep 1
kill "$pg" 2>/dev/null || true
wait "$pg" 2>/dev/null || true
echo "mode $mode: $(echo "$end - $start" | bc) s"
if [ "$mode" != one ]; then
  awk '{t += $1} END {print "steps", NR, "contacts", t}' "$work/steps.txt"
  awk '{print $2}' "$work/steps.txt" | sort -n | awk '{a[NR] = $1} END {print "step ms: p50", a[int(NR * 0.5)], "p99", a[int(NR * 0.99)], "max", a[NR]}'
fi
cat "$work"/pgbench_log.* | awk '{print $3 / 1000}' | sort -n |
  awk '{a[NR] = $1} END {print "lock waits ms: n", NR, "p50", a[int(NR * 0.5)], "p99", a[int(NR * 0.99)], "p99.9", a[int(NR * 0.999)], "max", a[NR]}'

#!/usr/bin/env bash
# Year-end tax statement run at scale, for make bench (scripts/bench.sh
# passes the PostgreSQL server URL as $1): one replica makes the 2025
# statements of a tenant with TAXRUNS_BENCH_GIFTS (1,000,000) gifts from
# TAXRUNS_BENCH_DONORS (100,000) donors, in its own process under
# /usr/bin/time -v for the process's real peak RSS. Targets (issue 18):
# under 5 minutes and 256 MB. docs/performance.md records the figures.
#
# The tenant is loaded once (server-side INSERT … SELECT, the reports
# bench's seed) into TAXRUNS_BENCH_DB (almoner_bench_taxruns) and kept;
# every run starts from no issued statement. Drop the database to load it
# again.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: scripts/bench-taxruns.sh <postgres server url>}
out=bin/bench
mkdir -p "$out"
(cd services/reports && go test -c -o ../../bin/reports.test .)
export ALMONER_TEST_DATABASE_URL=$server
export ALMONER_TAXRUN_BENCH=${TAXRUNS_BENCH_GIFTS:-1000000}
export ALMONER_TAXRUN_BENCH_DONORS=${TAXRUNS_BENCH_DONORS:-100000}
export ALMONER_REPORTS_BENCH_DB=${TAXRUNS_BENCH_DB:-almoner_bench_taxruns}

echo "== tax statement run: $ALMONER_TAXRUN_BENCH_DONORS donors, $ALMONER_TAXRUN_BENCH gifts (loading the tenant the first time)"
/usr/bin/time -v -o "$out/taxruns-time.txt" ./bin/reports.test -test.run '^$' -test.bench 'TaxStatementRun$' -test.benchtime 1x \
  -test.timeout 60m -test.v >"$out/taxruns-run.txt"
grep -E 'loaded|already' "$out/taxruns-run.txt" || true
line=$(grep -E '^Benchmark' "$out/taxruns-run.txt")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/taxruns-time.txt")
echo "$line $rss peak-rss-kB" | tee "$out/taxruns.txt"

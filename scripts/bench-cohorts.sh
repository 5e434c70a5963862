#!/usr/bin/env bash
# Cohorts at scale, for make bench (scripts/bench.sh passes the PostgreSQL
# server URL as $1): on a tenant of 1,000,000 contacts and 3,000,000 gifts
# (COHORTS_BENCH_CONTACTS), every built-in cohort's count, lybunt's first
# page of members (with its count), a 10-condition custom cohort's count
# and the tenant's dashboard for a month, a quarter and a fiscal year
# (its members column: the period's donors), each run COHORTS_BENCH_RUNS
# (20) times; p50 and p99 per scenario. Target (issue 34): p99 < 300 ms.
# docs/performance.md records them.
#
# The tenant is loaded once (server-side INSERT … SELECT with the
# triggers off, then orders.rebuild_contact_giving and its calendar copy,
# New York and July, with its period rows) into the database
# COHORTS_BENCH_DB (almoner_bench_cohorts) and kept; drop it to load again.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: scripts/bench-cohorts.sh <postgres server url>}
contacts=${COHORTS_BENCH_CONTACTS:-1000000}
runs=${COHORTS_BENCH_RUNS:-20}
export ALMONER_TEST_DATABASE_URL=$server ALMONER_COHORTS_BENCH=$contacts
export ALMONER_REPORTS_BENCH_DB=${COHORTS_BENCH_DB:-almoner_bench_cohorts}
echo "| scenario | members | p50 ms | p99 ms |"
echo "|---|---|---|---|"
(cd services/reports && go test -run '^$' -bench Cohorts -benchtime "${runs}x" -timeout 60m .) |
  awk '/^BenchmarkCohorts\// { name=$1; sub(/^BenchmarkCohorts\//, "", name); sub(/-[0-9]+$/, "", name);
    for (i = 1; i <= NF; i++) { if ($i == "members") m=$(i-1); if ($i == "p50-ms") p50=$(i-1); if ($i == "p99-ms") p99=$(i-1) }
    printf "| %s | %s | %s | %s |\n", name, m, p50, p99 }'

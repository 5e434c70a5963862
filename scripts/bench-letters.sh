#!/usr/bin/env bash
# Letter runs at scale, for make bench (scripts/bench.sh passes the
# PostgreSQL server URL as $1), each in its own process under
# /usr/bin/time -v for the real peak RSS: a PDF run of LETTERS_BENCH_PDF
# (10,000) gifts and its merged PDF (targets, issue 32: under 60 s and
# 256 MB), then an email run of LETTERS_BENCH_EMAIL (1,000) gifts sent at
# ALMONER_MAIL_RATE (10) a second. docs/performance.md records the figures.
#
# The tenants are loaded once (the reports bench's seed) into
# LETTERS_BENCH_DB (almoner_bench_letters) and kept; every run starts with
# every gift pending.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:?usage: scripts/bench-letters.sh <postgres server url>}
out=bin/bench
mkdir -p "$out"
(cd services/reports && go test -c -o ../../bin/reports.test .)
export ALMONER_TEST_DATABASE_URL=$server
export ALMONER_REPORTS_BENCH_DB=${LETTERS_BENCH_DB:-almoner_bench_letters}
export ALMONER_MAIL_RATE=${ALMONER_MAIL_RATE:-10}

bench() { # channel gifts
  echo "== letter run: $1, $2 gifts"
  ALMONER_LETTER_BENCH_CHANNEL=$1 ALMONER_LETTER_BENCH=$2 /usr/bin/time -v -o "$out/letters-$1-time.txt" \
    ./bin/reports.test -test.run '^$' -test.bench 'LetterRun$' -test.benchtime 1x -test.timeout 30m -test.v >"$out/letters-$1-run.txt"
  line=$(grep -E '^Benchmark' "$out/letters-$1-run.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/letters-$1-time.txt")
  echo "$line $rss peak-rss-kB" | tee "$out/letters-$1.txt"
}
bench pdf "${LETTERS_BENCH_PDF:-10000}"
bench email "${LETTERS_BENCH_EMAIL:-1000}"

#!/usr/bin/env bash
# make bench-replica (issue 36, docs/scaling.md "Figures"): the standby's
# share of the reads that may lag under mixed load. Each run makes its own
# private primary and `pg_basebackup -R` standby (pkg/testpg), starts the
# one-process server with ALMONER_READ_DATABASE_URL, and runs donation
# orders (REPLICA_BENCH_WRITERS clients) beside donations-by-fund report
# runs (REPLICA_BENCH_READERS) for REPLICA_BENCH_DURATION; the second run
# pauses the standby's replay for REPLICA_BENCH_PAUSE a third of the way in
# (beyond the 5 s lag bound), so reads must move to the primary and back
# with no failed request (a failed request fails the run).
# REPLICA_BENCH_ROUNDS (3) alternates the two. Results: bin/bench/replica/.
set -euo pipefail
cd "$(dirname "$0")/.."
bindir=$(mkdir -p "${REPLICA_BENCH_BIN:-bin}" && cd "${REPLICA_BENCH_BIN:-bin}" && pwd)
[ -x "$bindir/almoner" ] || { echo "bench-replica: no $bindir/almoner: run make build (or make bench-replica)" >&2; exit 1; }
(cd cmd/almoner && go build -o "$bindir/loadgen" ./tools/loadgen && go build -o "$bindir/replicabench" ./tools/replicabench)
out=$bindir/bench/replica
mkdir -p "$out"
dur=${REPLICA_BENCH_DURATION:-60s}
writers=${REPLICA_BENCH_WRITERS:-8}
readers=${REPLICA_BENCH_READERS:-2}
pause=${REPLICA_BENCH_PAUSE:-15s}
echo "bench-replica: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
{
echo "| writers | readers | replay paused | orders/s / p99 ms / errors | report runs/s / p99 ms / errors | report statements on the standby | on the primary | standby's share | lagging reads standby / primary (share), server's count | replay lag median / max s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "${REPLICA_BENCH_ROUNDS:-3}"); do
  for p in 0s "$pause"; do
    "$bindir/replicabench" -almoner "$bindir/almoner" -loadgen "$bindir/loadgen" -out "$out/round-$r-pause-$p" \
      -d "$dur" -writers "$writers" -readers "$readers" -pause "$p" >"$out/round-$r-pause-$p.txt"
    tail -1 "$out/round-$r-pause-$p.txt"
  done
done
} | tee "$out/table.md"

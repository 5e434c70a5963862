#!/usr/bin/env bash
# make test: every module's tests against a real PostgreSQL (found or
# started as make run finds it: scripts/find-postgres.sh).
#
# Three passes:
#   1. every module's packages with -race, in one go test run (go.work
#      makes them all main modules, so go test overlaps one package's
#      build with another's tests), cmd/almoner/e2e first: the longest;
#   2. cmd/almoner/e2e again in split mode (every service its own
#      process-like App), without -race: the same handlers, stores and
#      runners pass 1 has just race-checked, wired differently (their own
#      pools, runners and gRPC clients), and what it checks is that
#      wiring;
#   3. the tests that only run without -race: the webhook dispatcher
#      crash test (two dispatcher processes, 10,000 events) and the
#      notification memory test.
# Passes 2 and 3 mostly wait (on PostgreSQL, child processes and
# runners' polls) while pass 1 is CPU-bound under the race detector, so
# they run beside it when the server has room for both passes'
# connections (max_connections >= TEST_CONCURRENT_MIN_CONNECTIONS, 200:
# pass 1 peaks near 60, pass 2 near 50 with three split clusters), and
# after it otherwise (PostgreSQL's default is 100). Their output is
# printed once pass 1 has finished. TEST_SEQUENTIAL=1 forces the order.
set -euo pipefail
cd "$(dirname "$0")/.."
server=$(./scripts/find-postgres.sh --server)
export ALMONER_TEST_DATABASE_URL=$server
e2e_parallel=${E2E_PARALLEL:-4}
split_parallel=${E2E_SPLIT_PARALLEL:-3}
read -r -a patterns <<<"${TEST_PATTERNS:?the Makefile sets TEST_PATTERNS}"

later() {
  (cd cmd/almoner && ALMONER_E2E_SPLIT=1 go test -count=1 -timeout 12m -parallel "$split_parallel" ./e2e/) || return 1
  echo "== tests without -race: the webhook dispatcher crash test (two dispatcher processes, 10,000 events), notification memory"
  (cd cmd/almoner && go test -count=1 -timeout 5m -run 'TestWebhookDispatchNoLossUnderCrashes|TestNotificationBodiesMemory' -v ./e2e/ |
    grep -E '^(=== RUN|--- |ok|FAIL|PASS)|webhooks_dispatch|notifications_memory')
}

maxconn=$(psql "$server" -Atc 'SHOW max_connections' 2>/dev/null || echo 0)
beside=0
if [ -z "${TEST_SEQUENTIAL:-}" ] && [ "$maxconn" -ge "${TEST_CONCURRENT_MIN_CONNECTIONS:-200}" ]; then
  beside=1
fi

log=$(mktemp /tmp/almoner-test-later.XXXXXX)
later_pid=
cleanup() {
  [ -n "$later_pid" ] && kill -- "-$later_pid" 2>/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT

if [ "$beside" = 1 ]; then
  echo "== split-mode e2e (without -race) and the crash and memory tests, beside the race pass (max_connections $maxconn); their output follows it"
  set -m # the background pass gets its own process group, killed whole on failure
  { if later >"$log" 2>&1; then echo rc=0; else echo rc=1; fi >>"$log"; } &
  later_pid=$!
  set +m
fi

echo "== every module's packages with -race, in one go test run (cmd/almoner/e2e first, the longest)"
go test -race -count=1 -timeout 12m -parallel "$e2e_parallel" "${patterns[@]}"

echo "== cmd/almoner/e2e in split mode (every service its own process-like App), without -race"
if [ "$beside" = 1 ]; then
  wait "$later_pid" || true
  later_pid=
  sed '$d' "$log"
  [ "$(tail -n1 "$log")" = "rc=0" ] || exit 1
else
  later
fi

#!/usr/bin/env bash
# Runs the e2e tests (cmd/almoner/e2e) with every cluster's services behind
# PgBouncer in transaction mode: DATABASE_URL names the pooler,
# ALMONER_DATABASE_POOL_MODE=transaction, ALMONER_DIRECT_DATABASE_URL the
# server (docs/scaling.md). The tests start one PgBouncer per test binary
# on a free port (pkg/testpg); this script installs Debian's pgbouncer
# when it is missing. RUN narrows the tests to a go test -run pattern
# (CI runs a subset, see .ci/run); ARGS are more go test flags.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  echo "test-pgbouncer: installing pgbouncer"
  if [ "$(id -u)" != 0 ]; then
    echo "test-pgbouncer: pgbouncer is missing and we are not root: apt-get install pgbouncer" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
fi
# Debian's package starts a pgbouncer service on 6432; ours need none of
# it and take free ports of their own.
server=$(./scripts/find-postgres.sh --server)
run=${RUN:-.}
echo "test-pgbouncer: $(/usr/sbin/pgbouncer --version 2>/dev/null | head -1 || pgbouncer --version | head -1), tests: $run"
cd cmd/almoner
ALMONER_TEST_DATABASE_URL="$server" ALMONER_E2E_PGBOUNCER=1 \
  go test -count=1 -timeout 15m -parallel "${E2E_PARALLEL:-4}" -run "$run" ${ARGS:-} ./e2e/

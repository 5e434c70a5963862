#!/usr/bin/env bash
# make run-split: every service as its own process on its own gRPC port,
# plus the gateway, configured only by environment variables — the way
# Kubernetes runs them (deploy/k8s). Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .data/split
if [ -z "${DATABASE_URL:-}" ]; then
  server=$(./scripts/find-postgres.sh --server)
  psql "$server" -tAc "SELECT 1 FROM pg_database WHERE datname = 'almoner'" | grep -q 1 \
    || psql "$server" -qc "CREATE DATABASE almoner" >/dev/null
  DATABASE_URL=$(echo "$server" | sed -E 's#/postgres(\?|$)#/almoner\1#')
fi
export DATABASE_URL ALMONER_ENVIRONMENT=${ALMONER_ENVIRONMENT:-sandbox} ALMONER_LOG_FORMAT=${ALMONER_LOG_FORMAT:-text}
# auth and webhooks seal secrets with this key: every process needs the
# same one, kept across runs in the data folder as make run keeps it.
ALMONER_WEBHOOK_SECRET_KEY=${ALMONER_WEBHOOK_SECRET_KEY:-$(./scripts/secret-key.sh)}
export ALMONER_WEBHOOK_SECRET_KEY
# Every process signs its calls and verifies the calls it gets with this
# key; admin commands find it in the data folder (.data/internal-key).
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(./scripts/internal-key.sh)}
export ALMONER_INTERNAL_KEY
# Without an SMTP server, every email (invitations, …) is written to
# the data folder as an .eml file and its path logged (docs/mail.md).
if [ -z "${ALMONER_SMTP_URL:-}" ]; then
  export ALMONER_MAIL_DIR=${ALMONER_MAIL_DIR:-${ALMONER_DATA_DIR:-.data}/mail}
fi
./bin/almoner migrate

# One service a line, the services it needs after its name.
services=$(./bin/almoner services | cut -d' ' -f1)
port=9101
metrics=9501
for s in $services; do
  export "ALMONER_$(echo "$s" | tr a-z A-Z)_ADDR=127.0.0.1:$port"
  port=$((port + 1))
done
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' INT TERM EXIT
for s in $services; do
  var="ALMONER_$(echo "$s" | tr a-z A-Z)_ADDR"
  ALMONER_GRPC_ADDR=${!var} ALMONER_METRICS_ADDR=127.0.0.1:$metrics ALMONER_MIGRATE=false \
    ./bin/almoner serve --target="$s" >".data/split/$s.log" 2>&1 &
  pids+=($!)
  echo "split: $s on ${!var} (metrics 127.0.0.1:$metrics, log .data/split/$s.log)"
  metrics=$((metrics + 1))
done
# The gateway's /metrics is on its own listener too, never on the API port.
ALMONER_HTTP_ADDR=${ALMONER_HTTP_ADDR:-127.0.0.1:8080} ALMONER_METRICS_ADDR=127.0.0.1:$metrics \
  ./bin/almoner serve --target=gateway >".data/split/gateway.log" 2>&1 &
pids+=($!)
echo "split: gateway on ${ALMONER_HTTP_ADDR:-127.0.0.1:8080} (metrics 127.0.0.1:$metrics, log .data/split/gateway.log)"
echo "split: create a tenant with: ./bin/almoner admin tenant create --name Demo --auth-addr=\$ALMONER_AUTH_ADDR"
wait -n "${pids[@]}"
echo "split: a process exited; stopping the others" >&2

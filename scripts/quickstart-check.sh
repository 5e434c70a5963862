#!/usr/bin/env bash
# Follows the README's "Quick start" as a newcomer would and fails when a
# command fails or an outcome the README promises is missing: a first gift
# (201, orderNumber 1, totalAmount 100.00), make run restarted for
# webhooks with the demo tenant kept, and a second gift whose
# order.created the example receiver prints after checking its signature.
#
# The commands are read from README.md itself, never copied here. Only
# what a script cannot share with a developer's machine is changed in the
# extracted text: the server's address (http://localhost:8080), the
# receiver's port (8443) and the .data/ folder become free ports and a
# temporary folder, and `make run` (a foreground server) is started in the
# background with the same environment; the admin commands are pointed at
# its gRPC port with ALMONER_GRPC_ADDR. A fresh database
# almoner_quickstart_<pid> on the server find-postgres.sh finds; dropped
# afterwards. Run by cmd/almoner/e2e/quickstart_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v openssl >/dev/null || { echo "quickstart-check: openssl is required" >&2; exit 2; }
command -v curl >/dev/null || { echo "quickstart-check: curl is required" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port=$(free_port)
grpc_port=$(free_port)
rx_port=$(free_port)
data=$(mktemp -d /tmp/almoner-quickstart.XXXXXX)
server=$(./scripts/find-postgres.sh --server)
db=almoner_quickstart_$$
psql "$server" -qc "CREATE DATABASE $db" >/dev/null
log=$data/session.log
pid=
stop_server() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
cleanup() {
  stop_server
  [ -n "${rx_pid:-}" ] && kill "$rx_pid" 2>/dev/null || true
  psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$data"
}
trap cleanup EXIT
fail() { echo "quickstart-check: $*" >&2; echo "--- session log" >&2; cat "$log" >&2 || true; exit 1; }

# The README's blocks of one section, one file each: $data/block<N>.sh.
blocks() {
  sed -n "/^## $1/,/^## /p" README.md | awk -v dir="$data" '
    /^```sh/ { n++; out = dir "/block" n ".sh"; f = 1; next }
    /^```/   { f = 0 }
    f        { print > out }'
}
substitute() { # the machine-specific parts named in the header
  sed -i -e "s#http://localhost:8080#http://127.0.0.1:$http_port#g" \
    -e "s#127.0.0.1:8443#127.0.0.1:$rx_port#g" -e "s#\.data/#$data/#g" "$1"
}

# make run, in the background, with the environment the README puts before it.
starts=0
make_run() { # env assignments
  starts=$((starts + 1))
  local out=$data/server-$starts.log
  env "$@" DATABASE_URL="$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")" \
    ALMONER_HTTP_ADDR=127.0.0.1:$http_port ALMONER_GRPC_ADDR=127.0.0.1:$grpc_port ALMONER_DATA_DIR="$data" \
    ./scripts/run.sh >"$out" 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do
    grep -q 'Almoner is running' "$out" 2>/dev/null && return
    kill -0 "$pid" 2>/dev/null || fail "make run exited: $(tail -5 "$out")"
    sleep 0.2
  done
  fail "make run did not start"
}

make build >/dev/null
blocks "Quick start"
[ -s "$data/block4.sh" ] || fail "README's Quick start has fewer than 4 sh blocks"
for b in "$data"/block*.sh; do substitute "$b"; done
grep -q '^ALMONER_WEBHOOK_ALLOW_PRIVATE=true ALMONER_WEBHOOK_CA_FILE=.* ALMONER_WEBHOOK_TICK=2s make run$' "$data/block2.sh" ||
  fail "block 2 no longer starts make run with the webhook settings; update this check"

make_run
TID=$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$data/demo.json")
KEY=$(sed -n 's/.*"apiKey":"\([^"]*\)".*/\1/p' "$data/demo.json")
export TID KEY
# The admin commands find the server at ALMONER_GRPC_ADDR (make run's default
# 127.0.0.1:9090 otherwise).
export ALMONER_GRPC_ADDR=127.0.0.1:$grpc_port
API=http://127.0.0.1:$http_port/api/tenants/$TID

# Block 1: a fund, a donor and the first gift.
: >"$log"
source "$data/block1.sh" >>"$log" 2>&1 || fail "block 1 failed"
grep -q '"orderNumber":1,' "$log" && grep -q '"totalAmount":100.00' "$log" || fail "the first gift is not order 1 of 100.00"
[ -n "${FUND:-}" ] && [ -n "${CONTACT:-}" ] || fail "block 1 did not set FUND and CONTACT"

# Block 2: the certificate, then make run again with the README's settings.
stop_server
grep -v 'make run$' "$data/block2.sh" >"$data/block2-cert.sh"
source "$data/block2-cert.sh" >>"$log" 2>&1 || fail "block 2 (certificate) failed"
settings=$(sed -n 's/ make run$//p' "$data/block2.sh")
# shellcheck disable=SC2086
make_run $settings
[ "$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$data/demo.json")" = "$TID" ] || fail "the demo tenant changed on restart"

# Block 3: feature, endpoint, receiver in the background (on its port).
export ADDR=127.0.0.1:$rx_port
set -m
source "$data/block3.sh" >>"$log" 2>&1 || fail "block 3 failed"
rx_pid=$!
for _ in $(seq 1 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
grep -q 'listening on' "$log" || fail "the receiver did not say it listens"
[[ ${SECRET:-} == whsec_* ]] || fail "no whsec_ secret from the endpoint's creation"

# Block 4: the second gift; its order.created must reach the receiver.
source "$data/block4.sh" >>"$log" 2>&1 || fail "block 4 failed"
grep -qx '201' "$log" || fail "the second gift did not answer 201"
for _ in $(seq 1 100); do grep -q 'order.created: Order ' "$log" && break; sleep 0.2; done
grep -q 'order.created: Order ' "$log" || fail "the receiver printed no verified order.created within 20 s"
echo "quickstart-check: README quick start followed end to end: first gift order 1, demo tenant kept across the restart, order.created verified by the example receiver"

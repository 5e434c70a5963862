#!/usr/bin/env bash
# Staff sessions beside API keys (issue 30):
#   scripts/bench-staff.sh <postgres server URL>
#
# One `almoner serve` on a fresh database with the production argon2id
# costs; BENCH_CLIENTS (16) keep-alive clients for BENCH_DURATION (10s)
# after a 2 s warm-up each: GET api-keys with the key (validation cached),
# the same GET with a session cookie (resolved by the auth service on every
# request), and POST /api/auth/sign-in (one argon2id hash each); then
# POST /api/auth/mfa/verify (mfabench: BENCH_MFA_USERS (64) users with
# TOTP on, four pending sessions each, every one verified once by
# BENCH_CLIENTS clients: the mfa-verify limit allows 5 attempts per user
# per 15 minutes, so a verify cannot be replayed in a timed loop). Prints
# the rates and the session ÷ key ratio. Binaries and raw results go to
# BENCH_BIN (bin): bin/bench/staff/.
set -euo pipefail
cd "$(dirname "$0")/.."
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')}
export ALMONER_INTERNAL_KEY
server=${1:?usage: scripts/bench-staff.sh <postgres server URL>}
DURATION=${BENCH_DURATION:-10s}
CLIENTS=${BENCH_CLIENTS:-16}
MFA_USERS=${BENCH_MFA_USERS:-64}
bin=$(mkdir -p "${BENCH_BIN:-bin}" && cd "${BENCH_BIN:-bin}" && pwd)
out=$bin/bench/staff
mkdir -p "$out"
# go build is incremental: always building never benchmarks a stale binary.
(cd cmd/almoner && go build -o "$bin/almoner" . && go build -o "$bin/loadgen" ./tools/loadgen && go build -o "$bin/mfabench" ./tools/mfabench)

db=almoner_bench_staff
url=$(echo "$server" | sed -E "s#/postgres(\?|$)#/$db\1#")
http=127.0.0.1:18380
grpc=127.0.0.1:19390
pid=
stop() { if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap stop EXIT
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
psql "$server" -qc "CREATE DATABASE $db" >/dev/null

DATABASE_URL=$url ALMONER_HTTP_ADDR=$http ALMONER_GRPC_ADDR=$grpc ALMONER_LOG_FORMAT=text \
  ALMONER_MAIL_DIR="$out/mail" "$bin/almoner" serve >"$out/server.log" 2>&1 &
pid=$!
admin() { "$bin/almoner" admin "$@" --auth-addr=$grpc; }
for _ in $(seq 1 100); do
  tenant=$(admin tenant create --name Bench --slug "bench-$RANDOM$RANDOM" 2>/dev/null) && break
  sleep 0.2
done
tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
key=$(admin key create --tenant "$tid" --name bench --scopes all | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
email=bench-owner@example.org
password="bench owner password 1"
token=$(admin user invite --tenant "$tid" --email "$email" --role owner | sed -n 's/.*"invitationToken":"\([^"]*\)".*/\1/p')
cookie=$(curl -sf -D - -o /dev/null -H 'Content-Type: application/json' \
  -d '{"token":"'"$token"'","password":"'"$password"'","firstName":"Bench","lastName":"Owner"}' \
  "http://$http/api/auth/invitations/accept" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(almoner_session=[^;]*\);.*/\1/p')
base=http://$http/api/tenants/$tid

run() { # name, then loadgen flags
  local name=$1; shift
  psql "$url" -qc CHECKPOINT >/dev/null
  GOGC=400 "$bin/loadgen" -name "$name" -c "$CLIENTS" -d "$DURATION" "$@" >"$out/$name.json"
}
run keys -url "$base/api-keys" -H "X-Api-Key: $key"
run session -url "$base/api-keys" -H "Cookie: $cookie"
run sign-in -method POST -url "http://$http/api/auth/sign-in" -body '{"email":"'"$email"'","password":"'"$password"'"}'
for i in $(seq 1 "$MFA_USERS"); do
  admin user invite --tenant "$tid" --email "bench-mfa-$i@example.org" --role viewer | sed -n 's/.*"invitationToken":"\([^"]*\)".*/\1/p'
done >"$out/mfa-tokens"
psql "$url" -qc CHECKPOINT >/dev/null
"$bin/mfabench" -base "http://$http" -c "$CLIENTS" <"$out/mfa-tokens" >"$out/mfa-verify.json"
stop
psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1

python3 - "$out" <<'PY'
import json, os, sys
r = lambda n: json.load(open(os.path.join(sys.argv[1], n + ".json")))
k, s, i, m = r("keys"), r("session"), r("sign-in"), r("mfa-verify")
print("| measure | requests/s | p50 ms | p99 ms | ratio |")
print("|---|---|---|---|---|")
print(f"| GET api-keys, API key | {k['rps']:,.0f} | {k['p50Ms']:.2f} | {k['p99Ms']:.2f} | |")
print(f"| GET api-keys, session cookie | {s['rps']:,.0f} | {s['p50Ms']:.2f} | {s['p99Ms']:.2f} | {s['rps']/k['rps']:.2f} of the key's (target >= 0.9) |")
print(f"| POST sign-in (argon2id 19 MiB, t=2) | {i['rps']:,.0f} | {i['p50Ms']:.2f} | {i['p99Ms']:.2f} | |")
print(f"| POST mfa/verify ({m['requests']} verifies: TOTP and recovery codes) | {m['rps']:,.0f} | {m['p50Ms']:.2f} | {m['p99Ms']:.2f} | |")
PY

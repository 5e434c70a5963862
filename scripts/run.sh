#!/usr/bin/env bash
# make run: find or start PostgreSQL, create the almoner database, serve
# everything in one process, and on first run create a sandbox tenant "Demo"
# with a key holding every scope (kept in .data/demo.json; ALMONER_DATA_DIR
# names another folder, as scripts/quickstart-check.sh does), the key
# that seals webhook and processor secrets (.data/secret-key), so that a
# restart can still sign for the endpoints registered before it, and the
# internal key that signs the calls between the server's parts and the
# admin commands' calls to it (.data/internal-key). The demo
# tenant has payment-processor:enabled, so that Card and ACH payments reach
# the sandbox's test processor. While the server runs, .data/run.json holds
# its addresses: `almoner admin` in another shell finds it there, and
# signs with the internal key it finds beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ALMONER_DATA_DIR:-.data}
mkdir -p "$data"
if [ -z "${DATABASE_URL:-}" ]; then
  server=$(./scripts/find-postgres.sh --server)
  psql "$server" -tAc "SELECT 1 FROM pg_database WHERE datname = 'almoner'" | grep -q 1 \
    || psql "$server" -qc "CREATE DATABASE almoner" >/dev/null
  DATABASE_URL=$(echo "$server" | sed -E 's#/postgres(\?|$)#/almoner\1#')
  export DATABASE_URL
fi
# Loopback by default: the demo key holds every scope, so the server is
# not offered to the network unless asked (ALMONER_HTTP_ADDR=:8080).
export ALMONER_HTTP_ADDR=${ALMONER_HTTP_ADDR:-127.0.0.1:8080}
export ALMONER_GRPC_ADDR=${ALMONER_GRPC_ADDR:-127.0.0.1:9090}
export ALMONER_ENVIRONMENT=${ALMONER_ENVIRONMENT:-sandbox}
export ALMONER_LOG_FORMAT=${ALMONER_LOG_FORMAT:-text}
ALMONER_WEBHOOK_SECRET_KEY=${ALMONER_WEBHOOK_SECRET_KEY:-$(./scripts/secret-key.sh)}
export ALMONER_WEBHOOK_SECRET_KEY
ALMONER_INTERNAL_KEY=${ALMONER_INTERNAL_KEY:-$(./scripts/internal-key.sh)}
export ALMONER_INTERNAL_KEY
# Without an SMTP server, every email (invitations, …) is written to
# the data folder as an .eml file and its path logged (docs/mail.md).
if [ -z "${ALMONER_SMTP_URL:-}" ]; then
  export ALMONER_MAIL_DIR=${ALMONER_MAIL_DIR:-${ALMONER_DATA_DIR:-.data}/mail}
fi
# Links in email point at this server unless told otherwise.
export ALMONER_PUBLIC_URL=${ALMONER_PUBLIC_URL:-http://localhost:${ALMONER_HTTP_ADDR##*:}}

run_file=$data/run.json
./bin/almoner serve &
pid=$!
# The run file goes with the server, unless a later make run on the same
# data folder has written its own since.
forget() { grep -qs "\"pid\":$pid}" "$run_file" && rm -f "$run_file"; true; }
trap 'kill -TERM $pid 2>/dev/null; wait $pid; forget' INT TERM

# Ready once the auth service answers (a made-up tenant is "not found").
for _ in $(seq 1 150); do
  out=$(./bin/almoner admin tenant get --tenant 00000000-0000-0000-0000-000000000000 2>&1 || true)
  case "$out" in *"not found"*) break ;; esac
  kill -0 $pid 2>/dev/null || { echo "run: the server exited" >&2; exit 1; }
  sleep 0.2
done

demo=$data/demo.json
if [ -s "$demo" ] && ./bin/almoner admin tenant get --tenant "$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$demo")" >/dev/null 2>&1; then
  :
else
  tenant=$(./bin/almoner admin tenant create --name Demo --slug "demo-$(date +%s)" --features api-access:enabled,payment-processor:enabled)
  tid=$(echo "$tenant" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
  key=$(./bin/almoner admin key create --tenant "$tid" --name demo --scopes all)
  plain=$(echo "$key" | sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p')
  printf '{"tenantId":"%s","apiKey":"%s"}\n' "$tid" "$plain" > "$demo"
  chmod 600 "$demo"
fi
tid=$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$demo")
plain=$(sed -n 's/.*"apiKey":"\([^"]*\)".*/\1/p' "$demo")
# The demo tenant starts with the processor feature on every time: one made
# before make run set it, or turned off since, gets it back. Only a missing
# flag is written (a change waits out the key cache window).
./bin/almoner admin tenant get --tenant "$tid" | grep -q '"payment-processor:enabled"' ||
  ./bin/almoner admin tenant feature --tenant "$tid" --set payment-processor:enabled=true >/dev/null
printf '{"grpcAddr":"%s","httpAddr":"%s","pid":%d}\n' "$ALMONER_GRPC_ADDR" "$ALMONER_HTTP_ADDR" "$pid" >"$run_file"
port=${ALMONER_HTTP_ADDR##*:}

# A demo owner who signs in with a password (docs/auth.md), kept in
# demo-owner.json: invited as an operator would, and accepted through the
# API as the invitation's link would be.
owner_file=$data/demo-owner.json
owner_email=owner@demo.example
if ! grep -qs '"tenantId":"'"$tid"'"' "$owner_file"; then
  owner_password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  # An owner already a member (demo-owner.json deleted) keeps its password.
  if invite=$(./bin/almoner admin user invite --tenant "$tid" --email "$owner_email" --role owner 2>/dev/null); then
    token=$(echo "$invite" | sed -n 's/.*"invitationToken":"\([^"]*\)".*/\1/p')
    curl -sf -o /dev/null -H 'Content-Type: application/json' \
      -d '{"token":"'"$token"'","password":"'"$owner_password"'","firstName":"Demo","lastName":"Owner"}' \
      "http://127.0.0.1:$port/api/auth/invitations/accept"
    printf '{"tenantId":"%s","email":"%s","password":"%s"}\n' "$tid" "$owner_email" "$owner_password" > "$owner_file"
    chmod 600 "$owner_file"
  else
    echo "run: $owner_email is a member of the demo tenant already and $owner_file is gone: its password is unknown" >&2
  fi
fi
owner_password=$(sed -n 's/.*"password":"\([^"]*\)".*/\1/p' "$owner_file" 2>/dev/null || true)
cat <<MSG

  Almoner is running (sandbox). Demo tenant: $tid

  Staff console: http://localhost:$port/console/
    sign in as $owner_email / $owner_password
  API key (every scope; also in $demo):
    $plain

  Demo owner (signs in with a session cookie; also in $owner_file):
    $owner_email / $owner_password

  API reference: http://localhost:$port/docs   OpenAPI 3.1: http://localhost:$port/openapi.json
  Listening on $ALMONER_HTTP_ADDR (ALMONER_HTTP_ADDR=:$port make run to listen on every interface).

  Try:
    curl -s -w '\n%{http_code}\n' -H "X-Api-Key: $plain" http://localhost:$port/api/tenants/$tid/api-keys
    curl -s -w '\n%{http_code}\n' -c /tmp/almoner.cookies -H 'Content-Type: application/json' \\
      -d '{"email":"$owner_email","password":"$owner_password"}' http://localhost:$port/api/auth/sign-in
    curl -s -w '\n%{http_code}\n' -b /tmp/almoner.cookies http://localhost:$port/api/tenants/$tid/users

  ./bin/almoner admin … in another shell finds this server through $run_file
  and its internal key in $data/internal-key
  (or set ALMONER_AUTH_ADDR=$ALMONER_GRPC_ADDR and ALMONER_INTERNAL_KEY).

MSG
status=0
wait $pid || status=$?
forget
exit $status

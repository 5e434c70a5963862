#!/usr/bin/env bash
# Follows the README's "Five minutes with curl" and "Quick start" as a
# newcomer would and fails when a command fails or prints something other
# than the README says: every command the README follows with a comment
# `# <status>` must print exactly that status (on the last line, as curl
# -w '\n%{http_code}\n' prints it), and one followed by
# `# <status> <body>` must print that body and then the status (… stands for anything, members
# it leaves out may come between those it shows, spaces are layout). On top of that: a key created, refused and revoked; a first
# gift (orderNumber 1, totalAmount 100.00); the README's card gift and
# declined cards with the test tokens (tok_decline, pm_card_chargeDeclined); a Card payment of the demo
# tenant taken by the sandbox's test processor, also after make run
# restarted with the feature turned off meanwhile; make run restarted for
# webhooks with the demo tenant kept; the admin commands run as from a fresh
# shell, finding the server through make run's data folder, and naming what
# to set when the server recorded there has stopped; a second gift whose
# order.created the example receiver prints after checking its signature;
# and every variable make run reads in the README's configuration table.
#
# The commands are read from README.md itself, never copied here. Only
# what a script cannot share with a developer's machine is changed in the
# extracted text: the server's address (http://localhost:8080), the
# receiver's port (8443) and the README's .data folder become free ports
# and a folder that does not exist yet, and the placeholders (<tenant id>,
# <api key>, <plainTextKey>, <id>) are filled in as a reader would. make run
# keeps its data in another temporary folder (ALMONER_DATA_DIR), so the
# README's commands must work with the data folder elsewhere, and `make run`
# (a foreground server) is started in the background with the same
# environment. A fresh database almoner_quickstart_<pid> on the server
# find-postgres.sh finds; dropped afterwards. Run by
# cmd/almoner/e2e/quickstart_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v openssl >/dev/null || { echo "quickstart-check: openssl is required" >&2; exit 2; }
command -v curl >/dev/null || { echo "quickstart-check: curl is required" >&2; exit 2; }

# The server's ports, the receiver's and a stopped make run's are held for
# the whole check by a process that binds them (SO_REUSEADDR) and never
# listens: the kernel gives them to no other socket, so no listener or
# connection of the tests running beside this check takes one before make
# run listens on it (as one could take a port that was merely free a moment
# before), while the server and the receiver (Go listeners set
# SO_REUSEADDR) can listen on them, again after a restart; and nothing
# answers on the stopped one. The holder exits with this script (its input
# closes).
coproc PORTS { python3 -c '
import socket, sys
held = []
for _ in range(4):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(*(s.getsockname()[1] for s in held), flush=True)
sys.stdin.read()
'; }
ports_pid=$PORTS_PID
read -r http_port grpc_port rx_port stale_port <&"${PORTS[0]}"
data=$(mktemp -d /tmp/almoner-quickstart.XXXXXX)
# The README's own .data: a folder that does not exist, apart from make run's.
readme_data=$data/readme-data
server=$(./scripts/find-postgres.sh --server)
db=almoner_quickstart_$$
psql "$server" -qc "CREATE DATABASE $db" >/dev/null
log=$data/session.log
: >"$log"
pid=
stop_server() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
cleanup() {
  stop_server
  [ -n "${rx_pid:-}" ] && kill "$rx_pid" 2>/dev/null || true
  psql "$server" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$data"
  kill "$ports_pid" 2>/dev/null || true
}
trap cleanup EXIT
# fd 3 is the script's stderr, also inside a README block whose output goes
# to the session log.
exec 3>&2
fail() { echo "quickstart-check: $*" >&3; echo "--- session log" >&3; cat "$log" >&3 || true; exit 1; }

# Every variable make run reads is in the README's configuration table.
table=$(sed -n '/^## Configuration/,/^## /p' README.md)
for v in $(grep -ho '\${ALMONER_[A-Z_]*' scripts/run.sh scripts/secret-key.sh scripts/internal-key.sh | sed 's/^..//' | sort -u); do
  grep -q "^| \`$v\`" <<<"$table" || fail "README's configuration table lacks $v, which make run reads"
done

# The README's blocks of one section, one file each: $data/<prefix><N>.sh.
blocks() { # section prefix
  sed -n "/^## $1/,/^## /p" README.md | awk -v dir="$data" -v prefix="$2" '
    /^```sh/ { n++; out = dir "/" prefix n ".sh"; f = 1; next }
    /^```/   { f = 0 }
    f        { print > out }'
}
substitute() { # the machine-specific parts named in the header
  sed -i -E -e "s#http://localhost:8080#http://127.0.0.1:$http_port#g" \
    -e "s#127\.0\.0\.1:8443#127.0.0.1:$rx_port#g" -e "s#(^|[^A-Za-z0-9_./-])\.data\b#\1$readme_data#g" "$1"
}
fill() { # file placeholder value: <placeholder> in the block becomes value
  sed -i "s#<$2>#$3#g" "$data/$1.sh"
}

# instrument.py rewrites a block so that each command the README follows
# with an expected output writes that output to a file and has it checked
# (__expect) right after it runs; other commands run as written.
cat >"$data/instrument.py" <<'PY'
import re, subprocess, sys
src, dst = sys.argv[1:3]
lines = open(src).read().split("\n")
status = re.compile(r"^\d{3}(,.*|\s+[\[{].*)?$")
def complete(text):
    if text.rstrip().endswith("\\"):
        return False
    return subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0
out, n, i = [], 0, 0
while i < len(lines):
    line = lines[i]
    if not line.strip() or line.lstrip().startswith("#"):
        out.append(line); i += 1; continue
    j = i
    while not complete("\n".join(lines[i:j + 1])) and j + 1 < len(lines):
        j += 1
    text = "\n".join(lines[i:j + 1])
    expect = None
    m = re.search(r"\s{2,}#\s*(.*)$", lines[j])
    if m:
        expect = m.group(1)
    elif j + 1 < len(lines) and lines[j + 1].startswith("# "):
        expect = lines[j + 1][2:]
    if expect is not None and status.match(expect):
        n += 1
        open(f"{dst}.expect.{n}", "w").write(expect + "\n")
        open(f"{dst}.cmd.{n}", "w").write(text + "\n")
        out.append("{ " + text + "\n} >" + f"'{dst}.out.{n}'" + f" 2>&1; __expect '{dst}' {n}")
    else:
        out.append(text)
    i = j + 1
open(dst, "w").write("\n".join(out))
PY
# match.py compares one command's output with its README comment.
cat >"$data/match.py" <<'PY'
import re, sys
expect = open(sys.argv[1]).read().strip()
got = open(sys.argv[2]).read().strip()
code, rest = expect[:3], expect[3:]
# Every command prints its status on a line of its own after the body
# (curl -w '\n%{http_code}\n'), as the README shows readers to.
lines = got.split("\n")
if lines[-1].strip() != code:
    sys.exit(1)
got = "\n".join(lines[:-1]).strip()
if not rest.strip() or rest.startswith(","):
    ok = got == ""  # a bare status: the command prints just it
else:
    want = re.sub(r"\s+", "", rest)
    flat = re.sub(r"\s+", "", got)
    # Members the README leaves out may come between those it shows.
    parts = [re.escape(p).replace(',"', ',(?:.*,)?"') for p in want.split("…")]
    ok = re.fullmatch(".*".join(parts), flat, re.S) is not None
    m = re.search(r'"status":(\d{3})', flat)
    ok = ok and (m is None or m.group(1) == code)
sys.exit(0 if ok else 1)
PY
__expect() { # block index
  cat "$1.out.$2" >>"$log"
  python3 "$data/match.py" "$1.expect.$2" "$1.out.$2" ||
    fail "README command
$(cat "$1.cmd.$2")
printed
$(cat "$1.out.$2")
but its comment says: $(cat "$1.expect.$2")"
}
run_block() { # name: instrument after the placeholders are filled, then run
  local f=$data/$1.sh left
  left=$(grep -oE '<[a-zA-Z][a-zA-Z ]*>' "$f" | sort -u | tr '\n' ' ' || true)
  [ -z "$left" ] || fail "README block $1 has placeholders this check does not fill: $left"
  python3 "$data/instrument.py" "$f" "$f.run"
  # shellcheck disable=SC1090
  source "$f.run" >>"$log" 2>&1 || fail "README block $1 failed"
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

# A Card payment of the demo tenant: the sandbox's test processor takes it
# (a 403 "Feature not enabled: payment-processor:enabled" otherwise).
card_gift() {
  local r
  r=$(curl -s -w ' %{http_code}' -X POST "$API/orders" -H "X-Api-Key: $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: quickstart-card-$1" \
    -d '{"contactId": '"$CONTACT"', "donations": [{"fundId": "'"$FUND"'", "amount": 10.00}],
         "payments": [{"paymentMethod": "Card", "amount": 10.00, "paymentToken": "tok_visa"}]}')
  [[ $r == *' 201' ]] || fail "a Card payment of the demo tenant ($1) was refused: $r"
}

make build >/dev/null
blocks "Five minutes with curl" five
blocks "Quick start" block
blocks "Charge a card in the sandbox" card
[ -s "$data/five4.sh" ] || fail "README's Five minutes with curl has fewer than 4 sh blocks"
[ -s "$data/block4.sh" ] || fail "README's Quick start has fewer than 4 sh blocks"
[ -s "$data/card1.sh" ] || fail "README's Charge a card in the sandbox has no sh block"
for b in "$data"/five*.sh "$data"/block*.sh "$data"/card*.sh; do substitute "$b"; done
grep -q '^ALMONER_WEBHOOK_ALLOW_PRIVATE=true ALMONER_WEBHOOK_CA_FILE=.* ALMONER_WEBHOOK_TICK=2s make run$' "$data/block2.sh" ||
  fail "block 2 no longer starts make run with the webhook settings; update this check"

# The admin commands below run as from a fresh shell: no address or key set,
# only make run's data folder (elsewhere, as the README says to export
# then), where they find the server's address and its internal key.
unset ALMONER_GRPC_ADDR ALMONER_AUTH_ADDR ALMONER_INTERNAL_KEY
export ALMONER_DATA_DIR=$data

make_run
[ -s "$data/run.json" ] || fail "make run wrote no $data/run.json"
[ "$(stat -c %a "$data/internal-key" 2>/dev/null)" = 600 ] || fail "make run kept no internal key readable by its owner only in $data/internal-key"

# Five minutes with curl: the tenant id and key make run printed, a key
# created, refused, listed and revoked.
fill five1 "tenant id" "$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$data/demo.json")"
fill five1 "api key" "$(sed -n 's/.*"apiKey":"\([^"]*\)".*/\1/p' "$data/demo.json")"
run_block five1
[ "${API:-}" = "http://127.0.0.1:$http_port/api/tenants/$TID" ] || fail "block five1 did not set TID, KEY and API"
run_block five2
created=$(cat "$data/five2.sh.run.out.1" 2>/dev/null) || fail "block five2 has no command with its 201 response"
fill five3 plainTextKey "$(sed -n 's/.*"plainTextKey":"\([^"]*\)".*/\1/p' <<<"$created")"
fill five4 id "$(sed -n 's/^{"id":"\([^"]*\)".*/\1/p' <<<"$created")"
run_block five3
run_block five4

# Quick start block 1: a fund, a donor and the first gift.
run_block block1
grep -q '"orderNumber":1,' "$log" && grep -q '"totalAmount":100.00' "$log" || fail "the first gift is not order 1 of 100.00"
[ -n "${FUND:-}" ] && [ -n "${CONTACT:-}" ] || fail "block 1 did not set FUND and CONTACT"
card_gift first-run
# Charge a card in the sandbox: the test processor's tokens as the README
# shows them (a Captured card gift, a declined one refused).
run_block card1
grep -q '"processorReference":"test_ch_' "$log" || fail "the README's card gift has no test processor reference"

# make run turns the processor feature back on for the demo tenant.
./bin/almoner admin tenant feature --tenant "$TID" --set payment-processor:enabled=false >>"$log" 2>&1 ||
  fail "admin tenant feature did not find make run's server through $data/run.json"

# Block 2: the certificate (into a .data that does not exist yet), then
# make run again with the README's settings.
stop_server
[ ! -e "$data/run.json" ] || fail "make run left $data/run.json behind when it stopped"
grep -v 'make run$' "$data/block2.sh" >"$data/block2cert.sh"
run_block block2cert
[ -s "$readme_data/rx.key" ] && [ -s "$readme_data/rx.pem" ] || fail "block 2 made no certificate"
settings=$(sed -n 's/ make run$//p' "$data/block2.sh")
# shellcheck disable=SC2086
make_run $settings
[ "$(sed -n 's/.*"tenantId":"\([^"]*\)".*/\1/p' "$data/demo.json")" = "$TID" ] || fail "the demo tenant changed on restart"
card_gift restarted

# An admin command pointed at a make run that has stopped says what to set.
mkdir -p "$data/stale"
printf '{"grpcAddr":"127.0.0.1:%s"}\n' "$stale_port" >"$data/stale/run.json"
if out=$(ALMONER_DATA_DIR=$data/stale ./bin/almoner admin tenant get --tenant "$TID" 2>&1); then
  fail "admin reached a server at an address where none runs: $out"
fi
[[ $out == *"recorded in $data/stale/run.json by make run"*ALMONER_AUTH_ADDR* ]] ||
  fail "admin's message for a stopped make run does not say what to set: $out"

# Block 3: feature, endpoint, receiver in the background (on its port).
export ADDR=127.0.0.1:$rx_port
set -m
run_block block3
rx_pid=$!
for _ in $(seq 1 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
grep -q 'listening on' "$log" || fail "the receiver did not say it listens"
[[ ${SECRET:-} == whsec_* ]] || fail "no whsec_ secret from the endpoint's creation"

# Block 4: the second gift; its order.created must reach the receiver.
run_block block4
grep -qx '201' "$log" || fail "the second gift did not answer 201"
for _ in $(seq 1 100); do grep -q 'order.created: Order ' "$log" && break; sleep 0.2; done
grep -q 'order.created: Order ' "$log" || fail "the receiver printed no verified order.created within 20 s"
echo "quickstart-check: README followed end to end: a key created, refused and revoked as the comments say; first gift order 1; Card payments taken for the demo tenant; admin found make run and its internal key through its data folder; demo tenant kept across the restart; order.created verified by the example receiver"

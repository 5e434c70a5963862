#!/usr/bin/env bash
# Prints the sealing key of the local data folder (ALMONER_DATA_DIR, else
# .data), making it on first use: 32 random bytes in base64 in
# <data>/secret-key, readable by you only. make run and make run-split pass
# it as ALMONER_WEBHOOK_SECRET_KEY, which seals webhook signing secrets and
# payment processor keys at rest: with the same key on every start, what one
# run sealed the next can open (a process without a key makes a random one
# that dies with it).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ALMONER_DATA_DIR:-.data}
key=$data/secret-key
if [ ! -s "$key" ]; then
  mkdir -p "$data"
  # Written aside and renamed: two first runs at once keep one whole key.
  (umask 077 && head -c 32 /dev/urandom | base64 >"$key.$$")
  mv -n "$key.$$" "$key" || true
  rm -f "$key.$$"
fi
cat "$key"

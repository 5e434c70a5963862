#!/usr/bin/env bash
# Prints the internal key of the local data folder (ALMONER_DATA_DIR, else
# .data), making it on first use: 32 random bytes in hex in
# <data>/internal-key, readable by you only. make run and make run-split
# pass it as ALMONER_INTERNAL_KEY, which signs every call between Almoner's
# processes (docs/internal-auth.md); `almoner admin` in another shell reads
# the same file to sign its calls to the server make run started.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ALMONER_DATA_DIR:-.data}
key=$data/internal-key
if [ ! -s "$key" ]; then
  mkdir -p "$data"
  # Written aside and renamed: two first runs at once keep one whole key.
  (umask 077 && head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n' >"$key.$$" && echo >>"$key.$$")
  mv -n "$key.$$" "$key" || true
  rm -f "$key.$$"
fi
cat "$key"

#!/usr/bin/env bash
# buf breaking against a git revision, offline: the revision's protos are
# checked out into a temporary folder beside the same third-party protos.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD~1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" proto buf.yaml | tar -x -C "$tmp"
cp -r third_party "$tmp/"
buf breaking --against "$tmp"

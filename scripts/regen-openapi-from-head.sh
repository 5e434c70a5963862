#!/usr/bin/env bash
# Regenerates gateway/openapi/almoner.swagger.json from the protos as
# committed at HEAD (in a temporary clone), so the committed document
# matches what `make generate` produces on a clean checkout even while
# uncommitted proto work sits in this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q . "$tmp/repo"
mkdir -p "$tmp/repo/bin" && cp bin/buf bin/protoc-gen-* "$tmp/repo/bin/"
(cd "$tmp/repo" && ./scripts/third-party-protos.sh && PATH=$PWD/bin:$PATH buf generate --path proto/almoner >/dev/null)
cp "$tmp/repo/gateway/openapi/almoner.swagger.json" gateway/openapi/almoner.swagger.json

#!/usr/bin/env bash
# Regenerates gateway/openapi/openapi.json from the protos as
# committed at HEAD (in a temporary clone), so the committed document
# matches what `make generate` produces on a clean checkout even while
# uncommitted proto work sits in this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q . "$tmp/repo"
mkdir -p "$tmp/repo/bin" && cp bin/buf bin/protoc-gen-* "$tmp/repo/bin/"
(cd "$tmp/repo" && ./scripts/third-party-protos.sh && PATH=$PWD/bin:$PATH buf generate --path proto/almoner >/dev/null &&
  mkdir -p gateway/openapi && cd gateway &&
  go run ./cmd/openapigen -swagger ../third_party/openapiv2/almoner.swagger.json -out openapi/openapi.json)
cp "$tmp/repo/gateway/openapi/openapi.json" gateway/openapi/openapi.json

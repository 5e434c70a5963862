#!/usr/bin/env bash
# Regenerates the Go code of one service's protos only (no OpenAPI), for
# working on one service while others change theirs: scripts/generate-go.sh inventory
# `make generate` regenerates everything, the OpenAPI document included.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/bin:$PATH
[ -d third_party/proto ] || ./scripts/third-party-protos.sh
svc=${1:?usage: scripts/generate-go.sh <service>}
buf generate --path "proto/almoner/$svc" --template '{
  "version": "v2",
  "plugins": [
    {"local": "bin/protoc-gen-go", "out": "pkg/api", "opt": ["paths=source_relative"]},
    {"local": "bin/protoc-gen-go-grpc", "out": "pkg/api", "opt": ["paths=source_relative"]},
    {"local": "bin/protoc-gen-grpc-gateway", "out": "pkg/api", "opt": ["paths=source_relative"]}
  ]
}'

#!/usr/bin/env bash
# Copies the third-party .proto files that our protos import into the
# git-ignored third_party/proto, from pinned Go module versions in the module
# cache. The Buf Schema Registry is never contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
GW1=github.com/grpc-ecosystem/grpc-gateway@v1.16.0
GW2=github.com/grpc-ecosystem/grpc-gateway/v2@v2.32.0
moddir() { GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
gw1=$(moddir "$GW1")
gw2=$(moddir "$GW2")
out=third_party/proto
rm -rf "$out"
mkdir -p "$out/google/api" "$out/protoc-gen-openapiv2/options"
cp "$gw1/third_party/googleapis/google/api/annotations.proto" "$gw1/third_party/googleapis/google/api/http.proto" "$out/google/api/"
cp "$gw1/third_party/googleapis/google/api/httpbody.proto" "$out/google/api/"
# field_behavior.proto (REQUIRED / OUTPUT_ONLY, read by
# gateway/internal/openapigen) ships in no pinned module: a copy is kept.
cp scripts/third-party-protos/field_behavior.proto "$out/google/api/"
cp "$gw2/protoc-gen-openapiv2/options/annotations.proto" "$gw2/protoc-gen-openapiv2/options/openapiv2.proto" "$out/protoc-gen-openapiv2/options/"
chmod -R u+w "$out"

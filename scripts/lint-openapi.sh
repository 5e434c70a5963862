#!/usr/bin/env bash
# Lints the published OpenAPI document with Redocly CLI, the version pinned
# in tools/redocly/package-lock.json, under the rules of redocly.yaml (the
# recommended set). Errors fail; warnings are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "lint-openapi: npm is required (.ci/run installs nodejs and npm)"; exit 1; }
if [ ! -x tools/redocly/node_modules/.bin/redocly ]; then
  (cd tools/redocly && npm ci --no-audit --no-fund --silent)
fi
# The version notice goes to stderr and is noise here.
tools/redocly/node_modules/.bin/redocly lint --config redocly.yaml --format=stylish 2> >(grep -v '║\|╔\|╚' >&2)

#!/usr/bin/env bash
# The API reference at /docs is Scalar's @scalar/api-reference, the version
# pinned in tools/scalar/package-lock.json. Its standalone bundle (one file,
# no CDN, no chunks to fetch) is committed in
# gateway/docsite/scalar and embedded in the binary, so a fresh clone
# builds and tests without npm.
#
#   scripts/docs-viewer.sh update   copy the pinned bundle into gateway/docsite/scalar
#   scripts/docs-viewer.sh check    fail unless the committed bundle is the pinned one (make verify)
#
# Either way the package is fetched with `npm pack` (one tarball, not the
# 270 packages an install would bring) and its sha512 must be the lockfile's
# integrity before a byte of it is used.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
command -v npm >/dev/null || { echo "docs-viewer: npm is required (.ci/run installs nodejs and npm)"; exit 1; }

lock=tools/scalar/package-lock.json
read -r version integrity < <(node -e '
  const p = require("./'"$lock"'").packages["node_modules/@scalar/api-reference"];
  console.log(p.version, p.integrity);')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@scalar/api-reference@$version" >/dev/null 2>&1)
tarball=$(ls "$work"/*.tgz)
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$integrity" ]; then
  echo "docs-viewer: @scalar/api-reference@$version is $got, the lockfile says $integrity"; exit 1
fi
tar -xzf "$tarball" -C "$work" package/dist/browser/standalone.js
dest=gateway/docsite/scalar
case "$mode" in
  update)
    mkdir -p "$dest"
    cp "$work/package/dist/browser/standalone.js" "$dest/standalone.js"
    # The package ships no licence file; package.json says MIT.
    printf '@scalar/api-reference %s (MIT, https://github.com/scalar/scalar/blob/main/LICENSE), dist/browser/standalone.js\n' "$version" > "$dest/VERSION"
    echo "docs-viewer: gateway/docsite/scalar is @scalar/api-reference $version"
    ;;
  check)
    if ! cmp -s "$work/package/dist/browser/standalone.js" "$dest/standalone.js" ||
       ! grep -qF "@scalar/api-reference $version " "$dest/VERSION" 2>/dev/null; then
      echo "docs-viewer: gateway/docsite/scalar is not @scalar/api-reference $version (tools/scalar): run scripts/docs-viewer.sh update and commit"
      exit 1
    fi
    echo "docs-viewer: gateway/docsite/scalar is @scalar/api-reference $version"
    ;;
  *) echo "usage: $0 update|check"; exit 2 ;;
esac

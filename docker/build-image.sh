#!/usr/bin/env bash
# Build the runner image offline (CONTAINER-NOTES.md): a base image from this machine's own Node and the libraries
# it and better-sqlite3 link against (`docker import`), then the Pincer layer (legacy builder). Needs `npm run build`
# first. Usage: docker/build-image.sh [IMAGE]   (default pincer-runner; DOCKER_HOST is honoured)
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-pincer-runner}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

root=$work/root
node=$(readlink -f "$(command -v node)")
mkdir -p "$root/usr/local/bin" "$root/tmp" "$root/workspace"
cp "$node" "$root/usr/local/bin/node"
for binary in "$node" node_modules/better-sqlite3/build/Release/better_sqlite3.node; do
  for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
# Node's os.userInfo() (the CLI) needs the runner's uid in /etc/passwd; the host runs containers as its own uid.
mkdir -p "$root/etc"
{ echo "root:x:0:0:root:/tmp:/bin/sh"; [ "$(id -u)" = 0 ] || echo "pincer:x:$(id -u):$(id -g):pincer:/tmp:/bin/sh"; } > "$root/etc/passwd"
{ echo "root:x:0:"; [ "$(id -g)" = 0 ] || echo "pincer:x:$(id -g):"; } > "$root/etc/group"
tar -C "$root" -c . | docker import - pincer-node-base >/dev/null

ctx=$work/ctx
mkdir -p "$ctx/dist"
cp package.json docker/Dockerfile "$ctx/"
cp -a dist/src "$ctx/dist/src"
# production dependencies only (npm's own list), each copied with its path
npm ls --omit=dev --all --parseable 2>/dev/null | grep '/node_modules/' | while read -r dir; do
  rel=${dir#"$PWD"/}
  mkdir -p "$ctx/$(dirname "$rel")"
  [ -e "$ctx/$rel" ] || cp -a "$rel" "$ctx/$rel"
done
DOCKER_BUILDKIT=0 docker build -q -t "$image" "$ctx" >/dev/null 2>"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
echo "$image"

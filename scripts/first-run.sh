#!/usr/bin/env bash
# A new user's first minutes, measured on a clean clone of this repository's HEAD (in a temporary folder, removed
# after): how long `npm ci` takes (with the flags given, e.g. --omit=optional), how big node_modules is, and the time
# from `npm ci` finished to the `pincer chat` prompt under its banner, in a real terminal (tmux), on a fresh home.
# docs/performance.md ("Install and first chat") has the numbers.
#   scripts/first-run.sh                    # the whole lockfile
#   scripts/first-run.sh --omit=optional    # without the agent binaries
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pincer-first-run-XXXXXX")
sock="pincer-first-run-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

git clone -q "$src" "$work/pincer"
cd "$work/pincer"
echo "commit $(git rev-parse --short HEAD), node $(node --version), npm $(npm --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
started=$(now)
if ! npm ci "$@" >"$work/npm-ci.log" 2>&1; then
  tail -20 "$work/npm-ci.log" >&2
  echo "first-run: npm ci $* failed" >&2
  exit 1
fi
installed=$(now)
echo "npm ci $*: $(seconds "$started" "$installed") s, node_modules $(du -sm node_modules | cut -f1) MB"

# The chat as README step 1 runs it, in a 150×40 terminal, until it is ready for input: the terminal UI's status line
# (or the line REPL's prompt, with PINCER_CHAT_UI=plain).
home="$work/home"
tmux -L "$sock" -f /dev/null new-session -d -x 150 -y 40 "env PINCER_HOME='$home' node bin/pincer.js chat"
until tmux -L "$sock" capture-pane -p 2>/dev/null | grep -qE '^you>|^provider '; do
  if [ "$(awk -v a="$installed" -v b="$(now)" 'BEGIN { print (b - a > 60) }')" = 1 ]; then
    tmux -L "$sock" capture-pane -p >&2 || true
    echo "first-run: no chat prompt within 60 s" >&2
    exit 1
  fi
  sleep 0.02
done
prompted=$(now)
banner=$(tmux -L "$sock" capture-pane -p | head -1)
tmux -L "$sock" send-keys C-d
echo "npm ci finished → chat prompt: $(seconds "$installed" "$prompted") s ($banner)"

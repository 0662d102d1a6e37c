#!/usr/bin/env bash
# What `make test` needs before its tiers, side by side: the pinned binaries (their
# progress shown), our two images (logged to $ATOMIC_GANG_CACHE/logs/images.log, shown
# when they fail) and lint. On a cold machine the binaries take most of half an hour on
# 2 cores and leave gaps (module downloads, links) that the image build (a debootstrap,
# pip downloads) and lint fill; warm, each is a check of a second or two.
# Usage: hack/prepare-tests.sh   (BIN: the venv's bin, default .venv/bin)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${BIN:-.venv/bin}
CACHE=${ATOMIC_GANG_CACHE:-$HOME/.cache/atomic-gang}
mkdir -p "$CACHE/logs"
START=$(date +%s)
say() { printf '[prepare %4ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

hack/build-bins.sh &
bins=$!
"$BIN/python" -m atomic_gang_devstack.images >"$CACHE/logs/images.log" 2>&1 &
images=$!

failed=()
make --no-print-directory lint || failed+=(lint)
wait "$bins" || failed+=(binaries)
if wait "$images"; then
  say "images ready ($CACHE/logs/images.log)"
else
  cat "$CACHE/logs/images.log" >&2
  failed+=(images)
fi
if (( ${#failed[@]} > 0 )); then
  say "failed: ${failed[*]}"
  exit 1
fi
say "binaries, images and lint done"

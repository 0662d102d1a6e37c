#!/usr/bin/env bash
# Install, from Debian's packages, what the real node and the image builds need and
# Go does not build for us: runc, the CNI plugins (bridge, host-local, loopback),
# buildah (images without Docker), debootstrap (the local stand-in base image), a C
# compiler for the pause image and wrk (the load of bench/webhook.py). Only missing packages are installed; running it
# again is a no-op. Needs root (the real node needs root anyway).
# Usage: hack/install-node-deps.sh [--check]   (--check: exit 1 if anything is missing)
set -euo pipefail

PACKAGES=(runc containernetworking-plugins buildah debootstrap gcc libc6-dev iproute2 wrk)
# package -> a file it installs (what the stack runs)
declare -A PROBE=(
  [runc]=/usr/sbin/runc
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [buildah]=/usr/bin/buildah
  [debootstrap]=/usr/sbin/debootstrap
  [gcc]=/usr/bin/gcc
  [libc6-dev]=/usr/lib/x86_64-linux-gnu/libc.a
  [iproute2]=/usr/sbin/ip
  [wrk]=/usr/bin/wrk
)

missing=()
for p in "${PACKAGES[@]}"; do
  [[ -e ${PROBE[$p]} ]] || missing+=("$p")
done
if [[ ${#missing[@]} == 0 ]]; then
  echo "[install-node-deps] all present: ${PACKAGES[*]}" >&2
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "[install-node-deps] missing: ${missing[*]}" >&2
  exit 1
fi
if [[ $(id -u) != 0 ]]; then
  echo "[install-node-deps] missing ${missing[*]}; run as root (apt-get install)" >&2
  exit 1
fi

# One apt run at a time (apt takes its own lock, but fails instead of waiting).
exec 9>/run/atomic-gang-node-deps.lock
flock 9
echo "[install-node-deps] apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true  # a stale list still installs; a missing one fails below
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
for p in "${missing[@]}"; do
  [[ -e ${PROBE[$p]} ]] || { echo "[install-node-deps] $p installed but ${PROBE[$p]} is absent" >&2; exit 1; }
done
echo "[install-node-deps] done" >&2

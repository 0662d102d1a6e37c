#!/usr/bin/env bash
# make docker-build / docker-push: both images for a registry, with whichever builder is
# installed: `docker buildx` first, else buildah. IMG=<repo>:<tag> names the controller
# image; the webhook's is <repo>-webhook:<tag>. The base is the Dockerfiles' pinned
# python:3.11-slim digest (PYTHON_IMAGE=... overrides it). PLATFORMS=linux/amd64,linux/arm64
# builds a multi-arch index: buildx keeps it in its build cache (a multi-arch build cannot
# be loaded) and `push` builds it again from that cache with --push; buildah builds a
# manifest list and `push` pushes every image of it. buildah reads the usual containers
# configuration (CONTAINERS_STORAGE_CONF, BUILDAH_ISOLATION); TLS_VERIFY=false lets it push
# to a registry without TLS (a local test registry only).
# Usage: hack/docker-image.sh build|push <repo>:<tag>
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-} img=${2:-}
case $action in build|push) ;; *) echo "usage: $0 build|push <repo>:<tag>" >&2; exit 2 ;; esac
last=${img##*/}
if [[ -z $img || $last != *:* || ${img##*:} == "" ]]; then
  echo "make docker-$action: IMG=<repo>:<tag> is required, for example IMG=123456789012.dkr.ecr.us-east-1.amazonaws.com/atomic-gang-provisioner:v0.1.0 (got '${img}')" >&2
  exit 2
fi
repo=${img%:*} tag=${img##*:}
declare -A REF=([controller]="$repo:$tag" [webhook]="$repo-webhook:$tag")
build_args=()
[[ -n ${PYTHON_IMAGE:-} ]] && build_args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
push_args=()
[[ -n ${TLS_VERIFY:-} ]] && push_args+=("--tls-verify=$TLS_VERIFY")

if docker buildx version >/dev/null 2>&1; then
  builder=buildx
elif command -v buildah >/dev/null 2>&1; then
  builder=buildah
else
  echo "make docker-$action: no image builder found. Install Docker with the buildx plugin" \
       "(docker buildx version must work) or buildah; for a local cluster without a registry," \
       "'make images' builds both images with buildah on a local base." >&2
  exit 1
fi

for svc in controller webhook; do
  ref=${REF[$svc]}
  echo "[docker-image] $action $ref (Dockerfile.$svc, $builder)" >&2
  multi=${PLATFORMS:+multi}
  case $builder/$action/$multi in
    buildx/build/) docker buildx build "${build_args[@]}" -f "Dockerfile.$svc" -t "$ref" --load . ;;
    buildx/build/multi)
      docker buildx build --platform "$PLATFORMS" "${build_args[@]}" -f "Dockerfile.$svc" -t "$ref" . ;;
    buildx/push/) docker push "$ref" ;;
    buildx/push/multi)
      docker buildx build --platform "$PLATFORMS" "${build_args[@]}" -f "Dockerfile.$svc" -t "$ref" --push . ;;
    buildah/build/) buildah build "${build_args[@]}" -f "Dockerfile.$svc" -t "$ref" . ;;
    buildah/build/multi)
      buildah manifest rm "$ref" >/dev/null 2>&1 || true  # a list of an earlier build
      buildah build --platform "$PLATFORMS" --manifest "$ref" "${build_args[@]}" -f "Dockerfile.$svc" . ;;
    buildah/push/) buildah push "${push_args[@]}" "$ref" "docker://$ref" ;;
    buildah/push/multi) buildah manifest push --all "${push_args[@]}" "$ref" "docker://$ref" ;;
  esac
done

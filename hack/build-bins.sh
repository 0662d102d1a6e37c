#!/usr/bin/env bash
# Build the pinned upstream control-plane binaries from the Go module proxy and
# cache each one by version under $ATOMIC_GANG_CACHE/bin (default ~/.cache/atomic-gang).
# Only what is missing is rebuilt. Usage: hack/build-bins.sh [component...]
# Components: etcd kube kueue kwok helm cert-manager  (default: all)
# Also links the Kueue and kwok module sources (chart, CRDs, kwok stages) to
# $ATOMIC_GANG_CACHE/<name>-<version>-src. Concurrent runs are serialised by a lock.
# The pins below are read by hack/python/atomic_gang_devstack/bins.py too.
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
K8S_VERSION=${K8S_VERSION:-v1.36.3}
KUEUE_VERSION=${KUEUE_VERSION:-v0.17.0}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
# The last release whose controller and cainjector are in the root module (chart e2e only).
CERTMANAGER_VERSION=${CERTMANAGER_VERSION:-v1.11.5}

CACHE=${ATOMIC_GANG_CACHE:-$HOME/.cache/atomic-gang}
BIN=$CACHE/bin
SRC=$CACHE/src
mkdir -p "$BIN" "$SRC"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
START=$(date +%s)

log() { printf '[build-bins %4ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
have() { [[ -x "$BIN/$1" ]]; }

# One build at a time per cache (make test and make dev-up may both call us).
exec 9>"$CACHE/.build-bins.lock"
if ! flock -n 9; then
  log "another hack/build-bins.sh holds $CACHE/.build-bins.lock; waiting for it"
  flock 9
fi

# link_src NAME MODULE VERSION: $CACHE/NAME-VERSION-src -> the module's source in GOMODCACHE
link_src() {
  local dir
  dir=$(cd "$SRC" && go mod download -json "$2@$3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  ln -sfn "$dir" "$CACHE/$1-$3-src"
}

# wrapper MODDIR REQUIRE...: fresh wrapper module that requires the given module@versions
wrapper() {
  local dir=$1; shift
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && go mod init local/wrapper >/dev/null 2>&1)
  local req
  for req in "$@"; do (cd "$dir" && go mod edit -require="$req"); done
}

build_etcd() {
  local out=etcd-$ETCD_VERSION
  have "$out" && { log "etcd $ETCD_VERSION cached"; return; }
  log "building etcd $ETCD_VERSION (wrapper module)"
  local dir=$SRC/etcd-$ETCD_VERSION
  wrapper "$dir" "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  (cd "$dir" && go mod tidy -e >/dev/null 2>&1 || true
   cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
   go mod tidy && go build -trimpath -ldflags "-s -w" -o "$BIN/$out.tmp" . )
  mv "$BIN/$out.tmp" "$BIN/$out"
  log "etcd done"
}

build_kube() {
  local v=$K8S_VERSION ok=1 b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do have "$b-$v" || ok=0; done
  [[ $ok == 1 ]] && { log "kubernetes $v cached"; return; }
  log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $v (wrapper + staging replaces)"
  local dir=$SRC/kubernetes-$v minor=${v#v1.}; minor=${minor%%.*}
  local staging_v="v0.${v#v1.}"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  wrapper "$dir" "k8s.io/kubernetes@$v"
  local mod
  for mod in $(grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | awk '{print $1}'); do
    (cd "$dir" && go mod edit -replace="$mod=$mod@$staging_v")
  done
  cat > "$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ldf="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  (cd "$dir" && go mod tidy -e >/dev/null)
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    have "$b-$v" && continue
    log "  go build $b"
    (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$BIN/$b-$v.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$BIN/$b-$v.tmp" "$BIN/$b-$v"
  done
  log "kubernetes done"
}

build_simple() {  # name module pkg version ldflags
  local name=$1 module=$2 pkg=$3 v=$4 ldf=$5
  local out=$name-$v
  have "$out" && { log "$name $v cached"; return; }
  log "building $name $v"
  local dir=$SRC/$name-$v
  wrapper "$dir" "$module@$v"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > "$dir/tools.go"
  (cd "$dir" && go mod tidy -e >/dev/null && go build -trimpath -ldflags "-s -w $ldf" -o "$BIN/$out.tmp" "$pkg")
  mv "$BIN/$out.tmp" "$BIN/$out"
  log "$name done"
}

build_kueue() {
  build_simple kueue sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue "$KUEUE_VERSION" \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  # The chart and CRDs come from the module zip; linked even when the binary was cached.
  link_src kueue sigs.k8s.io/kueue "$KUEUE_VERSION"
}
build_kwok() {
  build_simple kwok sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" ""
  link_src kwok sigs.k8s.io/kwok "$KWOK_VERSION"  # for kustomize/stage/*
}
build_helm() {
  build_simple helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$HELM_VERSION" \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
}

# cert-manager (chart e2e): controller + cainjector from one wrapper module; CRDs from the zip.
build_cert_manager() {
  local v=$CERTMANAGER_VERSION b ok=1 mod=github.com/cert-manager/cert-manager
  for b in controller cainjector; do have "cert-manager-$b-$v" || ok=0; done
  if [[ $ok == 1 ]]; then
    log "cert-manager $v cached"
  else
    log "building cert-manager controller + cainjector $v (wrapper module)"
    local dir=$SRC/cert-manager-$v
    wrapper "$dir" "$mod@$v"
    printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/controller"\n\t_ "%s/cmd/cainjector"\n)\n' "$mod" "$mod" > "$dir/tools.go"
    (cd "$dir" && go mod tidy -e >/dev/null)
    for b in controller cainjector; do
      have "cert-manager-$b-$v" && continue
      log "  go build cert-manager $b"
      (cd "$dir" && go build -trimpath -ldflags "-s -w -X $mod/pkg/util.AppVersion=$v" \
        -o "$BIN/cert-manager-$b-$v.tmp" "$mod/cmd/$b")
      mv "$BIN/cert-manager-$b-$v.tmp" "$BIN/cert-manager-$b-$v"
    done
  fi
  link_src cert-manager "$mod" "$v"  # deploy/crds
}

components=("$@")
[[ ${#components[@]} == 0 ]] && components=(etcd kube kueue kwok helm cert-manager)
for c in "${components[@]}"; do
  declare -F "build_${c//-/_}" >/dev/null || { log "unknown component '$c' (etcd kube kueue kwok helm cert-manager)"; exit 2; }
  t0=$(date +%s)
  "build_${c//-/_}"
  log "$c: $(( $(date +%s) - t0 ))s"
done
log "all requested binaries present in $BIN ($(du -sh "$BIN" | cut -f1))"

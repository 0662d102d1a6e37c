#!/usr/bin/env bash
# Build the pinned upstream control-plane binaries from the Go module proxy and
# cache each one by version under $ATOMIC_GANG_CACHE/bin (default ~/.cache/atomic-gang).
# Only what is missing is rebuilt. Usage: hack/build-bins.sh [component...]
# Components: etcd kube kueue kueue-floor kwok lws helm cert-manager kubelet containerd kube-score promtool registry nodeadm-check jobset trainer
# (default: all). kubelet and containerd are the real node's (with runc, the CNI
# plugins and buildah from Debian's packages: hack/install-node-deps.sh). nodeadm-check
# is ours (hack/go/nodeadm-userdata) built against the pinned nodeadm.
# Also links the Kueue, kwok, LWS, JobSet and Trainer module sources (chart, CRDs, kwok
# stages, runtimes) to
# $ATOMIC_GANG_CACHE/<name>-<version>-src. Concurrent runs are serialised by a lock;
# within a run, BUILD_JOBS builds (default: the cores) go side by side, each logged to
# $ATOMIC_GANG_CACHE/logs/<component>.log.
# The pins below are read by hack/python/atomic_gang_devstack/bins.py too.
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
K8S_VERSION=${K8S_VERSION:-v1.36.3}
KUEUE_VERSION=${KUEUE_VERSION:-v0.19.1}
# The oldest Kueue we support (the spec's floor): make test runs the Kueue-facing e2e
# scenarios against it too (tests/e2e/floor), on a control plane of their own.
KUEUE_FLOOR_VERSION=${KUEUE_FLOOR_VERSION:-v0.18.3}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
# LeaderWorkerSet's CRD (source only, no binary): the e2e tests' kind that Kueue admits and
# we do not serve (tests/e2e/kueue_contract). The version Kueue v0.19.1's go.mod names.
LWS_VERSION=${LWS_VERSION:-v0.9.0}
# JobSet: its controller (the module root is package main) and its CRD, the kind the
# webhook reviews besides Jobs; the dev stack runs it. The version Kueue v0.19.1's go.mod names.
JOBSET_VERSION=${JOBSET_VERSION:-v0.12.0}
# Kubeflow Trainer v2: its controller (cmd/trainer-controller-manager), which turns a
# TrainJob into a JobSet, and its CRDs and runtimes; the dev stack runs it. The version
# Kueue v0.19.1's go.mod names (module github.com/kubeflow/trainer/v2).
TRAINER_VERSION=${TRAINER_VERSION:-v2.2.1}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
# The last release whose controller and cainjector are in the root module (chart e2e only).
CERTMANAGER_VERSION=${CERTMANAGER_VERSION:-v1.11.5}
# The real node's runtime (containerd's support matrix: 2.2+ for Kubernetes 1.36).
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.3.7}
# A third-party checker of the rendered chart (fast tier).
KUBESCORE_VERSION=${KUBESCORE_VERSION:-v1.20.0}
# Prometheus's promtool: checks and unit-tests the chart's alert rules (fast tier) and lints
# both services' /metrics (e2e). Prometheus v3.16.0 is Go module v0.316.0.
PROMTOOL_VERSION=${PROMTOOL_VERSION:-v0.316.0}
# distribution's container registry: make docker-push is pushed to it on loopback (e2e).
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
# nodeadm (github.com/awslabs/amazon-eks-ami/nodeadm; the module has no release tags,
# @latest is this pseudo-version): nodeadm-check runs its user-data parser and
# validation on what our launch path sends (tests/integration/nodeadm, fast tier).
NODEADM_VERSION=${NODEADM_VERSION:-v0.0.0-20240229193347-cfab22a10647}
# Bumped whenever a binary's build flags change, so a cached binary built the old
# way is never reused: the binary's cache name carries it (see bins.py BUILD_KEYS).
HELM_BUILD=${HELM_BUILD:-rel1}  # rel1: the release Makefile's version ldflags
# nodeadm-check is built from our source too: the first 8 hex digits of the sha256 of
# hack/go/nodeadm-userdata/{go.mod,go.sum,main.go}, concatenated (tests/unit/devstack
# checks it, so an edit there names a new binary instead of reusing a stale one).
NODEADMCHECK_BUILD=${NODEADMCHECK_BUILD:-498f1836}

CACHE=${ATOMIC_GANG_CACHE:-$HOME/.cache/atomic-gang}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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

KUBE_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
build_kube() { kube_binaries "${KUBE_BINS[@]}"; }
build_kubelet() { kube_binaries kubelet; }

# kube_binaries NAME...: the named k8s.io/kubernetes/cmd/NAME binaries, one wrapper module
kube_binaries() {
  local v=$K8S_VERSION ok=1 b
  for b in "$@"; do have "$b-$v" || ok=0; done
  [[ $ok == 1 ]] && { log "$* $v cached"; return; }
  log "building $* $v (wrapper + staging replaces)"
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
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ldf="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  (cd "$dir" && go mod tidy -e >/dev/null)
  for b in "$@"; do
    have "$b-$v" && continue
    log "  go build $b"
    (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$BIN/$b-$v.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$BIN/$b-$v.tmp" "$BIN/$b-$v"
  done
  log "$* done"
}

build_simple() {  # name module pkg version ldflags [tags]
  local name=$1 module=$2 pkg=$3 v=$4 ldf=$5 tags=${6:-}
  local out=$name-$v
  have "$out" && { log "$name $v cached"; return; }
  log "building $name $v"
  local dir=$SRC/$name-$v
  wrapper "$dir" "$module@$v"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > "$dir/tools.go"
  (cd "$dir" && go mod tidy -e >/dev/null && go build -trimpath -tags "$tags" -ldflags "-s -w $ldf" -o "$BIN/$out.tmp" "$pkg")
  mv "$BIN/$out.tmp" "$BIN/$out"
  log "$name done"
}

build_kueue() {
  build_simple kueue sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue "$KUEUE_VERSION" \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  # The chart and CRDs come from the module zip; linked even when the binary was cached.
  link_src kueue sigs.k8s.io/kueue "$KUEUE_VERSION"
}
# The floor Kueue: the same build at KUEUE_FLOOR_VERSION (its own cache names by version).
build_kueue_floor() { KUEUE_VERSION=$KUEUE_FLOOR_VERSION build_kueue; }
build_kwok() {
  build_simple kwok sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" ""
  link_src kwok sigs.k8s.io/kwok "$KWOK_VERSION"  # for kustomize/stage/*
}
build_lws() { link_src lws sigs.k8s.io/lws "$LWS_VERSION"; }  # config/crd/bases
build_jobset() {
  build_simple jobset sigs.k8s.io/jobset sigs.k8s.io/jobset "$JOBSET_VERSION" \
    "-X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION"
  link_src jobset sigs.k8s.io/jobset "$JOBSET_VERSION"  # config/components: CRD, RBAC, webhooks
}
# The Trainer controller has no version ldflag (its Dockerfile builds main.go bare).
build_trainer() {
  local mod=github.com/kubeflow/trainer/v2
  build_simple trainer "$mod" "$mod/cmd/trainer-controller-manager" "$TRAINER_VERSION" ""
  link_src trainer "$mod" "$TRAINER_VERSION"  # manifests/base: CRDs, runtimes, RBAC, webhooks
}
# helm with its release Makefile's ldflags: the version, and the Kubernetes version
# of its client-go (major+1, minor) that `helm template` assumes without --kube-version
# (unset, helm believes the cluster is v1.20 and kubeVersion: >=1.30 refuses to render).
build_helm() {
  local v=$HELM_VERSION out=helm-$HELM_VERSION-$HELM_BUILD
  have "$out" && { log "helm $v ($HELM_BUILD) cached"; return; }
  local dir=$SRC/helm-$v
  wrapper "$dir" "helm.sh/helm/v3@$v"
  printf '//go:build tools\n\npackage tools\n\nimport _ "helm.sh/helm/v3/cmd/helm"\n' > "$dir/tools.go"
  (cd "$dir" && go mod tidy -e >/dev/null)
  local cgo major minor pkg=helm.sh/helm/v3
  cgo=$(cd "$dir" && go list -f '{{.Version}}' -m k8s.io/client-go)  # v0.37.0
  cgo=${cgo#v}; major=$(( ${cgo%%.*} + 1 )); minor=${cgo#*.}; minor=${minor%%.*}
  log "building helm $v (release ldflags, Kubernetes $major.$minor)"
  local ldf="-s -w -X $pkg/internal/version.version=$v -X $pkg/internal/version.metadata="
  ldf+=" -X $pkg/internal/version.gitTreeState=clean"
  ldf+=" -X $pkg/pkg/lint/rules.k8sVersionMajor=$major -X $pkg/pkg/lint/rules.k8sVersionMinor=$minor"
  ldf+=" -X $pkg/pkg/chartutil.k8sVersionMajor=$major -X $pkg/pkg/chartutil.k8sVersionMinor=$minor"
  (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$BIN/$out.tmp" "$pkg/cmd/helm")
  mv "$BIN/$out.tmp" "$BIN/$out"
  log "helm done"
}

build_kube_score() {
  build_simple kube-score github.com/zegl/kube-score github.com/zegl/kube-score/cmd/kube-score \
    "$KUBESCORE_VERSION" "-X main.version=${KUBESCORE_VERSION#v} -X main.commit=release -X main.date=release"
}

# promtool with the version ldflags of Prometheus's release (prometheus/common/version),
# without the service-discovery plugins (tag remove_all_sd: no cloud SDKs, no client-go;
# rules and metrics are all we check), which halves the build.
build_promtool() {
  local v=$PROMTOOL_VERSION mod=github.com/prometheus/prometheus pkg=github.com/prometheus/common/version
  local minor=${v#v0.}; minor=${minor%%.*}  # v0.316.0 -> 316 -> Prometheus 3.16.0
  local release="3.$(( minor - 300 )).${v##*.}"
  build_simple promtool "$mod" "$mod/cmd/promtool" "$v" \
    "-X $pkg.Version=$release -X $pkg.Revision=release -X $pkg.Branch=release -X $pkg.BuildUser=atomic-gang" \
    remove_all_sd
}

build_registry() {
  local mod=github.com/distribution/distribution/v3
  build_simple registry "$mod" "$mod/cmd/registry" "$REGISTRY_VERSION" "-X $mod/version.version=$REGISTRY_VERSION"
}

# nodeadm-check: hack/go/nodeadm-userdata against the pinned nodeadm. Its module path lies
# under nodeadm's, so it may import nodeadm's internal user-data provider and validation
# (Go checks internal imports by import path); no copy of nodeadm's tree is needed.
build_nodeadm_check() {
  local v=$NODEADM_VERSION mod=github.com/awslabs/amazon-eks-ami/nodeadm
  local out=nodeadm-check-$v-$NODEADMCHECK_BUILD
  have "$out" && { log "nodeadm-check $v ($NODEADMCHECK_BUILD) cached"; return; }
  log "building nodeadm-check $v ($NODEADMCHECK_BUILD: hack/go/nodeadm-userdata)"
  local dir=$SRC/nodeadm-check-$v-$NODEADMCHECK_BUILD
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$REPO"/hack/go/nodeadm-userdata/{go.mod,go.sum,main.go} "$dir/"
  (cd "$dir" && go mod edit -require="$mod@$v" && go mod tidy >/dev/null \
   && go build -trimpath -ldflags "-s -w" -o "$BIN/$out.tmp" .)
  mv "$BIN/$out.tmp" "$BIN/$out"
  log "nodeadm-check done"
}

# containerd 2.x, its runc shim and ctr, static (the tags of its static release).
build_containerd() {
  local v=$CONTAINERD_VERSION b ok=1 mod=github.com/containerd/containerd/v2
  for b in containerd containerd-shim-runc-v2 ctr; do have "$b-$v" || ok=0; done
  [[ $ok == 1 ]] && { log "containerd $v cached"; return; }
  log "building containerd, containerd-shim-runc-v2, ctr $v (wrapper module)"
  local dir=$SRC/containerd-$v
  wrapper "$dir" "$mod@$v"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/containerd"\n\t_ "%s/cmd/containerd-shim-runc-v2"\n\t_ "%s/cmd/ctr"\n)\n' \
    "$mod" "$mod" "$mod" > "$dir/tools.go"
  (cd "$dir" && go mod tidy -e >/dev/null)
  local tags="urfave_cli_no_docs osusergo netgo static_build no_btrfs no_devmapper no_zfs"
  local ldf="-s -w -X $mod/version.Version=$v -X $mod/version.Revision=release -X $mod/version.Package=github.com/containerd/containerd"
  for b in containerd containerd-shim-runc-v2 ctr; do
    have "$b-$v" && continue
    local t=$tags; [[ $b == containerd-shim-runc-v2 ]] && t+=" no_grpc"
    log "  go build $b"
    (cd "$dir" && go build -trimpath -tags "$t" -ldflags "$ldf" -o "$BIN/$b-$v.tmp" "$mod/cmd/$b")
    mv "$BIN/$b-$v.tmp" "$BIN/$b-$v"
  done
  log "containerd done"
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
ALL=(etcd kube kueue kueue-floor kwok lws helm cert-manager kubelet containerd kube-score promtool registry nodeadm-check jobset trainer)
[[ ${#components[@]} == 0 ]] && components=("${ALL[@]}")
for c in "${components[@]}"; do
  declare -F "build_${c//-/_}" >/dev/null || { log "unknown component '$c' (${ALL[*]})"; exit 2; }
done

# Builds run side by side, BUILD_JOBS at once (default: the cores): a Go build keeps
# both cores busy while it compiles, but not while it resolves modules, downloads or
# links, and a second build fills those gaps. The longest go first (a cold build's
# seconds, measured on 2 cores), so the lanes end together. kubelet shares kube's
# wrapper module (its directory is made afresh by each), so it waits for kube.
# Each build's output goes to $CACHE/logs/<component>.log, and a failure prints it.
COLD_SECONDS=(kube:336 kueue:209 kueue-floor:164 cert-manager:131 promtool:105 trainer:77
  helm:73 jobset:71 kwok:65 registry:55 etcd:43 containerd:43 nodeadm-check:42
  kube-score:20 kubelet:19 lws:1)
declare -A cost=()
for entry in "${COLD_SECONDS[@]}"; do cost[${entry%%:*}]=${entry##*:}; done
mapfile -t ordered < <(for c in "${components[@]}"; do echo "${cost[$c]:-60} $c"; done \
  | sort -rn | awk '{print $2}')
if [[ " ${ordered[*]} " == *" kubelet "* && " ${ordered[*]} " == *" kube "* ]]; then
  ordered=($(printf '%s\n' "${ordered[@]}" | grep -vx kubelet) kubelet)
fi
JOBS=${BUILD_JOBS:-$(nproc)}
LOGS=$CACHE/logs
mkdir -p "$LOGS"
declare -A running=()  # pid -> component
failed=()

one() {  # one component, its output to its log
  local c=$1 t0
  t0=$(date +%s)
  if "build_${c//-/_}" >"$LOGS/$c.log" 2>&1; then
    grep -h '^\[build-bins' "$LOGS/$c.log" >&2 || true
    log "$c: $(( $(date +%s) - t0 ))s"
  else
    log "$c FAILED after $(( $(date +%s) - t0 ))s; its log ($LOGS/$c.log):"
    cat "$LOGS/$c.log" >&2
    return 1
  fi
}

reap() {  # wait for one build to end; note it if it failed
  local pid
  wait -n -p pid "${!running[@]}" || failed+=("${running[$pid]}")
  unset "running[$pid]"
}

for c in "${ordered[@]}"; do
  if [[ $c == kubelet ]]; then  # kube first (its wrapper module)
    while [[ " ${running[*]} " == *" kube "* ]]; do reap; done
  fi
  while (( ${#running[@]} >= JOBS )); do reap; done
  one "$c" &
  running[$!]=$c
done
while (( ${#running[@]} > 0 )); do reap; done
if (( ${#failed[@]} > 0 )); then
  log "failed: ${failed[*]}"
  exit 1
fi
log "all requested binaries present in $BIN ($(du -sh "$BIN" | cut -f1))"

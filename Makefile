# atomic-gang-provisioner: developer entry points. See README.md and docs/development.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

CRD := charts/atomic-gang-provisioner/crds/gangnodepools.atomic-gang.k8s.aws.yaml

.PHONY: crd helm-sync manifests generate helm-lint helm-test helm-package demo demo-cluster test test-fast coverage lint unit integration e2e bins venv dev-up dev-down bench clean-venv build run images cluster-up cluster-down docker-build docker-push

## demo: run the whole product locally (control plane + Kueue + moto + provisioner);
## STORY=jobset or STORY=trainjob tells it with the sample JobSet or TrainJob instead of
## the sample Job
STORY ?=
demo: venv bins
	@$(BIN)/python -m atomic_gang_devstack.demo $(if $(STORY),--story $(STORY))

## demo-cluster: the same story, with both services as pods of our images on a real node
demo-cluster: venv bins images
	@$(BIN)/python -m atomic_gang_devstack.demo --in-cluster

## test: every check and every test tier (what CI runs): the binaries, the images and
## lint side by side (hack/prepare-tests.sh), the tiers below e2e on TEST_WORKERS
## processes, then e2e on E2E_WORKERS processes (each e2e package whole on one of them,
## so its stack starts once); each run lists its 25 slowest tests
E2E_WORKERS ?= 3
test: venv
	BIN=$(BIN) hack/prepare-tests.sh
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --durations=25 tests/unit tests/integration
	$(BIN)/pytest -q -p no:cacheprovider -n $(E2E_WORKERS) --dist loadgroup --durations=25 tests/e2e

## test-fast: lint plus everything below e2e (the inner loop: no coverage tracing), the
## tests spread over TEST_WORKERS processes, each with its own apiserver
TEST_WORKERS ?= 2
test-fast: venv lint
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) tests/unit tests/integration

## coverage: everything below e2e with a line-coverage summary of our four packages
coverage: venv
	$(BIN)/pytest -q -p no:cacheprovider --cov --cov-report=term tests/unit tests/integration

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: venv
	$(BIN)/pytest -q tests/unit

integration: venv
	$(BIN)/pytest -q tests/integration

e2e: venv bins images
	$(BIN)/pytest -q -n $(E2E_WORKERS) --dist loadgroup --durations=25 tests/e2e

venv: $(STAMP)
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

## crd / helm-sync / manifests / generate: regenerate the GangNodePool CRD from the pydantic
## models into the chart (the one generated artifact; manifests and generate are the kubebuilder names)
crd helm-sync manifests generate: venv
	$(BIN)/python -m atomic_gang_provisioner.api.crd > $(CRD)

## build: the project's wheel into dist/ (the images' pinned hatchling, no build isolation),
## then checked: exactly our four packages and three scripts; it installs, imports and runs
build: venv
	rm -rf dist
	$(BIN)/python -m pip wheel -q --no-deps --no-build-isolation --wheel-dir dist .
	$(BIN)/python -m atomic_gang_devstack.wheelcheck dist/atomic_gang_provisioner-*.whl

## run: the controller against the current kubeconfig's cluster: make run CONFIG=settings.yaml
## (KUBECONFIG, else ~/.kube/config; AWS from the standard environment; ATOMIC_GANG_PROVISIONER_*)
CONFIG ?=
run: venv
	@test -n "$(CONFIG)" || { echo "make run: set CONFIG=<settings.yaml> (the chart's value names, see docs/operations.md: Settings)" >&2; exit 2; }
	KUBECONFIG="$${KUBECONFIG:-$$HOME/.kube/config}" $(BIN)/atomic-gang-provisioner --config "$(CONFIG)"

## helm-lint / helm-test / helm-package: the chart (pinned helm, built when missing)
CHART := charts/atomic-gang-provisioner
HELM = $$($(BIN)/python -c 'from atomic_gang_devstack.bins import Bins; b = Bins.load(); b.ensure(("helm",)); print(b.path("helm"))')

helm-lint: venv
	$(HELM) lint --strict --kube-version 1.36.3 --values $(CHART)/ci/required-values.yaml $(CHART)

helm-test: venv
	$(BIN)/pytest -q -p no:cacheprovider tests/integration/chart

helm-package: helm-lint
	$(HELM) package $(CHART) --destination bin

## bins: build (or reuse) the pinned upstream control-plane binaries
bins:
	hack/build-bins.sh

dev-up: venv bins
	$(BIN)/python -m atomic_gang_devstack up

dev-down: venv
	$(BIN)/python -m atomic_gang_devstack down

## images: both images from Dockerfile.{controller,webhook} with buildah on a local base (cached)
images: venv
	$(BIN)/python -m atomic_gang_devstack.images

## cluster-up / cluster-down: the stack plus a real kubelet node running cert-manager-issued
## TLS and our chart (helm upgrade --install, our images); idempotent; down restores the host
cluster-up: venv bins images
	$(BIN)/python -m atomic_gang_devstack up --in-cluster

cluster-down: venv
	$(BIN)/python -m atomic_gang_devstack down

## docker-build / docker-push IMG=<repo>:<tag>: both images for a registry (docker buildx or
## buildah); the webhook's is <repo>-webhook:<tag>
docker-build:
	hack/docker-image.sh build "$(IMG)"

docker-push:
	hack/docker-image.sh push "$(IMG)"

clean-venv:
	rm -rf $(VENV)

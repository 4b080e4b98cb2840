# The two commands a newcomer needs:
#   make run    local control plane + every controller + the sample catalog, ending in an installed operator
#   make test   fmt, clippy, unit tests, then integration tests against a fresh local control plane
#
# Heavy builds are cached outside the clone: Go binaries by pinned version, and the cargo
# target directory. Override the location with OLMV1_CACHE_DIR.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

OLMV1_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/olmv1-rs
export OLMV1_CACHE_DIR
export CARGO_TARGET_DIR ?= $(OLMV1_CACHE_DIR)/target
# Name of the cluster `make run` starts and `make stop` stops.
CLUSTER ?= olmv1

.PHONY: help
help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

.PHONY: test
test: lint verify unit integration ## everything CI runs: lint, CRD drift, unit tests, integration tests on a real control plane

.PHONY: lint
lint: fmt-check import-cycles clippy deny ## rustfmt, import cycles, clippy (warnings are errors) and the dependency policy

.PHONY: import-cycles
import-cycles: ## fail on an import cycle between the top-level modules of a crate (known ones: hack/import-cycles.allow)
	hack/import-cycles --self-test
	hack/import-cycles

.PHONY: fmt-check
fmt-check:
	cargo fmt --all -- --check
	@unformatted=$$(gofmt -l hack/clusterctl); if [[ -n "$$unformatted" ]]; then echo "gofmt: $$unformatted"; exit 1; fi

.PHONY: fmt
fmt: ## format Rust and Go sources
	cargo fmt --all
	gofmt -w hack/clusterctl

.PHONY: clippy
clippy:
	cargo clippy --workspace --all-targets --locked -- -D warnings

.PHONY: deny
deny: ## dependency policy of deny.toml (licences, bans, sources) with a pinned cargo-deny, installed once into the cache
	hack/cargo-deny

.PHONY: generate
generate: tools ## regenerate deploy/crds, deploy/compat (from the API crates) and deploy/openshift (from the kustomize overlay)
	cargo run --locked -q -p crdgen -- deploy
	PATH="$$(hack/build-tools 2>/dev/null | tail -n 1):$$PATH" hack/openshift-payload

.PHONY: verify
verify: tools ## fail when deploy/ differs from what `make generate` writes
	cargo run --locked -q -p crdgen -- --check deploy
	PATH="$$(hack/build-tools 2>/dev/null | tail -n 1):$$PATH" hack/openshift-payload --check

.PHONY: unit
unit: ## unit tests (no cluster needed)
	cargo test --workspace --locked --lib --bins
	cargo test --workspace --locked --doc
	cd hack/clusterctl && go vet ./... && go test ./...

.PHONY: integration
# hack/test-deployed starts its own real node, so it runs once hack/test-integration has
# stopped its cluster: a host runs one kubelet at a time.
integration: tools ## integration tests against a throwaway local control plane, then the controllers deployed from their image
	hack/test-integration
	hack/test-deployed

.PHONY: soak
soak: tools ## SOAK_MINUTES (default 10) of churn and failures on a throwaway control plane; asserts bounded retries, memory and no leaks
	hack/soak

.PHONY: tools
tools: ## build the control-plane binaries (cached by version)
	hack/build-tools

.PHONY: run
run: ## the whole system on a local control plane (or the cluster in $$KUBECONFIG), ending with an installed operator
	CLUSTER=$(CLUSTER) hack/run

.PHONY: stop
stop: ## stop exactly what `make run` started
	CLUSTER=$(CLUSTER) hack/stop

.PHONY: build-plugin
build-plugin: ## build the kubectl plugin kubectl-olm (release) and print where it is
	cargo build --locked --release -p kubectl-olm
	@echo "$(CARGO_TARGET_DIR)/release/kubectl-olm"

.PHONY: clean-cache
clean-cache: ## remove cached binaries and the cargo target directory
	rm -rf "$(OLMV1_CACHE_DIR)"

IMAGE ?= olmv1:dev
IMAGE_TOOL ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

.PHONY: images
images: ## build the container image with every controller ($(IMAGE); needs docker or podman)
	@if [[ -z "$(IMAGE_TOOL)" ]]; then echo "make images needs docker or podman"; exit 1; fi
	$(IMAGE_TOOL) build -t $(IMAGE) .

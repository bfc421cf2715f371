# kubectl-workloaddoctor build, test and tooling.
#
# make build   the plugin into bin/
# make tools   the real Kubernetes binaries tests run, into bin/tools/ (rebuilt only when a pin changes)
# make test    unit tests with -race, then e2e tests against a real control plane
# make lint    gofmt and go vet

GO        ?= go
BIN       := $(CURDIR)/bin
TOOLS     := $(BIN)/tools
VERSION   ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG       := github.com/workloaddoctor/kubectl-workloaddoctor
LDFLAGS   := -s -w -X $(PKG)/pkg/version.Version=$(VERSION) -X $(PKG)/pkg/version.Commit=$(COMMIT) -X $(PKG)/pkg/version.Date=$(DATE)

# Kubernetes versions of the test control plane. Changing one rebuilds the binaries stamped with it.
KUBE_VERSION     := v1.37.1
KUBE_OLD_VERSION := v1.32.2

# stamp VERSION: ldflags that make /version and `kubectl version` report VERSION instead of v0.0.0-master.
stamp = -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(1)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(patsubst v%,%,$(1)))) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(1) \
	-X k8s.io/client-go/pkg/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(1)))) \
	-X k8s.io/client-go/pkg/version.gitMinor=$(word 2,$(subst ., ,$(patsubst v%,%,$(1))))

KUBE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubectl

.PHONY: all build tools test test-unit test-chart test-e2e lint clean

# Packages with unit tests: everything except the e2e suite, which needs the binaries.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /test/e2e)

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-workloaddoctor ./cmd/kubectl-workloaddoctor

tools: $(addprefix $(TOOLS)/,$(KUBE_BINS) etcd kwok) $(TOOLS)/$(KUBE_OLD_VERSION)/kube-apiserver

# The binaries depend on their module files and on this Makefile's pins, so a warm `make tools` does nothing.
$(addprefix $(TOOLS)/,$(KUBE_BINS)) &: hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -trimpath -ldflags '-s -w $(call stamp,$(KUBE_VERSION))' -o $(TOOLS)/ $(addprefix k8s.io/kubernetes/cmd/,$(KUBE_BINS))
	touch $(addprefix $(TOOLS)/,$(KUBE_BINS))

$(TOOLS)/etcd: hack/tools/go.mod hack/tools/go.sum hack/tools/etcd/main.go
	cd hack/tools && $(GO) build -trimpath -ldflags '-s -w' -o $@ ./etcd

$(TOOLS)/kwok: hack/tools/kwok/go.mod hack/tools/kwok/go.sum
	cd hack/tools/kwok && $(GO) build -trimpath -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok

$(TOOLS)/$(KUBE_OLD_VERSION)/kube-apiserver: hack/tools/$(KUBE_OLD_VERSION)/go.mod hack/tools/$(KUBE_OLD_VERSION)/go.sum
	cd hack/tools/$(KUBE_OLD_VERSION) && $(GO) build -trimpath -ldflags '-s -w $(call stamp,$(KUBE_OLD_VERSION))' -o $@ k8s.io/kubernetes/cmd/kube-apiserver

# Unit tests need no binaries; the e2e tests build the plugin and the pinned control plane first.
test: lint test-unit test-chart test-e2e

test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# The Helm chart, linted and rendered with the Helm library in a module of its own (test/chart), so
# that the plugin's go.mod does not carry Helm; the renderings land in bin/chart, where the e2e
# suite dry-runs them against a real apiserver.
test-chart:
	cd test/chart && CHART_RENDER_DIR=$(BIN)/chart $(GO) test -count=1 ./...

# e2e tests start real control planes from bin/tools and run bin/kubectl-workloaddoctor.
test-e2e: build tools test-chart
	$(GO) test -race -count=1 -timeout 60m ./test/e2e/...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN) dist

# dist: the release in dist/: one archive per platform (binary, LICENSE, README.md), SHA256SUMS and
# krew-manifest.yaml, validated and test-installed the way krew would:  make dist VERSION=v0.1.0
# The binaries carry the commit's date instead of the time of the build and the archives have
# sorted entries and fixed times, so one commit always gives the same checksums. To publish, upload
# dist/* to the GitHub release VERSION and copy dist/krew-manifest.yaml over krew-manifest.yaml.
DIST_FILES ?= LICENSE README.md

.PHONY: dist
dist: DATE = $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
dist:
	$(GO) run ./hack/dist -version '$(VERSION)' -commit '$(COMMIT)' -date '$(DATE)' -out dist $(addprefix -file ,$(DIST_FILES))

# demo: a local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok on
# loopback ports, state in .demo/) running the "shop" of internal/scenario, in which every check
# has something real to find; it stays up in the background and `make demo` ends with a scan and
# the commands to try next. `make demo` again reuses a running demo and replaces a stale .demo/.
# demo-down stops it and removes .demo/.
.PHONY: demo demo-down
demo: build tools
	$(GO) build -o $(BIN)/workloaddoctor-demo ./hack/demo
	$(BIN)/workloaddoctor-demo up

demo-down:
	$(GO) build -o $(BIN)/workloaddoctor-demo ./hack/demo
	$(BIN)/workloaddoctor-demo down

# bench: kubectl workloaddoctor scan -A against `kubectl get pods -A -o json` on a control plane
# seeded with 10k and 30k realistic pods (BENCH_FLAGS=-large adds 100k: several more minutes of
# seeding and a machine with spare memory); results in bench/RESULTS.md. See bench/README.md.
BENCH_FLAGS ?=
.PHONY: bench
bench: build tools
	$(GO) run ./bench -plugin $(BIN)/kubectl-workloaddoctor -out bench/RESULTS.md $(BENCH_FLAGS)

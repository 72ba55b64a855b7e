# tidal: a Kubernetes autoscaler. `make build` builds the production binary
# (bin/tidal, no embedded control plane), `make run` the local demo,
# `make test` runs every test, `make test-fast` those that need no control
# plane (the loop to run while working), `make stress` the integration tests
# of the node loop again and again on a busy machine.

GO        ?= go
BIN       := bin/tidal
# tidal-local: tidal with an embedded control plane, for make run.
LOCAL_BIN := bin/tidal-local
K8S_VERSION := v1.36.3
# The embedded API server reports this version (kubectl checks it).
LDFLAGS   := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
             -X k8s.io/component-base/version.gitMajor=1 \
             -X k8s.io/component-base/version.gitMinor=36
# tidal's own version (--version, the user agent); empty takes the VCS
# revision Go records in the binary.
TIDAL_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
TEST_TIMEOUT ?= 20m
# How long each Fuzz target runs in `make test` (make fuzz FUZZTIME=10m for
# a longer search).
FUZZTIME  ?= 5s
RUNS      ?= 10
RUN       ?= ^Test(ScaleUp|ScaleDown)
# make bench: BENCH selects benchmarks (go test -bench), PKG the packages,
# BENCHTIME how long or how often each runs (go test -benchtime: 1x for
# the slow ones). The end-to-end benchmark (BenchmarkNodeLoop in
# test/integration, on a local cluster of its own) loads S2 into it first,
# which takes minutes.
BENCH     ?= .
PKG       ?= ./...
BENCHTIME ?= 1s
BENCH_TIMEOUT ?= 180m
ARGS      ?=
# Tools are built once into TOOLS, each under a name carrying its version,
# so a later run (and a new version) needs no rebuild of the one in place.
TOOLS     := bin/tools
# staticcheck (unused code, deprecated APIs, bugs, style) from the module
# proxy, at a fixed version; its checks are staticcheck's defaults.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)
# make proto: Debian's protoc (packages protobuf-compiler and
# libprotobuf-dev, installed here when missing, as test-deps installs
# prometheus) and the two Go plugins: protoc-gen-go at go.mod's
# google.golang.org/protobuf, protoc-gen-go-grpc from the module proxy at a
# fixed version. Neither plugin is large.
PROTOC_GEN_GO_GRPC_VERSION := v1.6.1
PROTOC_GEN_GO      := $(TOOLS)/protoc-gen-go-$(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
PROTOC_GEN_GO_GRPC := $(TOOLS)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)
PROTO_MODULE := github.com/tidal-autoscaler/tidal
PROTO_OUT := cloudprovider/externalgrpc/protos

.PHONY: build build-local run test test-fast print-ldflags test-deps fuzz stress bench lint fmt clean proto proto-check proto-tools protoc

build:
	$(GO) build -ldflags "$(LDFLAGS) -X github.com/tidal-autoscaler/tidal/version.version=$(TIDAL_VERSION)" -o $(BIN) ./cmd/tidal

build-local:
	$(GO) build -ldflags "$(LDFLAGS) -X github.com/tidal-autoscaler/tidal/version.version=$(TIDAL_VERSION)" -o $(LOCAL_BIN) ./cmd/tidal-local

# The local demo: an embedded cluster, the local cloud, both loops and a live
# timeline. Pass flags with ARGS, e.g. make run ARGS="--duration=2m -v=2".
run: build-local
	./$(LOCAL_BIN) $(ARGS)

test: lint test-deps
	$(GO) test -ldflags "$(LDFLAGS)" -timeout $(TEST_TIMEOUT) ./...
	@$(MAKE) --no-print-directory fuzz

# The loop to run while working: every unit and package test, without lint,
# fuzzing and the suites that start a local control plane. Those suites
# (CLUSTER_SUITES, whose shared test main is testenv.Run) skip under -short;
# test-fast leaves them out of the package list as well, so that their
# binaries, which link the whole control plane, are not even linked.
CLUSTER_SUITES := test/integration test/podloop
test-fast:
	$(GO) test -short -ldflags "$(LDFLAGS)" -timeout $(TEST_TIMEOUT) \
	  $$($(GO) list ./... | grep -v $(foreach s,$(CLUSTER_SUITES),-e '/$(s)$$'))

# The ldflags the tests run with, for a go test by hand:
#   go test -ldflags "$(make -s print-ldflags)" -run X ./test/integration
print-ldflags:
	@echo '$(LDFLAGS)'

# Every Fuzz target of the project (func FuzzXxx in a _test.go file), each
# for FUZZTIME, one at a time. Each package's test binary is built once,
# instrumented for fuzzing (go test -c -fuzz), into bin/fuzz, and run for
# each of its targets in the package's directory, with go test's corpus
# cache (GOCACHE/fuzz). A failing input is saved under the package's
# testdata/fuzz, where plain `go test` replays it from then on.
fuzz:
	@set -e; mkdir -p bin/fuzz; cache=$$($(GO) env GOCACHE)/fuzz; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  pkg=$$($(GO) list $$dir); bin=$(abspath bin/fuzz)/$$(echo $$pkg | tr / _).test; \
	  echo "build $$dir for fuzzing"; \
	  $(GO) test -c -fuzz . -o $$bin $$dir; \
	  for name in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -c6- | sort); do \
	    echo "fuzz $$dir $$name for $(FUZZTIME)"; \
	    (cd $$dir && $$bin -test.run '^$$' -test.fuzz "^$$name\$$" -test.fuzztime $(FUZZTIME) \
	      -test.fuzzcachedir "$$cache/$$pkg" -test.paniconexit0 -test.timeout 10m); \
	  done; \
	done

# The pod loop's Prometheus test runs a real Prometheus server (Debian
# package prometheus), installed here when missing. Without apt-get the test
# skips, except under CI=true where it fails.
test-deps:
	@if ! command -v prometheus >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	    $$sudo apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends prometheus; \
	  else \
	    echo "note: no prometheus binary and no apt-get: the pod loop's Prometheus test will skip"; \
	  fi; \
	fi

# The scale-up and scale-down integration tests (RUN) RUNS times on a busy
# machine: one CPU-burning process per core runs alongside. Failed runs'
# output is kept in bin/stress.
stress:
	RUNS='$(RUNS)' RUN='$(RUN)' LDFLAGS='$(LDFLAGS)' ./test/stress.sh

# Benchmarks only: make test runs no benchmark.
bench:
	$(GO) test -ldflags "$(LDFLAGS)" -run '^$$' -bench '$(BENCH)' -benchmem -benchtime '$(BENCHTIME)' \
	  -timeout $(BENCH_TIMEOUT) $(PKG)

lint: proto-check $(STATICCHECK)
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

fmt:
	gofmt -w .

$(STATICCHECK):
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)/.build) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(TOOLS)/.build/staticcheck $@

$(PROTOC_GEN_GO):
	@mkdir -p $(TOOLS)
	$(GO) build -o $@ google.golang.org/protobuf/cmd/protoc-gen-go

$(PROTOC_GEN_GO_GRPC):
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)/.build) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	mv $(TOOLS)/.build/protoc-gen-go-grpc $@

# protobuf-compiler is protoc, libprotobuf-dev the .proto files of the
# well-known types (google/protobuf/*.proto) it reads from /usr/include.
protoc:
	@if ! command -v protoc >/dev/null 2>&1 || [ ! -f /usr/include/google/protobuf/any.proto ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	    $$sudo apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends protobuf-compiler libprotobuf-dev; \
	  else \
	    echo "protoc is missing and there is no apt-get: install protoc and the well-known types"; exit 1; \
	  fi; \
	fi

proto-tools: protoc $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)

# protoc into the directory $(1): the Go code of every .proto under proto/.
protoc_gen = protoc -I proto \
	  --plugin=protoc-gen-go=$(PROTOC_GEN_GO) --go_out=$(1) --go_opt=module=$(PROTO_MODULE) \
	  --plugin=protoc-gen-go-grpc=$(PROTOC_GEN_GO_GRPC) --go-grpc_out=$(1) --go-grpc_opt=module=$(PROTO_MODULE) \
	  $$(find proto -name '*.proto' | sort)

# Generates the externalgrpc Go code from proto/ (checked in).
proto: proto-tools
	$(call protoc_gen,.)

# Fails when the checked-in generated code differs from what proto/ gives.
proto-check: proto-tools
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(call protoc_gen,$$tmp) && \
	diff -r $$tmp/$(PROTO_OUT) $(PROTO_OUT) || \
	  { echo "generated code in $(PROTO_OUT) is stale: run make proto"; exit 1; }

clean:
	rm -rf bin

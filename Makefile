# tidal: a Kubernetes autoscaler. `make run` starts the local demo,
# `make test` runs every test.

GO        ?= go
BIN       := bin/tidal
K8S_VERSION := v1.36.3
# The embedded API server reports this version (kubectl checks it).
LDFLAGS   := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
             -X k8s.io/component-base/version.gitMajor=1 \
             -X k8s.io/component-base/version.gitMinor=36
TEST_TIMEOUT ?= 20m
BENCH     ?= .
ARGS      ?=

.PHONY: build run test test-deps bench lint fmt clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tidal

# The local demo: an embedded cluster, the local cloud, both loops and a live
# timeline. Pass flags with ARGS, e.g. make run ARGS="--duration=2m -v=2".
run: build
	./$(BIN) local $(ARGS)

test: lint test-deps
	$(GO) test -ldflags "$(LDFLAGS)" -timeout $(TEST_TIMEOUT) ./...

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

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 60m ./...

lint:
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin

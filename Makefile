# recourse — the commands the README gives.
GO      ?= go
MODULES := . examples redisstore cmd/recourse-proxy
FUZZTIME ?= 10s

.PHONY: demo test vet fmt-check race fuzz bench lint e2e

## demo: the narrated demo against the embedded scripted provider (no network, no keys)
demo:
	$(GO) run ./cmd/recourse-demo

## test: vet, gofmt check and the race-enabled tests of the modules in
## MODULES (faults/ runs with make faults, tools/jaeger is built by make e2e)
test: vet fmt-check race

vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...) || exit 1; done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi; echo "gofmt ok"

race:
	@for m in $(MODULES); do echo "go test -race ($$m)"; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

## fuzz: every fuzz target of every module briefly (FUZZTIME each)
FUZZ_MODULES := $(MODULES) tools/image
fuzz:
	@set -e; for m in $(FUZZ_MODULES); do \
	  for pkg in $$(cd $$m && $(GO) list ./...); do \
	    for t in $$(cd $$m && $(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	      echo "fuzz $$pkg $$t"; (cd $$m && $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg); \
	    done; \
	  done; \
	done

## bench: benchmarks, reported as ratios against baselines measured in the same run
## (BENCHFLAGS=-count=3 repeats each; the ratios are the numbers to read)
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(BENCHFLAGS) ./bench/...
	$(GO) test -run '^$$' -bench BenchmarkProxyVsReverseProxy -benchtime 20x $(BENCHFLAGS) ./proxy/
	$(GO) test -run '^$$' -bench BenchmarkProxyHeldStreams -benchtime 5x $(BENCHFLAGS) ./proxy/
	$(GO) -C examples test -run '^$$' -bench . -benchmem $(BENCHFLAGS) ./bench-openai/

## lint: staticcheck over every module
lint:
	@for m in $(MODULES); do echo "staticcheck ($$m)"; (cd $$m && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...) || exit 1; done

## e2e: the Jaeger end-to-end tracing check. Builds Jaeger from tools/jaeger
## (about 8 minutes cold on 2 cores; cached in GOCACHE afterwards), then runs
## examples/jaeger's TestJaegerE2E, which starts Jaeger on free loopback
## ports, exports the example's traces and reads them back.
e2e:
	@echo "building jaeger (tools/jaeger; cached in GOCACHE after the first build)"; \
	start=$$(date +%s); \
	JAEGER_BIN=$$($(GO) -C tools/jaeger tool -n jaeger) && test -x "$$JAEGER_BIN" || exit 1; \
	echo "jaeger: $$JAEGER_BIN ($$(( $$(date +%s) - start ))s)"; \
	cd examples && JAEGER_BIN="$$JAEGER_BIN" $(GO) test -race -count=1 -v -run '^TestJaegerE2E$$' ./jaeger/

## proxy-e2e: recourse-proxy driven by real clients: the official OpenAI Node
## SDK, the Vercel AI SDK and LangChain.js at their default retry settings
## (the versions pinned in proxy/e2e/node/package-lock.json, put in a
## temporary directory by npm ci) and curl on the Ollama endpoint; and on
## /v1/responses the same SDK's Responses API and the Vercel AI SDK's
## default path (proxy/e2e/responses-node, its own package-lock.json). Needs
## node, npm and curl; .ci/run installs them from Debian's packages if absent.
## The JavaScript clients wait their own real backoff (LangChain.js about
## 1.5 min), in parallel: about 2 minutes in all.
.PHONY: proxy-e2e
proxy-e2e:
	$(GO) test -tags proxye2e -race -count=1 -parallel 8 -timeout 15m -v ./proxy/e2e/...

## proxy-fleet: two recourse-proxy processes sharing their quota through one
## real redis-server (started on a free loopback port, append-only file on):
## the fleet cap held across both, Redis killed (the proxies fail open) and
## restarted (nothing counted lost). Needs redis-server; a few seconds.
.PHONY: proxy-fleet
proxy-fleet:
	cd cmd/recourse-proxy && $(GO) test -tags proxyfleet -race -count=1 -v -run '^TestR21_4_FleetOnOneRedis$$' .

## proxy-install: proves go install …/cmd/recourse-proxy@version works: the
## root module, redisstore and cmd/recourse-proxy of the work tree are laid
## out at v0.1.0 in a module proxy on the file system and installed with no
## workspace and no replace (other modules from the local module cache or
## the module proxy); about a minute.
.PHONY: proxy-install
proxy-install:
	cd cmd/recourse-proxy && $(GO) test -tags goinstall -count=1 -v -run '^TestGoInstallAtVersion$$' .

## faults: the Toxiproxy fault suite (module faults/, its own dependencies):
## the chain with stall limits through latency, bandwidth, slicer,
## reset_peer and timeout toxics; real time, a few seconds
.PHONY: faults
faults:
	@echo "go vet (faults)"; cd faults && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## image: recourse-proxy's OCI image, built without a container daemon
## (tools/image, its own module): the static proxy, its health probe and
## Debian's CA bundle, user 65532, port 8787, written to
## build/image/recourse-proxy.oci.tar (docker load -i, podman load -i or
## skopeo copy oci-archive: read it). Needs /etc/ssl/certs/ca-certificates.crt.
.PHONY: image image-test
image:
	cd tools/image && $(GO) run . -root ../.. -out ../../build/image

## image-test: builds the image, reads it back from its archive and runs
## the proxy it holds on a loopback port; checks deploy/Dockerfile,
## deploy/compose.yaml and deploy/recourse-proxy.service against it and
## against the proxy's flags (systemd-analyze verify when installed).
## About a minute.
image-test:
	@echo "go vet (tools/image)"; cd tools/image && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m -v ./...

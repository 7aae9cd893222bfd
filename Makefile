# recourse — the commands the README gives.
GO      ?= go
MODULES := . examples
FUZZTIME ?= 10s

.PHONY: demo test vet fmt-check race fuzz bench lint e2e

## demo: the narrated demo against the embedded scripted provider (no network, no keys)
demo:
	$(GO) run ./cmd/recourse-demo

## test: vet, gofmt check and the race-enabled tests of every module
test: vet fmt-check race

vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...) || exit 1; done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi; echo "gofmt ok"

race:
	@for m in $(MODULES); do echo "go test -race ($$m)"; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

## fuzz: every fuzz target briefly (FUZZTIME each)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: benchmarks, reported as ratios against baselines measured in the same run
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...

## lint: staticcheck over the core module
lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@2025.1.1 ./...

# Gatehouse. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN        := $(CURDIR)/.bin
GOLANGCI   := $(BIN)/golangci-lint
TEMPL      := $(BIN)/templ
BENCHSTAT  := $(BIN)/benchstat
GOLANGCI_VERSION := v2.15.0
TEMPL_VERSION    := v0.3.1100
ARTIFACTS  ?= $(CURDIR)/.artifacts
export GOFLAGS := -buildvcs=false

PKGS := ./...

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(GOLANGCI):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

$(TEMPL):
	GOBIN=$(BIN) go install github.com/a-h/templ/cmd/templ@$(TEMPL_VERSION)

$(BENCHSTAT):
	GOBIN=$(BIN) go install golang.org/x/perf/cmd/benchstat@latest

.PHONY: tools
tools: $(GOLANGCI) $(TEMPL) ## install the pinned linter and templ into .bin/

.PHONY: run
run: ## console with demo traffic on http://127.0.0.1:8080, an MCP gateway at /mcp (project-local PostgreSQL unless DATABASE_URL is set)
	go build -o $(BIN)/console ./cmd/console
	@test -n "$$DATABASE_URL" || export GATEHOUSE_DATA="$(CURDIR)/.data/pg-run (project-local PostgreSQL; delete it to start afresh)"; \
		DATABASE_URL="$$(scripts/pg.sh run)" AUTH_MODE=dev CONSOLE_MCP="$${CONSOLE_MCP:-mcp.example.yaml}" exec $(BIN)/console serve --demo

.PHONY: generate
generate: $(TEMPL) ## regenerate templ output (commit the result)
	$(TEMPL) generate -path web/templates

.PHONY: verify
verify: $(TEMPL) ## fail when generated files or go.mod are stale, or code is not gofmt-clean
	$(TEMPL) generate -path web/templates
	@git diff --exit-code -- web/templates || { echo "templ generate changed files: run 'make generate' and commit"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$'))" || { gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$'); echo "gofmt: files above need formatting"; exit 1; }
	go mod tidy -diff

.PHONY: lint
lint: $(GOLANGCI) ## go vet and golangci-lint
	go vet $(PKGS)
	$(GOLANGCI) run $(PKGS)

.PHONY: unit
unit: ## unit and service tests with -race against PostgreSQL (and the MCP reference server for the gateway's tests)
	MCP_EVERYTHING="$$(scripts/mcp-everything.sh)" DATABASE_URL="$$(scripts/pg.sh test)" go test -race -count=1 $$(go list ./... | grep -v /e2e)

.PHONY: e2e
e2e: ## end-to-end tests: the real binary, PostgreSQL, headless Chromium
	mkdir -p $(ARTIFACTS)
	CHROMIUM="$$(scripts/chromium.sh)" MCP_EVERYTHING="$$(scripts/mcp-everything.sh)" DATABASE_URL="$$(scripts/pg.sh test)" ARTIFACTS="$(ARTIFACTS)" \
		go test -count=1 -timeout 20m ./e2e/...

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 10s)
	@for t in $$(grep -rhoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' engine rules auth handlers service web api client notify mcpgw advisor internal | sed 's/func //'); do \
		pkg=$$(grep -rlE "^func $$t\b" --include='*_test.go' engine rules auth handlers service web api client notify mcpgw advisor internal | xargs dirname); \
		echo "fuzz $$pkg $$t"; go test ./$$pkg -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-10s} -fuzzminimizetime 1s; \
	done

.PHONY: test
test: verify lint unit e2e ## everything CI runs: generated files, lint, unit/service tests, e2e

.PHONY: bench
bench: $(BENCHSTAT) ## benchmarks (engine, service, console) into .artifacts/bench.txt, and allowed proposals over HTTP beside their SQL floor
	mkdir -p $(ARTIFACTS)
	DATABASE_URL="$$(scripts/pg.sh test)" go test -run '^$$' -bench . -benchmem -count 6 ./engine/... ./rules/... ./service/... ./handlers/... | tee $(ARTIFACTS)/bench.txt
	$(BENCHSTAT) $(ARTIFACTS)/bench.txt
	$(BENCHSTAT) -filter '.name:ProposeAllowSides' -col /side $(ARTIFACTS)/bench.txt
	@awk '/^BenchmarkProposeAllowSides\/side=/ { side = $$1; sub(/.*side=/, "", side); sub(/-[0-9]+$$/, "", side); ns[side] += $$3; n[side]++ } \
		END { if (n["http"] && n["floor"]) printf "allowed proposals over HTTP: %.2f of the throughput of their SQL floor (mean ns/op, floor / http)\n", (ns["floor"] / n["floor"]) / (ns["http"] / n["http"]) }' $(ARTIFACTS)/bench.txt

.PHONY: bench-mcp
bench-mcp: $(BENCHSTAT) ## the MCP gateway's added latency on an allowed call: upstream direct vs through the gateway, over HTTP and stdio
	mkdir -p $(ARTIFACTS)
	DATABASE_URL="$$(scripts/pg.sh test)" go test -run '^$$' -bench GatewayAllowedCall -benchtime 200x -count 6 ./mcpgw/ | tee $(ARTIFACTS)/bench-mcp.txt
	$(BENCHSTAT) -col /path $(ARTIFACTS)/bench-mcp.txt

.PHONY: bench-opa
bench-opa: ## Gatehouse's evaluator against OPA (Rego) on the same corpus, in one run
	mkdir -p $(ARTIFACTS)
	cd bench && go test -run . -bench . -benchmem -count 6 . | tee $(ARTIFACTS)/bench-opa.txt

.PHONY: loadtest
loadtest: ## bounded loopback load test: agents proposing, approvers resolving
	DATABASE_URL="$$(scripts/pg.sh test)" go test -count=1 -run TestLoad -v -timeout 10m ./e2e/... -args -load

.PHONY: soak
soak: ## fault soak: 60 s per scenario (server SIGKILLs, two replicas, a PostgreSQL restart), invariants from the database
	mkdir -p $(ARTIFACTS)
	DATABASE_URL="$$(scripts/pg.sh test)" ARTIFACTS="$(ARTIFACTS)" \
		go test -count=1 -run TestSoak -v -timeout 20m ./e2e/... -args -soak 60s -soak-every 10s | tee $(ARTIFACTS)/soak.txt

.PHONY: pg-stop
pg-stop: ## stop the project-local PostgreSQL
	scripts/pg.sh stop

.PHONY: clean
clean: ## remove build output and artifacts (keeps .data/)
	rm -rf $(BIN) $(ARTIFACTS)

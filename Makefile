# Almoner — run `make help` for the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN        := $(CURDIR)/bin
MODULES    := pkg services/auth services/contacts services/imports services/inventory services/orders services/reports services/webhooks gateway cmd/almoner deploy docs/examples/webhook-receiver
# Go modules outside go.work: the published client and the test of its
# flows. Vetted (GOWORK=off) by make lint, tested by cmd/almoner/e2e
# TestClients.
CLIENT_MODULES := clients/go tests/goclient
# Modules golangci-lint checks: every module (gofmt and go vet run on
# MODULES too).
LINT_MODULES := $(MODULES)
export PATH := $(BIN):$(PATH)
export GOFLAGS := -buildvcs=false

# Pinned tool versions; `make tools` installs them into bin/.
BUF_VERSION              := v1.75.0
PROTOC_GEN_GO_VERSION    := v1.36.12
PROTOC_GEN_GO_GRPC       := v1.6.2
GRPC_GATEWAY_VERSION     := v2.32.0
STRIPE_MOCK_VERSION      := v0.203.0
MAILPIT_VERSION          := v1.33.1
GOLANGCI_LINT_VERSION    := v2.15.0

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/buf:
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC)
$(BIN)/protoc-gen-grpc-gateway:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
$(BIN)/protoc-gen-openapiv2:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)
$(BIN)/stripe-mock:
	GOBIN=$(BIN) go install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)
$(BIN)/mailpit:
	GOBIN=$(BIN) go install github.com/axllent/mailpit@$(MAILPIT_VERSION)
# The version is part of the file name so bumping GOLANGCI_LINT_VERSION
# installs the new one instead of reusing a stale binary.
$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

.PHONY: tools
tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway $(BIN)/protoc-gen-openapiv2 $(BIN)/stripe-mock $(BIN)/mailpit $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) ## Install the pinned code generators, linter, stripe-mock and Mailpit into bin/.

.PHONY: generate
generate: tools ## Regenerate Go code and the OpenAPI document from proto/ (offline).
	./scripts/third-party-protos.sh
	rm -rf pkg/api gateway/openapi third_party/openapiv2
	buf generate --path proto/almoner
	mkdir -p gateway/openapi
	cd gateway && go run ./cmd/openapigen -swagger ../third_party/openapiv2/almoner.swagger.json -out openapi/openapi.json
	$(MAKE) generate-clients

# The published clients (docs/clients.md), from the document just written:
# clients/go with oapi-codegen (pinned by the tool directive of its go.mod,
# built as its own module: GOWORK=off) and clients/typescript with
# openapi-typescript (pinned in its package-lock.json; npm ci when its
# node_modules is missing).
.PHONY: generate-clients
generate-clients: ## Regenerate clients/go and clients/typescript from gateway/openapi/openapi.json.
	cd clients/go && GOWORK=off go tool oapi-codegen -config oapi-codegen.yaml ../../gateway/openapi/openapi.json
	cd clients/typescript && { [ -x node_modules/.bin/openapi-typescript ] || npm ci --no-audit --no-fund --silent; } && \
		node_modules/.bin/openapi-typescript ../../gateway/openapi/openapi.json -o src/schema.ts --silent

.PHONY: lint
lint: tools ## buf lint, gofmt, go vet, and golangci-lint (.golangci.yml) on LINT_MODULES.
	./scripts/third-party-protos.sh
	buf lint
	@out=$$(gofmt -l $(MODULES) $(CLIENT_MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(MODULE_PATTERNS)
	@# The published Go client and its test are modules of their own, built
	@# as an integrator builds them (outside go.work: docs/clients.md).
	for m in $(CLIENT_MODULES); do (cd $$m && GOWORK=off go vet ./...); done
	@# One run over every module (go.work makes them all main modules):
	@# the packages they share are loaded and checked once, not once per
	@# module (about 4 minutes on a fresh clone, one per module).
	$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) run --allow-parallel-runners $(foreach m,$(LINT_MODULES),./$(m)/...)

.PHONY: lint-openapi
lint-openapi: ## Lint gateway/openapi/openapi.json with Redocly CLI (pinned in tools/redocly; rules in redocly.yaml).
	./scripts/lint-openapi.sh

.PHONY: docs-viewer
docs-viewer: ## Copy the pinned Scalar API reference (tools/scalar) into gateway/docsite/scalar; commit it.
	./scripts/docs-viewer.sh update

.PHONY: verify
verify: generate lint lint-openapi ## Fail when generated code, the OpenAPI document or the /docs viewer drifts, the document fails its lint, or protos break compatibility with the previous commit.
	./scripts/docs-viewer.sh check
	@if [ -n "$$(git status --porcelain -- pkg/api gateway/openapi clients/go clients/typescript/src)" ]; then \
		echo "generated code is out of date: run make generate and commit"; git status --short -- pkg/api gateway/openapi clients/go clients/typescript/src; exit 1; fi
	@if git rev-parse -q --verify HEAD~1 >/dev/null && git cat-file -e HEAD~1:buf.yaml 2>/dev/null; then \
		./scripts/buf-breaking.sh HEAD~1; else echo "buf breaking: no previous commit with protos"; fi

# The container image, tagged with the commit it was built from (with
# -dirty when the work tree has uncommitted changes); docs/deploy.md sets
# it in an overlay with `kustomize edit set image`.
IMAGE     ?= ghcr.io/almoner/almoner
IMAGE_TAG ?= $(shell git describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null || echo unknown)
# make image's labels and times: the full commit, the repository, and the
# commit's time as the image's creation time (reproducible-builds.org's
# SOURCE_DATE_EPOCH), so that one commit gives one digest.
IMAGE_REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
IMAGE_SOURCE      ?= https://github.com/almoner/almoner
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_TAR         := $(BIN)/almoner-image-$(IMAGE_TAG).tar

# Without a container engine or a registry (deploy/image, with
# go-containerregistry): the binary built as deploy/Dockerfile builds it,
# in an image with distroless/static:nonroot's files and the Dockerfile's
# runtime contract, written as a tarball for docker/podman load or crane
# push. DOCKER=docker|podman builds deploy/Dockerfile instead.
.PHONY: image
image: ## Build the image $(IMAGE):<commit> into bin/almoner-image-<commit>.tar, no engine needed (DOCKER=docker|podman: make image-docker).
ifdef DOCKER
	$(MAKE) image-docker
else
	@mkdir -p $(BIN)
	cd deploy && go run ./cmd/image -root .. -ref $(IMAGE):$(IMAGE_TAG) -out $(IMAGE_TAR) \
		-revision $(IMAGE_REVISION) -source $(IMAGE_SOURCE) -created $(SOURCE_DATE_EPOCH)
endif

.PHONY: image-docker
image-docker: ## Build deploy/Dockerfile as $(IMAGE):<commit> with docker (or DOCKER=podman).
	@command -v $(or $(DOCKER),docker) >/dev/null || { echo "make image-docker: $(or $(DOCKER),docker) is not installed; make image builds the same image without one (docs/deploy.md)"; exit 1; }
	$(or $(DOCKER),docker) build -f deploy/Dockerfile -t $(IMAGE):$(IMAGE_TAG) .
	@echo "built $(IMAGE):$(IMAGE_TAG); push it, then in deploy/k8s/overlays/<env>: kustomize edit set image almoner=$(IMAGE):$(IMAGE_TAG)"

.PHONY: build
build: ## Build bin/almoner.
	cd cmd/almoner && go build -o $(BIN)/almoner .

.PHONY: run
run: build ## Build, find or start PostgreSQL, migrate, create a demo tenant and key, serve on :8080.
	./scripts/run.sh

.PHONY: run-split
run-split: build ## Like run, but every service in its own process on its own port, plus the gateway.
	./scripts/run-split.sh

# Tests marked parallel run this many at once (go test's default is
# GOMAXPROCS, 2 on CI's machine): the integration and e2e tests mostly
# wait on PostgreSQL, gRPC and the runners' passes, so four at a time cut
# the e2e passes from about 210 s to 130 s each without starving them.
E2E_PARALLEL ?= 4
# The split pass runs each cluster as eight processes with a pool each:
# four such tests at once peaked at about 70 connections of
# PostgreSQL's default 100 (sampled from pg_stat_activity by
# application_name), too close for a shared server; three keep the
# peak near 50.
E2E_SPLIT_PARALLEL ?= 3
# The packages make test (scripts/test.sh) runs in one go test run, the
# e2e package first; MODULE_PATTERNS are the same for go vet.
MODULE_PATTERNS := $(foreach m,$(MODULES),./$(m)/...)
TEST_PATTERNS := ./cmd/almoner/e2e $(MODULE_PATTERNS)

# The npm packages of the tests that run Node: the browser test of /docs,
# the TypeScript client test and the published TypeScript client. `make
# test` installs them (npm ci, from each lockfile) when missing or older
# than the lockfile, and fails naming the command when it cannot: the
# tests that need them fail rather than skip.
NPM_TEST_DIRS := tests/browser tests/tsclient clients/typescript
# Commands the README check (scripts/quickstart-check.sh) and the browser
# test run, with the Debian package that has each.
TEST_COMMANDS := bash:bash curl:curl openssl:openssl psql:postgresql-client python3:python3 node:nodejs npm:npm pdftotext:poppler-utils

.PHONY: test-deps
test-deps: $(BIN)/stripe-mock $(BIN)/mailpit ## Install what make test needs besides Go modules (npm ci of the Node tests), or fail naming what is missing.
	@for tc in $(TEST_COMMANDS); do command -v $${tc%%:*} >/dev/null || { \
		echo "make test: $${tc%%:*} is missing: apt-get install $${tc##*:}"; exit 1; }; done
	@chromium=$${CHROMIUM:-/usr/bin/chromium}; [ -x "$$chromium" ] || { \
		echo "make test: the /docs browser test needs Chromium at $$chromium: apt-get install chromium, or set CHROMIUM"; exit 1; }
	@for d in $(NPM_TEST_DIRS); do \
		if [ ! -f $$d/node_modules/.package-lock.json ] || [ $$d/package-lock.json -nt $$d/node_modules/.package-lock.json ]; then \
			echo "== npm ci in $$d"; \
			(cd $$d && npm ci --no-audit --no-fund --silent) || { echo "make test: (cd $$d && npm ci) failed"; exit 1; }; \
		fi; \
	done

.PHONY: test
test: test-deps ## Run every module's tests against a real PostgreSQL (found or started like make run); scripts/test.sh.
	E2E_PARALLEL=$(E2E_PARALLEL) E2E_SPLIT_PARALLEL=$(E2E_SPLIT_PARALLEL) TEST_PATTERNS='$(TEST_PATTERNS)' ./scripts/test.sh

# The e2e tests CI runs through PgBouncer (make test-pgbouncer runs
# them all): one per way the services use a connection — pipelined
# transactions and batches (orders, inventory), COPY into ON COMMIT DROP
# temporary tables and transaction-scoped advisory locks (imports,
# merges), report read transactions with set_config(…, true), the
# webhook queue's QueryExecModeExec statement, the runners' leases
# (letters, year-end), auth's keys and sessions, and the event feed —
# so that each technique meets the pooler in every CI run without a
# third full e2e pass (docs/scaling.md).
PGBOUNCER_CI_RUN := ^(TestThroughPgBouncer|TestOrdersDonationLifecycle|TestOrdersIdempotency|TestOrdersItemsStockAndBatches|TestContactListAndSearch|TestImportDuplicatesAndDryRun|TestMergeContacts|TestInventoryConcurrentReservations|TestReportsEndToEnd|TestLetterRuns|TestTaxStatementRun|TestWebhookDelivery|TestEventFeedAPI|TestAPIKeyLifecycle|TestStaffInvitationToSession)$$

.PHONY: test-pgbouncer
test-pgbouncer: $(BIN)/stripe-mock $(BIN)/mailpit ## Run the e2e tests with the services behind PgBouncer in transaction mode (installs pgbouncer; RUN=pattern narrows).
	./scripts/test-pgbouncer.sh

.PHONY: test-pgbouncer-ci
test-pgbouncer-ci: $(BIN)/stripe-mock $(BIN)/mailpit ## The subset of test-pgbouncer that CI runs (PGBOUNCER_CI_RUN).
	RUN='$(PGBOUNCER_CI_RUN)' ./scripts/test-pgbouncer.sh

.PHONY: bench
bench: build ## Benchmarks against the running one-process server and pgbench; see docs/performance.md.
	./scripts/bench.sh

# Issue 36: reads of one tenant with 10 and with 10,000 tenants in the
# database, on a private cluster it starts and removes (a load of about
# 2,000,000 contacts and 6,000,000 gifts: half an hour or more on two
# cores). TENANTS_BENCH_SMALL / _LARGE size it; see the script's header.
.PHONY: bench-tenants
bench-tenants: build ## Reads with 10 and with 10,000 tenants in the database (private cluster); see docs/performance.md.
	./scripts/bench-tenants.sh

# Issue 36: the standby's share of the reads that may lag under mixed load
# (orders and report runs side by side) on a private primary and standby,
# and the same with the standby's replay paused beyond the lag bound.
.PHONY: bench-replica
bench-replica: build ## The standby's share of report reads under mixed load (private primary + standby); see docs/scaling.md.
	./scripts/bench-replica.sh

.PHONY: clean
clean: ## Remove build output (keeps .data/).
	rm -rf bin third_party

# mcpd — a daemon that supervises local MCP servers and shares them over gRPC.
MODULE  := github.com/mcpd-dev/mcpd
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X $(MODULE)/internal/version.Version=$(VERSION)
GO      ?= go
BINDIR  ?= $(HOME)/.local/bin
UNITDIR ?= $(HOME)/.config/systemd/user

.PHONY: all build man docs run test test-short lint bench bench-smoke bench-plots proto check-proto install clean help FORCE

all: build ## Build everything (same as build)

build: bin/mcpd bin/mcpdctl bin/demo-server ## Build bin/mcpd, bin/mcpdctl and the demo server

bin/%: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./cmd/$*

bin/demo-server: FORCE
	$(GO) build -o $@ ./examples/demo-server

man: bin/mcpdctl ## Write the man pages of mcpdctl into man/ (from the same source as its help)
	./bin/mcpdctl gen-man man

docs: ## Regenerate the generated tables of docs/ (config keys, mcpdctl verbs, metrics); their tests fail until they are current
	$(GO) test -count=1 -run 'TestConfigKeyTableCurrent|TestMetricsTableCurrent|TestVerbTableCurrent' ./docs/ ./cmd/mcpdctl/ -args -update

run: build ## Run mcpd in the foreground on examples/config.json
	./bin/mcpd --config examples/config.json --log-format console

test: node_modules clients/typescript/node_modules ## Run all tests with the race detector (installs the npm packages first)
	$(GO) test -race -count=1 -timeout 60m ./...

node_modules: package-lock.json
	npm ci --no-audit --no-fund
	@touch node_modules

clients/typescript/node_modules: clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund
	@touch clients/typescript/node_modules

# The product packages: cmd/mcpd, cmd/mcpdctl and internal/, without the
# test support (fakes, test servers, end-to-end and compatibility suites).
LINT_PKGS = $(shell $(GO) list ./cmd/mcpd/... ./cmd/mcpdctl/... ./internal/... | grep -Ev '/internal/testing/|/e2e$$|/testdata/')

lint: ## Run staticcheck (pinned in go.mod's tool block) on the product packages; fails on any finding
	$(GO) tool staticcheck $(LINT_PKGS)

test-short: ## Run the unit tests only (no integration tests)
	$(GO) test -race -short -count=1 ./...

bench: bin/mcpd bin/mcpdctl bin/demo-server node_modules ## Run the full benchmark (mcpd vs direct stdio vs bare gRPC; see BENCHMARKS.md)
	$(GO) run ./bench -headline BENCHMARKS.md $(BENCHFLAGS)

bench-smoke: bin/mcpd bin/mcpdctl bin/demo-server node_modules ## Run a CI-sized benchmark (fails only when something does not work)
	$(GO) run ./bench -smoke $(BENCHFLAGS)

bench-plots: bin/mcpd bin/mcpdctl bin/demo-server node_modules ## Run the scale section and write its SVG plots into docs/bench (the committed ones)
	$(GO) run ./bench -sections scale -plots docs/bench $(BENCHFLAGS)

proto: ## Regenerate the committed protobuf code, descriptor set, client stubs and docs/api.md (needs protoc and grpc_python_plugin: apt-get install protobuf-compiler protobuf-compiler-grpc)
	protoc --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	       --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	       --go_out=. --go_opt=paths=source_relative \
	       --go-grpc_out=. --go-grpc_opt=paths=source_relative \
	       proto/mcpd/v1/mcpd.proto
	protoc --include_source_info --descriptor_set_out=proto/mcpd/v1/mcpd.binpb proto/mcpd/v1/mcpd.proto
	protoc --proto_path=mcpd_client/v1=proto/mcpd/v1 \
	       --plugin=protoc-gen-grpc_python="$$(command -v grpc_python_plugin)" \
	       --python_out=clients/python --pyi_out=clients/python --grpc_python_out=clients/python \
	       mcpd_client/v1/mcpd.proto
	cp proto/mcpd/v1/mcpd.proto clients/typescript/proto/mcpd.proto
	$(GO) run ./proto/gendoc -in proto/mcpd/v1/mcpd.binpb -out docs/api.md

check-proto: proto ## Regenerate protos and fail if the committed code differs
	git diff --exit-code -- proto/ clients/python/mcpd_client/v1 clients/typescript/proto docs/api.md

install: build ## Install binaries into BINDIR (~/.local/bin) and the systemd units into UNITDIR (~/.config/systemd/user)
	install -d $(BINDIR) $(UNITDIR)
	install -m 0755 bin/mcpd bin/mcpdctl $(BINDIR)/
	sed 's|^ExecStart=%h/.local/bin/mcpd$$|ExecStart=$(abspath $(BINDIR))/mcpd|' deploy/systemd/mcpd.service > $(UNITDIR)/mcpd.service
	chmod 0644 $(UNITDIR)/mcpd.service
	install -m 0644 deploy/systemd/mcpd.socket deploy/systemd/mcpd-http.socket $(UNITDIR)/

clean: ## Remove build output
	rm -rf bin

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

FORCE:

# gocurator entry points. `make demo` and `make test` install what is missing
# first (Debian's zookeeper 3.8, libcurator-recipes-java 5.4, a JDK, tmux,
# the terminal cmd/zklock's tests drive `zklock ls --watch` in, and
# nftables, which cuts the partition suite's network); `make zk-up` only
# the server and a Java runtime.
SHELL   := /bin/bash
GO      ?= go
ZK_DIR  ?= .zk
ZK_PORT ?= 2181
ZK_JARS := /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
GOTEST  := $(GO) test -race -count=1 -timeout 20m
# ZKNORACE compiles go-zookeeper without the race detector's instrumentation
# (our own packages keep it) for the suites that reconnect clients all the
# time (compat_test: interop and chaos). go-zookeeper v1.0.4 has a data race
# of its own there: on a reconnect, sendSetWatches reads Conn.lastZxid while
# the new recvLoop writes it for a reply to a request queued before
# (go-zookeeper/zk#35, samuel/go-zookeeper#260). Nothing outside the package
# can order the two. recipes' tests (and its engine's, recipes/internal/...)
# reconnect with watches set and requests in flight too (a lost lock's
# delete, sent as the connection comes back, races the new connection's
# setWatches), and so do its sibling packages' fault tests (recipes/nodes,
# barriers, atomic, cache): all run so as well; every other package's tests
# keep go-zookeeper instrumented.
ZKNORACE := -gcflags=github.com/go-zookeeper/zk=-race=false

.PHONY: deps zk-deps check test compat chaos partitions demo bench zk-up zk-down api release-check tidy

# The core module is built, vetted and tested from its own go.mod alone, as
# its users get it (GOWORK=off); $(OTELMETRICS) against this checkout's
# core, through the committed go.work ($(WORK)).
export GOWORK := off
WORK := GOWORK=$(CURDIR)/go.work

# APT_INSTALL installs, with apt-get (through sudo unless root), the Debian
# packages in $$missing, if any: the end of a deps recipe that collected them.
APT_INSTALL := if [ -n "$$missing" ]; then \
	   echo "installing:$$missing"; \
	   sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	   $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	 fi

# zk-deps installs what a ZooKeeper server alone needs (zk-up's), if
# missing: the server's jar (with slf4j) and a Java runtime.
zk-deps:
	@missing=""; \
	 [ -f /usr/share/java/zookeeper.jar ]       || missing="$$missing libzookeeper-java"; \
	 [ -f /usr/share/java/slf4j-simple.jar ]    || missing="$$missing libslf4j-java"; \
	 command -v java >/dev/null                 || missing="$$missing default-jre-headless"; \
	 $(APT_INSTALL)

# deps installs whatever of the prerequisites of the tests, the demo and
# the bench is missing: the server's (zk-deps), Curator's jars and a JDK
# for the Java peers, tmux, and nftables and iproute2 for the partition
# suite.
deps: zk-deps
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl"; exit 1; }
	@missing=""; \
	 [ -f /usr/share/java/curator-recipes.jar ] || missing="$$missing libcurator-recipes-java"; \
	 command -v javac >/dev/null                || missing="$$missing default-jdk-headless"; \
	 command -v tmux >/dev/null                 || missing="$$missing tmux"; \
	 [ -x /usr/sbin/nft ]                       || missing="$$missing nftables"; \
	 [ -x /bin/ip ] || [ -x /usr/sbin/ip ]     || missing="$$missing iproute2"; \
	 $(APT_INSTALL)

# OTELMETRICS is a nested module (a go.mod of its own, so that only its users
# depend on OpenTelemetry): the root's ./... skips it, so check and test run
# it on their own.
OTELMETRICS := framework/otelmetrics

# check: formatting, vet and staticcheck (from the module proxy), of the core
# module and of $(OTELMETRICS), the core module free of OpenTelemetry, the
# two go.mod files as a release needs them (internal/releasecheck -mods),
# and docs/api the exported API as it is (else: run `make api`).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	 if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@if grep -q 'opentelemetry' go.mod go.sum; then \
	   echo "go.mod/go.sum name OpenTelemetry: only $(OTELMETRICS)'s own module may depend on it"; exit 1; fi
	$(GO) run ./internal/releasecheck -mods
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; $(MAKE) -s --no-print-directory api API_DIR="$$tmp"; \
	 if ! diff -ru $(API_DIR_COMMITTED) "$$tmp" > "$$tmp.diff"; then cat "$$tmp.diff"; rm -f "$$tmp.diff"; \
	   echo "the exported API changed (the diff above, from $(API_DIR_COMMITTED) to now): run \`make api\` and commit $(API_DIR_COMMITTED)"; exit 1; fi; \
	 rm -f "$$tmp.diff"
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd $(OTELMETRICS) && $(WORK) $(GO) vet ./... && $(WORK) $(GO) run $(STATICCHECK) ./...

# api: the exported API, `go doc -all` of each public package (all but
# internal/, the commands and the compat suite), into $(API_DIR)/<package>.txt,
# so that a change to it shows in review; `make check` fails while they
# differ. Written by the Go the Makefile runs: go doc's layout may change
# with Go's version.
API_DIR_COMMITTED := docs/api
API_DIR ?= $(API_DIR_COMMITTED)
api:
	@mkdir -p $(API_DIR) && rm -f $(API_DIR)/*.txt
	@for p in $$($(GO) list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v -e '/internal/' -e '/compat_test'); do \
	   $(GO) doc -all $$p > $(API_DIR)/$$(echo $${p#github.com/gocurator/curator/} | tr / .).txt || exit 1; done
	@cd $(OTELMETRICS) && $(WORK) $(GO) doc -all . > $(abspath $(API_DIR))/$$(echo $(OTELMETRICS) | tr / .).txt

# release-check: the two modules installed as an outside user installs
# them (internal/releasecheck, about a minute), as the commit has them (what
# gets tagged): served from a local file module proxy, the core at the
# version $(OTELMETRICS) requires and $(OTELMETRICS) at RELEASE_VERSION (each
# from its tag, else from HEAD), a fresh module outside the repository
# built against them alone and run; then the README's install block, as
# written, in another fresh module with a clone of HEAD. It refuses a
# working tree that differs from HEAD, unless RELEASE_ALLOW_DIRTY=1 (HEAD
# is checked, the changes named loudly: `make test` does so).
# tidy: `go mod tidy` of $(OTELMETRICS), the core served the same way (from
# the working tree if untagged).
RELEASE_VERSION ?= v0.1.0
release-check:
	$(GO) run ./internal/releasecheck -version $(RELEASE_VERSION) $(if $(RELEASE_ALLOW_DIRTY),-allow-dirty)
tidy:
	$(GO) run ./internal/releasecheck -tidy

# test: every package (and $(OTELMETRICS)'s) against real ZooKeeper servers
# the tests start, with Java Curator 5.4 peers for the interop suite, and
# release-check (quick, and needs no server; of HEAD, a dirty tree named).
test: deps check
	$(GOTEST) $$($(GO) list ./... | grep -v -e '/compat_test$$' -e '/recipes$$' -e '/recipes/')
	$(GOTEST) $(ZKNORACE) ./recipes/...
	cd $(OTELMETRICS) && $(WORK) $(GOTEST) ./...
	$(MAKE) --no-print-directory release-check RELEASE_ALLOW_DIRTY=1
	$(GOTEST) $(ZKNORACE) ./compat_test/

# compat: only the Go/Java interop suite.
compat: deps
	$(GOTEST) $(ZKNORACE) ./compat_test/

# chaos: the chaos suite (compat_test's TestChaos: Go and Java contenders on
# a 3-member ensemble under a seeded fault schedule) for CHAOS_DURATION of
# faults, then every fuzz target of the repository for FUZZTIME each.
# CHAOS_SEED=<n> replays the fault sequence of a logged seed.
CHAOS_DURATION ?= 10m
CHAOS_TIMEOUT  ?= 60m
FUZZTIME       ?= 20s
chaos: deps
	$(GO) test -race $(ZKNORACE) -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' -v \
	  ./compat_test/ -chaos.duration=$(CHAOS_DURATION) $(if $(CHAOS_SEED),-chaos.seed=$(CHAOS_SEED))
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	   for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	     echo "$(GO) test -run '^\$$' -fuzz '^$$fn\$$' -fuzztime $(FUZZTIME) $$(dirname $$f)"; \
	     $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$(dirname $$f); \
	   done; \
	 done

# partitions: the partition suite (compat_test's TestPartitions: every
# ZooKeeper member and every Go and Java client process in a network
# namespace of its own, cut apart the way networks fail, contending for a
# mutex, a read-write lock and a leader latch) for PARTITIONS_DURATION of
# cuts, on one side of docs/guarantees.md's follower-lag assumption:
# PARTITIONS_LAG=below (syncLimit × tickTime under T/20: no two holders at
# once) or above (twice T: the window appears, fencing refuses its stale
# writes). PARTITIONS_MEMBERS=5 runs five members; PARTITIONS_SEED=<n>
# replays a logged seed. It needs root, ip and nft (deps installs nftables and iproute2);
# without them it skips, saying why.
PARTITIONS_DURATION ?= 5m
PARTITIONS_LAG      ?= below
PARTITIONS_MEMBERS  ?= 3
PARTITIONS_TIMEOUT  ?= 40m
partitions: deps
	$(GO) test -race $(ZKNORACE) -count=1 -timeout $(PARTITIONS_TIMEOUT) -run '^TestPartitions$$' -v ./compat_test/ \
	  -partitions.duration=$(PARTITIONS_DURATION) -partitions.lag=$(PARTITIONS_LAG) \
	  -partitions.members=$(PARTITIONS_MEMBERS) $(if $(PARTITIONS_SEED),-partitions.seed=$(PARTITIONS_SEED))

# demo: Go workers and a Java Curator 5.4 worker take one lock in turn; the
# queue is shown as `zklock ls` shows it. Uses ZK_SERVERS if set, else starts
# a throwaway ZooKeeper.
demo: deps
	$(GO) run ./cmd/gocurator-demo

# bench: gocurator against Java Curator 5.4, the floor and the limit (raw
# go-zookeeper), on a fresh throwaway ZooKeeper and a 3-member ensemble, in
# one run; writes docs/performance.json and renders docs/performance.md and
# its plot, docs/hot-mutex-sessions.svg, from it.
# Three repetitions of everything, judged on their medians and on each; the
# latency section behind a proxy that adds 0.5 ms to a round trip.
# BENCH_FLAGS=-quick: a smoke run of a minute or two, written to $$TMPDIR
# instead; BENCH_FLAGS=-timeline: where the uncontended cycle's and a
# drain's hand-off's time goes, frame by frame, printed.
bench: deps
	$(GO) run ./cmd/gocurator-bench $(BENCH_FLAGS)

# zk-up / zk-down: a local ZooKeeper on 127.0.0.1:$(ZK_PORT), data in $(ZK_DIR).
# zk-up installs only what the server needs (zk-deps), not the test suites'.
zk-up: zk-deps
	@mkdir -p $(ZK_DIR)/data
	@if [ -f $(ZK_DIR)/zk.pid ] && kill -0 $$(cat $(ZK_DIR)/zk.pid) 2>/dev/null; then \
	   echo "ZooKeeper already running (pid $$(cat $(ZK_DIR)/zk.pid))"; exit 0; fi; \
	 printf 'tickTime=200\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n' \
	   "$(abspath $(ZK_DIR))/data" "$(ZK_PORT)" > $(ZK_DIR)/zoo.cfg; \
	 nohup java -Xmx256m -cp $(ZK_JARS) -Dzookeeper.admin.enableServer=false \
	   org.apache.zookeeper.server.ZooKeeperServerMain $(ZK_DIR)/zoo.cfg > $(ZK_DIR)/zk.log 2>&1 & \
	 echo $$! > $(ZK_DIR)/zk.pid; \
	 for i in $$(seq 1 150); do \
	   if (exec 3<>/dev/tcp/127.0.0.1/$(ZK_PORT); echo srvr >&3; grep -q "^Mode" <&3) 2>/dev/null; then \
	     echo "ZooKeeper up (pid $$(cat $(ZK_DIR)/zk.pid)): export ZK_SERVERS=127.0.0.1:$(ZK_PORT)"; exit 0; fi; \
	   kill -0 $$(cat $(ZK_DIR)/zk.pid) 2>/dev/null || break; sleep 0.2; \
	 done; echo "ZooKeeper did not start; see $(ZK_DIR)/zk.log"; tail -20 $(ZK_DIR)/zk.log; exit 1

zk-down:
	@if [ -f $(ZK_DIR)/zk.pid ]; then \
	   pid=$$(cat $(ZK_DIR)/zk.pid); kill $$pid 2>/dev/null && echo "stopped ZooKeeper (pid $$pid)"; rm -f $(ZK_DIR)/zk.pid; \
	 else echo "no ZooKeeper started by make zk-up"; fi

package compat_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/netpart"
	"github.com/gocurator/curator/internal/testutil"
)

// This file holds the partition suite's set-up: the net, the ensemble in
// it, the referee on the observer's address, the clients in namespaces of
// their own and their contenders.

// startPartitions builds the net for the members and clients (a namespace
// each), starts the ensemble in it and the referee on the observer's
// address, and builds the Go contender process; the caller starts the
// clients. The net is torn down last, however the test ends.
func startPartitions(t *testing.T, set partitionSettings, clients []string) *partitionRun {
	var nodes, hosts []string
	for i := range set.members {
		nodes = append(nodes, memberNode(i))
	}
	nodes = append(nodes, clients...)
	n, err := netpart.New(netpart.Config{Prefix: partitionsPrefix, Subnet: partitionsSubnet, Nodes: nodes})
	if errors.Is(err, netpart.ErrUnavailable) || errors.Is(err, netpart.ErrInUse) {
		t.Skipf("partitions: skipped: %v", err) // not here, or another run (another test binary) cuts the net now
	}
	testutil.Must(t, err)
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("partitions: tearing the net down: %v", err)
		}
	})
	for i := range set.members {
		hosts = append(hosts, n.Addr(memberNode(i)))
	}
	ens := zktest.NewEnsemble(t, set.members, zktest.WithTickTime(partitionsTick), zktest.WithHosts(hosts...),
		zktest.WithCommandWrapper(func(id int) []string { return n.Wrap(memberNode(id - 1)) }),
		zktest.WithConfig("initLimit", strconv.Itoa(int(partitionsInit/partitionsTick))),
		zktest.WithConfig("syncLimit", strconv.Itoa(set.syncLimit)),
		zktest.WithContainerCheckInterval(500*time.Millisecond))
	r := &partitionRun{set: set, net: n, chaosRun: &chaosRun{t: t, ens: ens, checker: testutil.Connect(t, ens.ConnectString()),
		ref: newReferee(t), counts: map[string]map[string]int64{"test": {}, "processes": {}},
		faults: map[faultKind]int{}, worst: map[string]time.Duration{}}}
	// The referee answers on the observer's address too, which every
	// namespace reaches whatever is cut.
	l, err := net.Listen("tcp", net.JoinHostPort(n.Observer(), "0"))
	testutil.Must(t, err)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: r.ref}}
	srv.Start()
	t.Cleanup(srv.Close)
	r.referee = srv.URL

	r.logs = t.TempDir()
	keepOnFailure(t, filepath.Dir(r.logs))
	r.bin = filepath.Join(r.logs, "gopeer")
	if out, err := exec.CommandContext(testutil.Context(t), "go", "build", "-o", r.bin, "./gopeer").CombinedOutput(); err != nil {
		t.Fatalf("building the Go contender process: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.Remove(r.bin) })
	return r
}

// startClient starts the client named name (see partitionClients) in its
// namespace, connected to the members of connect, waits for its session
// and adds it to the run's clients.
func (r *partitionRun) startClient(name, connect string) *chaosClient {
	t := r.t
	c := &chaosClient{name: name, policy: "standard"}
	opts := curatorpeer.Options{LogPath: filepath.Join(r.logs, name+".log"), Wrapper: r.net.Wrap(name)} // in its namespace
	var pp *curatorpeer.Peer
	var err error
	switch {
	case name[0] == 'j':
		c.policy = "curator"
		pp, err = curatorpeer.Start(testutil.Context(t), name, opts)
	default:
		if name[1] == 'b' {
			c.policy = "session"
		}
		w := opts.Wrapper // StartProcess runs its command as given
		pp, err = curatorpeer.StartProcess(testutil.Context(t), name, exec.Command(w[0], append(w[1:], r.bin)...), opts)
	}
	if err != nil {
		t.Fatalf("client %s did not start: %v", name, err)
	}
	c.proc = &peer{t: t, Peer: pp}
	t.Cleanup(c.proc.stop)
	ms := strconv.FormatInt(partitionsSession.Milliseconds(), 10)
	_, err = c.send("-", "client", name, connect, "session="+ms, "connection="+ms, "maxsleep=1000",
		"stamp=true", "tracker=false", "policy="+c.policy)(testutil.Context(t))
	testutil.Must(t, err)
	r.clients = append(r.clients, c)
	return c
}

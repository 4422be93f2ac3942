package zkconn

import "sync"

// staticHosts is go-zookeeper's HostProvider without DNS: the servers are
// tried in turn as given (go-zookeeper shuffles them first) and resolved
// when dialled. go-zookeeper's default one resolves every server in
// zk.Connect, which the framework calls under its lock when it gives a
// session up.
//
// It also pauses later: go-zookeeper waits a second before a dial for which
// Next says retryStart. Its own provider says so at the first dial after a
// connection is lost if that dial is to the server last connected to — so
// with one server, every blip costs a second before the client even tries
// to reconnect (Java's StaticHostProvider does the same). This one says so
// only once every server has been tried in vain since the last connection:
// a blip costs a round trip, and a server that is down is still tried at
// most once a second.
type staticHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	tries   int // dials since the last connection, or since the start
}

func (h *staticHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	h.curr, h.tries = -1, 0
	return nil
}

func (h *staticHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *staticHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	h.tries++
	if h.tries > len(h.servers) { // a whole round in vain: pause before the next
		h.tries, retryStart = 1, true
	}
	return h.servers[h.curr], retryStart
}

func (h *staticHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = 0
}

// Package zktest starts real ZooKeeper servers for tests and injects real
// network faults between them and their clients. It is to ZooKeeper what
// net/http/httptest is to HTTP, except that nothing is mocked: every server
// is an Apache ZooKeeper JVM, started on free loopback ports in a temporary
// directory and stopped (by its own pid) when the test ends.
//
// # Use in your own tests
//
// What a test of yours gets, as Curator's curator-test gives Java tests
// (TestingServer, TestingCluster): a real server (about a second to start),
// an ensemble whose members it can kill and restart, and a proxy that makes
// the network faults a lock must survive happen for real. Everything it
// starts it stops, by pid, when the test ends; nothing is left running.
//
//	func TestMyRecipe(t *testing.T) {
//		srv := zktest.NewServer(t)               // started now, closed by t.Cleanup
//		proxy := zktest.NewProxy(t, srv.Addr())  // the client talks through it
//		conn, _, err := zk.Connect([]string{proxy.Addr()}, 5*time.Second)
//		...
//		proxy.DropConnections()                  // a fault, for real
//		...
//	}
//
// example_user_test.go in this package is such a test, whole.
//
// One rule for every constructor: New…(t, …) is for tests (it fails t on an
// error and closes what it started at t.Cleanup), Start…(…) returns the
// error instead and leaves Close to the caller: NewServer and StartServer,
// NewEnsemble and StartEnsemble, NewProxy and StartProxy. Available reports
// whether the prerequisites are installed, for tests that prefer t.Skip.
//
// A Server can be stopped (SIGTERM), killed (SIGKILL) and restarted on the
// same port with the same data; FourLetterWord, Mntr and Mode query it. It
// runs as a quorum of one member (Mode "leader") rather than in ZooKeeper's
// standalone mode, whose 3.8.0 release leaves connections made while it
// starts hanging; WithStandaloneMode asks for standalone mode, which a
// server never restarted is better in: a quorum's 3.8.0 release may keep a
// lone client's request until the server's next one (ZOOKEEPER-4537).
// NewEnsemble starts a quorum (3 members is usual) whose members can be
// killed and restarted one by one; Leader and WaitForQuorum poll its state.
// Options tune the server for fast tests: WithTickTime (default 100ms),
// WithSessionTimeoutRange (default 2×tick to 60s), WithContainerCheckInterval
// (default 500ms), WithLogOutput, WithStartTimeout, WithJVMFlags, WithConfig,
// WithStandaloneMode, WithTLS, WithTmpfs (the server's directory, its
// data included, on /dev/shm where it can be), and WithHosts and
// WithCommandWrapper (each member on an address of its own, its JVM run
// under a command such as `ip netns exec <namespace>`: members in network
// namespaces of their own, which compat_test's partition suite cuts apart).
//
// # TLS
//
// WithTLS makes a server also serve TLS on a secureClientPort
// (Server.SecureAddr), with certificates from NewTLSFiles (or
// GenerateTLSFiles), which makes a throwaway CA, a server certificate for
// 127.0.0.1 and a client certificate:
//
//	files := zktest.NewTLSFiles(t)
//	srv := zktest.NewServer(t, zktest.WithTLS(files))
//	conf, _ := files.ClientConfig() // trusts the CA, presents the client certificate
//	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
//		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, conf)
//	}
//	conn, _, err := zk.Connect([]string{srv.SecureAddr()}, 5*time.Second, zk.WithDialer(dial))
//
// TLSAvailable reports whether it can run here (Debian's netty-codec jar).
//
// # Faults
//
// A Proxy sits between a client and a server (client → Proxy.Addr → server)
// and injects faults:
//
//   - SetDelay, SetDelays: latency on every packet (SetDelays: one way each,
//     as a network's), order preserved;
//   - DropConnections: close every connection (the client reconnects and
//     keeps its session);
//   - BlackHole and Restore: a partition; held long enough, the server
//     expires the session and the client learns it on Restore;
//   - LoseNextReply: the server applies a request but the client never hears
//     back and sees a connection loss;
//   - Disarm: take an armed LoseNextReply back (arm every proxy of a client,
//     keep the one that fired);
//   - ExpireSession: the server really expires (closes) a session now;
//   - HoldSession: one session cut off (its reconnects wait) while the server
//     keeps it and other sessions pass, as when a client gives a session up;
//   - Requests and WaitRequests: how many requests of an opcode passed;
//   - LastReply: when a client last heard from the server through the proxy
//     (to time how soon it noticed a fault).
//
// Between servers: an ensemble started WithPeerLinks reaches its members'
// quorum and election ports through raw proxies (WithRawStream), and
// Ensemble.Partition cuts one member off from the others while its clients
// still reach it.
//
// For example:
//
//	srv := zktest.NewServer(t)
//	proxy := zktest.NewProxy(t, srv.Addr())
//	conn, _, _ := zk.Connect([]string{proxy.Addr()}, 4*time.Second)
//	lost := proxy.LoseNextReply(zktest.OpCreate)
//	_, err := conn.Create("/a", nil, 0, zk.WorldACL(zk.PermAll))
//	<-lost // err is zk.ErrConnectionClosed, yet /a exists
//
// # Prerequisites
//
// Java (8 or later) and ZooKeeper 3.5 or later. On Debian and Ubuntu,
// `apt-get install zookeeper` installs both (`make test` in this repository
// does it for you); the package puts /usr/share/java/zookeeper.jar, whose
// manifest lists its dependencies, and slf4j-simple for logging.
//
// Environment:
//
//   - ZOOKEEPER_CLASSPATH replaces the classpath (for example a ZooKeeper
//     binary release: "/opt/zookeeper/lib/*");
//   - JAVA_HOME selects the JVM ($JAVA_HOME/bin/java), else java on PATH.
//
// Each server's log (stdout and stderr) is kept at Server.LogPath until
// Close; when a server fails to start, the error ends with the log's tail.
// The JVMs are started in their own process group with a parent-death
// signal, so they die with the test binary even if it crashes.
package zktest

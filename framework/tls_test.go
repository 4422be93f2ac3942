package framework_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// tlsDialer is the dialer docs/operations.md shows: TLS from the first
// byte, as a secureClientPort expects. It counts completed handshakes.
func tlsDialer(conf *tls.Config, handshakes *atomic.Int64) framework.Option {
	return framework.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, conf)
		if err == nil && conn.ConnectionState().HandshakeComplete {
			handshakes.Add(1)
		}
		return conn, err
	})
}

// A client connects over TLS (a ZooKeeper secureClientPort: Netty, PEM
// stores, client certificates required) through WithDialer, and mutexes
// work over it; a client without a certificate is refused.
func TestTLS(t *testing.T) {
	if err := zktest.TLSAvailable(); err != nil {
		t.Skip(err)
	}
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	files := zktest.NewTLSFiles(t)
	srv := zktest.NewServer(t, zktest.WithTLS(files))
	conf, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	var handshakes atomic.Int64
	a := testclient.New(t, srv.SecureAddr(), tlsDialer(conf, &handshakes))
	b := testclient.New(t, srv.SecureAddr(), tlsDialer(conf, &handshakes))
	if n := handshakes.Load(); n < 2 {
		t.Fatalf("%d TLS handshakes for two clients", n)
	}

	const path = "/tls/lock"
	ha, hb := mutexHandle(t, a, path), mutexHandle(t, b, path)
	if err := ha.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if token, err := ha.FencingToken(ctx); err != nil || token <= 0 {
		t.Errorf("fencing token %d, %v", token, err)
	}
	if err := hb.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire while held over TLS = %v, want ErrLocked", err)
	}
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := hb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := hb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Without a client certificate the server ends every handshake.
	anon, err := framework.New(srv.SecureAddr(), retry.NewOneTime(time.Millisecond),
		tlsDialer(&tls.Config{RootCAs: conf.RootCAs, MinVersion: tls.VersionTLS12}, &handshakes))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := anon.BlockUntilConnected(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("connecting without a client certificate = %v, want no connection", err)
	}
}

func mutexHandle(t *testing.T, c *framework.Client, path string) *recipes.Handle {
	t.Helper()
	m, err := recipes.NewInterProcessMutex(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return m.NewHandle()
}

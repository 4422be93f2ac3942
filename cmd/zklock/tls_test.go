package main

import (
	"path/filepath"
	"testing"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// TestTLS runs zklock against a real ZooKeeper serving TLS on its
// secureClientPort (Netty, PEM key and trust stores, client certificates
// required), through framework.WithDialer.
func TestTLS(t *testing.T) {
	if err := zktest.TLSAvailable(); err != nil {
		t.Skip(err)
	}
	testutil.CheckLeaks(t)
	files := zktest.NewTLSFiles(t)
	secure := zktest.NewServer(t, zktest.WithTLS(files)).SecureAddr()
	tlsFlags := []string{"--servers", secure, "--tls-ca", files.CA, "--tls-cert", files.ClientCert, "--tls-key", files.ClientKey}

	startZklock(t, true, append(tlsFlags, "run", "/tls/lock", "--", "sh", "-c", `echo "token=$ZKLOCK_TOKEN"`)...).succeeds("token=")

	// Without a client certificate the server refuses the handshake.
	startZklock(t, true, "--servers", secure, "--tls-ca", files.CA, "--connect-timeout", "500ms", "ls", "/tls").fails(exitError, "cannot connect")
	// A bad CA file is an error before connecting.
	startZklock(t, true, "--servers", secure, "--tls-ca", filepath.Join(t.TempDir(), "missing.pem"), "ls", "/tls").fails(exitError, "--tls-ca")
}

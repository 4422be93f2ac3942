package main

import (
	"path/filepath"
	"strings"
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

	code, out, stderr := zklock(t, append(tlsFlags, "run", "/tls/lock", "--", "sh", "-c", `echo "token=$ZKLOCK_TOKEN"`)...)
	if code != 0 || !strings.HasPrefix(out, "token=") {
		t.Fatalf("run over TLS: status %d, stdout %q, stderr %q", code, out, stderr)
	}

	// Without a client certificate the server refuses the handshake.
	code, _, stderr = zklock(t, "--servers", secure, "--tls-ca", files.CA, "--connect-timeout", "500ms", "ls", "/tls")
	if code != exitError || !strings.Contains(stderr, "cannot connect") {
		t.Errorf("without a client certificate: status %d, stderr %q", code, stderr)
	}
	// A bad CA file is an error before connecting.
	code, _, stderr = zklock(t, "--servers", secure, "--tls-ca", filepath.Join(t.TempDir(), "missing.pem"), "ls", "/tls")
	if code != exitError || !strings.Contains(stderr, "--tls-ca") {
		t.Errorf("missing CA file: status %d, stderr %q", code, stderr)
	}
}

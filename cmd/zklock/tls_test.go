package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// Debian's jars for a ZooKeeper server with TLS: zookeeper.jar's manifest
// leaves out netty-codec, which the Netty connection factory needs.
const (
	zookeeperJar  = "/usr/share/java/zookeeper.jar"
	slf4jJar      = "/usr/share/java/slf4j-simple.jar"
	nettyCodecJar = "/usr/share/java/netty-codec.jar"
)

// pemFiles writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, as PEM files in dir. The server file
// holds its key and certificate, as ZooKeeper's PEM key store wants.
func pemFiles(t *testing.T, dir string) (ca, server, clientCert, clientKey string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name string, blocks ...*pem.Block) string {
		var b []byte
		for _, blk := range blocks {
			b = append(b, pem.EncodeToMemory(blk)...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyBlock := func(k *ecdsa.PrivateKey) *pem.Block {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zklock test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) (*ecdsa.PrivateKey, []byte) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return k, der
	}
	sKey, sDER := issue(2, "localhost", x509.ExtKeyUsageServerAuth)
	cKey, cDER := issue(3, "zklock", x509.ExtKeyUsageClientAuth)
	ca = write("ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	server = write("server.pem", keyBlock(sKey), &pem.Block{Type: "CERTIFICATE", Bytes: sDER})
	clientCert = write("client.pem", &pem.Block{Type: "CERTIFICATE", Bytes: cDER})
	clientKey = write("client-key.pem", keyBlock(cKey))
	return ca, server, clientCert, clientKey
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestTLS runs zklock against a real ZooKeeper serving TLS on its
// secureClientPort (Netty, PEM key and trust stores, client certificates
// required), through framework.WithDialer.
func TestTLS(t *testing.T) {
	for _, jar := range []string{zookeeperJar, nettyCodecJar} {
		if _, err := os.Stat(jar); err != nil {
			t.Skipf("TLS server needs %s: %v", jar, err)
		}
	}
	testutil.CheckLeaks(t)
	dir := t.TempDir()
	ca, serverPEM, cert, key := pemFiles(t, dir)
	cp := zookeeperJar + string(os.PathListSeparator) + nettyCodecJar
	if _, err := os.Stat(slf4jJar); err == nil {
		cp += string(os.PathListSeparator) + slf4jJar
	}
	t.Setenv(zktest.ClasspathEnv, cp)
	port := freePort(t)
	zktest.NewServer(t,
		zktest.WithConfig("secureClientPort", strconv.Itoa(port)),
		zktest.WithJVMFlags(
			"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"-Dzookeeper.ssl.keyStore.location="+serverPEM,
			"-Dzookeeper.ssl.keyStore.type=PEM",
			"-Dzookeeper.ssl.trustStore.location="+ca,
			"-Dzookeeper.ssl.trustStore.type=PEM"))
	secure := "127.0.0.1:" + strconv.Itoa(port)
	tlsFlags := []string{"--servers", secure, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key}

	ctx := testutil.Context(t)
	inv := newInvocation()
	code := inv.run(ctx, append(tlsFlags, "run", "/tls/lock", "--", "sh", "-c", `echo "token=$ZKLOCK_TOKEN"`)...)
	if code != 0 || !strings.HasPrefix(inv.stdout.String(), "token=") {
		t.Fatalf("run over TLS: status %d, stdout %q, stderr %q", code, inv.stdout.String(), inv.stderr.String())
	}

	// Without a client certificate the server refuses the handshake.
	inv = newInvocation()
	code = inv.run(ctx, "--servers", secure, "--tls-ca", ca, "--connect-timeout", "500ms", "ls", "/tls")
	if code != exitError || !strings.Contains(inv.stderr.String(), "cannot connect") {
		t.Errorf("without a client certificate: status %d, stderr %q", code, inv.stderr.String())
	}
	// A bad CA file is an error before connecting.
	inv = newInvocation()
	code = inv.run(ctx, "--servers", secure, "--tls-ca", filepath.Join(dir, "missing.pem"), "ls", "/tls")
	if code != exitError || !strings.Contains(inv.stderr.String(), "--tls-ca") {
		t.Errorf("missing CA file: status %d, stderr %q", code, inv.stderr.String())
	}
}

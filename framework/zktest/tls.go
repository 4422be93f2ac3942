package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// debianNettyCodec is the jar the Netty connection factory, which ZooKeeper
// needs for TLS, depends on; Debian's zookeeper.jar manifest leaves it out.
const debianNettyCodec = "/usr/share/java/netty-codec.jar"

// TLSFiles are the PEM files of a throwaway PKI for a server with TLS
// (WithTLS). They hold a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, both signed by the CA and valid for a
// day.
type TLSFiles struct {
	// CA is the CA certificate: the server's trust store, and the clients'.
	CA string
	// Server holds the server's private key and certificate, in one file, as
	// ZooKeeper's PEM key store wants them.
	Server string
	// ClientCert and ClientKey are a client certificate the server accepts
	// and its private key.
	ClientCert, ClientKey string
}

// GenerateTLSFiles makes a new CA, server certificate and client certificate
// (ECDSA P-256) in dir. It writes them as ca.pem, server.pem, client.pem and
// client-key.pem.
func GenerateTLSFiles(dir string) (*TLSFiles, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zktest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA certificate: %w", err)
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]*pem.Block, error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		key, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return []*pem.Block{{Type: "PRIVATE KEY", Bytes: key}, {Type: "CERTIFICATE", Bytes: der}}, nil
	}
	server, err := issue(2, "localhost", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, fmt.Errorf("zktest: server certificate: %w", err)
	}
	client, err := issue(3, "zktest client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("zktest: client certificate: %w", err)
	}
	f := &TLSFiles{CA: filepath.Join(dir, "ca.pem"), Server: filepath.Join(dir, "server.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	for _, w := range []struct {
		path   string
		blocks []*pem.Block
	}{
		{f.CA, []*pem.Block{{Type: "CERTIFICATE", Bytes: caDER}}},
		{f.Server, server},
		{f.ClientKey, client[:1]},
		{f.ClientCert, client[1:]},
	} {
		var b []byte
		for _, blk := range w.blocks {
			b = append(b, pem.EncodeToMemory(blk)...)
		}
		if err := os.WriteFile(w.path, b, 0o600); err != nil {
			return nil, fmt.Errorf("zktest: %w", err)
		}
	}
	return f, nil
}

// NewTLSFiles is GenerateTLSFiles for tests: the files go to a directory of
// t's own (removed when the test ends), and an error fails t.
func NewTLSFiles(t testing.TB) *TLSFiles {
	t.Helper()
	f, err := GenerateTLSFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ClientConfig returns a TLS configuration that trusts the CA and presents
// the client certificate: what a client of a server started WithTLS needs.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	ca, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("zktest: no certificate in %s", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// WithTLS makes each server also serve clients over TLS, with f's server
// certificate. It serves on a secureClientPort of its own
// (Server.SecureAddr), through ZooKeeper's Netty connection factory. Clients
// must present a certificate signed by f's CA (ZooKeeper's default
// ssl.clientAuth). The plain client port still serves, for the four-letter
// words. Debian's netty-codec jar is added to the default classpath;
// TLSAvailable reports whether it is there. WithTLS(nil) changes nothing.
func WithTLS(f *TLSFiles) Option {
	return optionFunc(func(c *config) { c.tls = f })
}

// TLSAvailable reports whether a server can be started WithTLS: Available,
// and, unless ZOOKEEPER_CLASSPATH is set, Debian's netty-codec jar.
func TLSAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	if os.Getenv(ClasspathEnv) != "" {
		return nil
	}
	if _, err := os.Stat(debianNettyCodec); err != nil {
		return fmt.Errorf("%w: TLS needs %s (Debian: apt-get install libnetty-java)", ErrNotInstalled, debianNettyCodec)
	}
	return nil
}

// tlsJVMFlags are the system properties that make ZooKeeper serve TLS with
// the PEM files of f.
func tlsJVMFlags(f *TLSFiles) []string {
	return []string{
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"-Dzookeeper.ssl.keyStore.location=" + f.Server,
		"-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + f.CA,
		"-Dzookeeper.ssl.trustStore.type=PEM",
	}
}

// SecureAddr returns the TLS client address, "127.0.0.1:PORT", of a server
// started WithTLS, or "" for one without.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return net.JoinHostPort(s.host(), strconv.Itoa(s.securePort))
}

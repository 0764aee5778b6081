package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test, and the server certificates it
// signs, written as PEM files for mariadbd's --ssl-ca/--ssl-cert/--ssl-key.
type testCA struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caPath string
	serial int64
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mysqlfailover test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	ca := &testCA{dir: t.TempDir(), cert: cert, key: key, serial: 1}
	ca.caPath = filepath.Join(ca.dir, "ca.pem")
	must(t, os.WriteFile(ca.caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	return ca
}

// serverCert is what a server certificate says: its names and validity.
type serverCert struct {
	dns       []string
	ips       []net.IP
	notBefore time.Time
	notAfter  time.Time
}

// goodServerCert is valid now for 127.0.0.1 and localhost.
func goodServerCert() serverCert {
	return serverCert{
		dns:       []string{"localhost"},
		ips:       []net.IP{net.IPv4(127, 0, 0, 1)},
		notBefore: time.Now().Add(-time.Hour),
		notAfter:  time.Now().Add(24 * time.Hour),
	}
}

// issue writes a server certificate and its key signed by the CA and returns mariadbd's
// options for them.
func (ca *testCA) issue(t *testing.T, name string, sc serverCert) []string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	ca.serial++
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     sc.dns,
		IPAddresses:  sc.ips,
		NotBefore:    sc.notBefore,
		NotAfter:     sc.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	certPath := filepath.Join(ca.dir, name+"-cert.pem")
	keyPath := filepath.Join(ca.dir, name+"-key.pem")
	must(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	must(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	return []string{"--ssl-ca=" + ca.caPath, "--ssl-cert=" + certPath, "--ssl-key=" + keyPath}
}

// clientConfig trusts only the CA.
func (ca *testCA) clientConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

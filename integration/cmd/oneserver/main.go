// Command oneserver runs one MariaDB server of the integration harness (package harness,
// a one-node cluster) for tests that need a plain server, such as go-sql-driver's own test
// suite run by scripts/gosqldriver-suite.sh. It creates the database named by -db, prints
// the server's address as shell assignments on stdout, one a line,
//
//	MYSQL_TEST_ADDR=127.0.0.1:40123
//	MYSQL_TEST_USER=root
//	MYSQL_TEST_PASS=
//	MYSQL_TEST_DBNAME=gotest
//
// then "READY", and keeps the server until it gets SIGINT or SIGTERM (or its stdin closes,
// with -stdin), when it stops it and removes its files. Arguments after the flags are
// extra mariadbd options (harness.WithNodeArgs); -tls serves TLS with a self-signed
// certificate. Without a server binary it exits with
// status 1 and says how to install one.
//
//	go run ./cmd/oneserver -db gotest -- --max-allowed-packet=4M   (from the integration module)
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

func main() { os.Exit(run()) }

func run() int {
	db := flag.String("db", "gotest", "database to create")
	stdin := flag.Bool("stdin", false, "also stop when stdin reaches its end")
	withTLS := flag.Bool("tls", false, "serve TLS with a self-signed certificate for 127.0.0.1 and localhost")
	flag.Parse()
	args := flag.Args()
	if *withTLS {
		dir, err := os.MkdirTemp("", "oneserver-tls-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "oneserver:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		cert, key, err := selfSigned(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "oneserver: certificate:", err)
			return 1
		}
		args = append([]string{"--ssl-cert=" + cert, "--ssl-key=" + key}, args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := harness.StartCluster(start, 1, harness.WithNodeArgs(1, args...), harness.WithLogf(func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, f+"\n", a...)
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "oneserver:", err)
		return 1
	}
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "oneserver: close:", err)
		}
	}()
	n := c.Node(1)
	if err := n.Exec(start, "CREATE DATABASE IF NOT EXISTS `"+*db+"`"); err != nil {
		fmt.Fprintln(os.Stderr, "oneserver:", err)
		return 1
	}
	fmt.Printf("MYSQL_TEST_ADDR=%s\nMYSQL_TEST_USER=root\nMYSQL_TEST_PASS=\nMYSQL_TEST_DBNAME=%s\nREADY\n", n.Addr(), *db)
	if *stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	<-ctx.Done()
	return 0
}

// selfSigned writes a self-signed ECDSA certificate valid for a day for 127.0.0.1, ::1 and
// localhost, and its key, as PEM files in dir for mariadbd's --ssl-cert and --ssl-key.
func selfSigned(dir string) (certPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

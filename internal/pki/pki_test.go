package pki

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAgainstTheirCAOnly(t *testing.T) {
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("node-0", []string{"node-0.pool.ns.svc", "localhost", "127.0.0.1"}, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pair.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	for _, host := range []string{"node-0.pool.ns.svc", "localhost", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-1.pool.ns.svc"}); err == nil {
		t.Error("a name not in the certificate verified")
	}
	wrong := x509.NewCertPool()
	wrong.AppendCertsFromPEM(other.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: wrong, DNSName: "localhost"}); err == nil {
		t.Error("verified against another CA")
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) || cert.IsCA {
		t.Errorf("key usage %v, CA %v", cert.ExtKeyUsage, cert.IsCA)
	}
	if left := time.Until(cert.NotAfter); left > 30*time.Minute || left < 29*time.Minute {
		t.Errorf("valid for %s more, want 30m", left)
	}
}

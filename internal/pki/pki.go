// Package pki issues the X.509 material vectorpilot needs: a private CA and certificates
// it signs, as PEM. The operator's per-cluster CA of managed clusters (the ECK model) and
// the test harness's TLS endpoints both come from here.
package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is the certificate as clients trust it (ca.crt).
	CertPEM []byte
}

// Pair is a certificate and its private key, as PEM.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// NewCA creates a self-signed CA valid for validity from now.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	return NewCAUntil(commonName, time.Now().Add(validity))
}

// NewCAUntil creates a self-signed CA valid until notAfter.
func NewCAUntil(commonName string, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(commonName, 0)
	if err != nil {
		return nil, err
	}
	tmpl.NotAfter = notAfter
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// KeyPEM is the CA's private key as PEM (PKCS #8).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCA reads a CA from its PEM certificate and its PEM ECDSA private key, PKCS #8 or
// SEC 1 (what vectorpilot and cert-manager's ECDSA issuers write; RSA CAs are refused).
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || !ec.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the private key is not an ECDSA key of the certificate")
	}
	return &CA{Cert: cert, Key: ec, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// ParseCertificate reads the first certificate of a PEM bundle.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseCertificates reads every certificate of a PEM bundle; none is an error.
func ParseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := bytes.TrimSpace(bundle); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("malformed PEM")
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// Leaf is what a signed certificate is for.
type Leaf struct {
	CommonName string
	// OrganizationalUnit is part of the subject; OpenSearch's security plugin matches node
	// and admin certificates by their subject (nodes_dn, admin_dn).
	OrganizationalUnit string
	// Hosts are DNS names or IP addresses; none for a client-only certificate.
	Hosts []string
	// NotAfter ends the validity.
	NotAfter time.Time
	// ClientOnly certificates cannot serve TLS (an admin's).
	ClientOnly bool
}

// Issue signs a certificate for hosts (DNS names or IP addresses), usable by a TLS server
// and as a client (OpenSearch's transport layer needs both).
func (ca *CA) Issue(commonName string, hosts []string, validity time.Duration) (Pair, error) {
	return ca.Sign(Leaf{CommonName: commonName, Hosts: hosts, NotAfter: time.Now().Add(validity)})
}

// Sign issues the certificate l describes.
func (ca *CA) Sign(l Leaf) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl, err := template(l.CommonName, 0)
	if err != nil {
		return Pair{}, err
	}
	tmpl.NotAfter = l.NotAfter
	if l.OrganizationalUnit != "" {
		tmpl.Subject.OrganizationalUnit = []string{l.OrganizationalUnit}
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if l.ClientOnly {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range l.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func template(commonName string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"vectorpilot"}},
		// A minute back, for clocks a little behind.
		NotBefore: now.Add(-time.Minute),
		NotAfter:  now.Add(validity),
	}, nil
}

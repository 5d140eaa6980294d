// Package security decides the security material of a managed cluster: its CA and when to
// rotate it, each node's certificates and when to re-issue them, the users' generated
// passwords and the security plugin's configuration files. It is pure: the controller
// reads the Secrets, asks here what they should hold, and writes back what changed.
package security

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/pki"
)

// Default lifetimes, as ECK's: certificates for a year, re-issued a month before expiry.
const (
	DefaultValidity     = 365 * 24 * time.Hour
	DefaultRotateBefore = 30 * 24 * time.Hour
	// caValidityFactor: the operator's own CA outlives the certificates it signs.
	caValidityFactor = 5
)

// Lifetimes of a cluster's certificates.
type Lifetimes struct {
	Validity, RotateBefore time.Duration
}

// LifetimesOf reads spec.managed.security.tls, with the defaults.
func LifetimesOf(sc *v1alpha1.SearchCluster) Lifetimes {
	l := Lifetimes{Validity: DefaultValidity, RotateBefore: DefaultRotateBefore}
	t := sc.Spec.Managed.Security.TLS
	if t.CertificateValidity != nil {
		l.Validity = t.CertificateValidity.Duration
	}
	if t.RotateBefore != nil {
		l.RotateBefore = t.RotateBefore.Duration
	}
	return l
}

// Keys of the CA Secret. The operator's own CA keeps its key there; a user's CA keeps it in
// the user's Secret, and only its certificate is recorded here.
const (
	CACertKey       = "ca.crt"
	CAKeyKey        = "ca.key"
	NextCertKey     = "next-ca.crt"
	NextKeyKey      = "next-ca.key"
	PreviousCertKey = "previous-ca.crt"
)

// UserCA is a CA the user brings (spec.managed.security.tls.caSecretRef), as read from its
// Secret's tls.crt and tls.key.
type UserCA struct {
	CertPEM, KeyPEM []byte
}

// CAInput is what PlanCA decides from.
type CAInput struct {
	// Current is the CA Secret's data; empty on the cluster's first reconcile.
	Current map[string][]byte
	// User is the user's CA, nil when the operator issues its own.
	User *UserCA
	// Rolled: every pod of the cluster is ready and runs with the current trust bundle, so
	// a CA being introduced is trusted everywhere and may start signing.
	Rolled    bool
	Now       time.Time
	Lifetimes Lifetimes
	// CommonName of a CA the operator creates.
	CommonName string
}

// Authority is the CA state of a cluster after PlanCA.
type Authority struct {
	// Data is what the CA Secret holds.
	Data map[string][]byte
	// Signing is the CA whose certificates the nodes run with; when it changes, every
	// node's certificates are re-issued.
	Signing *x509.Certificate
	// Signer signs new certificates: the Signing CA, except while a user's replaced CA is
	// being introduced (the old key is gone with the user's old Secret).
	Signer *pki.CA
	// Trust is the PEM bundle every node and client trusts: the signer, a CA being
	// introduced and a retired CA until it expires.
	Trust []byte
	// Event says what changed, for an Event; empty when nothing did.
	Event string
}

// PlanCA decides the cluster's CA. A CA is never swapped in one step: a new one (the
// operator's CA nearing its end, or a user's CA replaced in its Secret) is first added to
// the trust bundle only; once every pod runs with that bundle it becomes the signer and the
// old one stays trusted until it expires. So nodes restarted at different times always
// trust each other's certificates.
func PlanCA(in CAInput) (Authority, error) {
	data := map[string][]byte{}
	for k, v := range in.Current {
		data[k] = v
	}
	var events []string
	if len(data[CACertKey]) == 0 {
		first, err := firstCA(in)
		if err != nil {
			return Authority{}, err
		}
		data = first
		events = append(events, "created the CA")
	}
	signing, err := pki.ParseCertificate(data[CACertKey])
	if err != nil {
		return Authority{}, fmt.Errorf("CA Secret key %s: %w", CACertKey, err)
	}
	// A CA nobody signs with any more is trusted until it expires.
	if prev, err := pki.ParseCertificate(data[PreviousCertKey]); err == nil && !in.Now.Before(prev.NotAfter) {
		delete(data, PreviousCertKey)
		events = append(events, "dropped the expired previous CA")
	}
	next, err := introduce(in, signing, data)
	if err != nil {
		return Authority{}, err
	}
	if next != nil {
		events = append(events, "introduced a new CA (trusted, not yet signing)")
	}
	if len(data[NextCertKey]) > 0 && in.Rolled && next == nil {
		data[PreviousCertKey], data[CACertKey] = data[CACertKey], data[NextCertKey]
		if k, ok := data[NextKeyKey]; ok {
			data[CAKeyKey] = k
		}
		delete(data, NextCertKey)
		delete(data, NextKeyKey)
		events = append(events, "the new CA signs from now on")
	}
	signer, err := signerOf(in, data)
	if err != nil {
		return Authority{}, err
	}
	if signing, err = pki.ParseCertificate(data[CACertKey]); err != nil {
		return Authority{}, err
	}
	return Authority{Data: data, Signing: signing, Signer: signer, Trust: TrustOf(data), Event: strings.Join(events, "; ")}, nil
}

// TrustOf is the trust bundle of a CA Secret's data: the signing CA, the one being
// introduced and the retired one, those present.
func TrustOf(data map[string][]byte) []byte {
	var trust bytes.Buffer
	for _, k := range []string{CACertKey, NextCertKey, PreviousCertKey} {
		if len(data[k]) > 0 {
			trust.Write(bytes.TrimSpace(data[k]))
			trust.WriteByte('\n')
		}
	}
	return trust.Bytes()
}

// firstCA is the CA state of a new cluster: the user's CA, or a new one of the operator's.
func firstCA(in CAInput) (map[string][]byte, error) {
	if in.User != nil {
		return map[string][]byte{CACertKey: in.User.CertPEM}, nil
	}
	return newCA(in, CACertKey, CAKeyKey)
}

func newCA(in CAInput, certKey, keyKey string) (map[string][]byte, error) {
	ca, err := pki.NewCAUntil(in.CommonName, in.Now.Add(caValidityFactor*in.Lifetimes.Validity))
	if err != nil {
		return nil, err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{certKey: ca.CertPEM, keyKey: key}, nil
}

// introduce adds a next CA to data when one is due: the user's CA changed, or the
// operator's CA ends within two rotation periods (one to roll the new trust bundle, one to
// re-issue the certificates). It returns the introduced certificate, nil when none.
func introduce(in CAInput, signing *x509.Certificate, data map[string][]byte) ([]byte, error) {
	if len(data[NextCertKey]) > 0 {
		return nil, nil
	}
	if in.User != nil {
		user, err := pki.ParseCertificate(in.User.CertPEM)
		if err != nil {
			return nil, fmt.Errorf("the user's CA: %w", err)
		}
		if user.Equal(signing) {
			return nil, nil
		}
		data[NextCertKey] = in.User.CertPEM
		return in.User.CertPEM, nil
	}
	if in.Now.Before(signing.NotAfter.Add(-2 * in.Lifetimes.RotateBefore)) {
		return nil, nil
	}
	next, err := newCA(in, NextCertKey, NextKeyKey)
	if err != nil {
		return nil, err
	}
	for k, v := range next {
		data[k] = v
	}
	return next[NextCertKey], nil
}

// signerOf is the CA that signs: the operator's from the CA Secret, or the user's when its
// certificate is the signing one (a user CA being introduced does not sign yet, and the
// replaced one's key is gone: new nodes then get certificates from the introduced one).
func signerOf(in CAInput, data map[string][]byte) (*pki.CA, error) {
	if in.User == nil {
		ca, err := pki.ParseCA(data[CACertKey], data[CAKeyKey])
		if err != nil {
			return nil, fmt.Errorf("CA Secret: %w", err)
		}
		return ca, nil
	}
	ca, err := pki.ParseCA(in.User.CertPEM, in.User.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the user's CA: %w", err)
	}
	return ca, nil
}

// Fingerprint is a short, stable name for PEM material, for annotations.
func Fingerprint(pem []byte) string {
	h := sha256.Sum256(pem)
	return hex.EncodeToString(h[:8])
}

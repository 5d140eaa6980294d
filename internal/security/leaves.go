package security

import (
	"crypto/x509"
	"maps"
	"slices"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/pki"
)

// LeafSpec is one certificate a Secret holds, under the keys Key+".crt" and Key+".key".
type LeafSpec struct {
	Key                string
	CommonName         string
	OrganizationalUnit string
	Hosts              []string
	ClientOnly         bool
}

// LeavesInput is what PlanLeaves decides from.
type LeavesInput struct {
	// Current is the Secret's data; IssuedAt its issued-at annotation (empty when new).
	Current   map[string][]byte
	IssuedAt  string
	Specs     []LeafSpec
	Authority Authority
	Now       time.Time
	Lifetimes Lifetimes
}

// Leaves is what a certificates Secret holds after PlanLeaves.
type Leaves struct {
	Data map[string][]byte
	// IssuedAt is when the certificates were last re-issued together (RFC 3339); it
	// changes only then, so adding a node's certificate restarts nobody.
	IssuedAt string
	// Reissued: every certificate was re-issued now (rotation, or a new signing CA).
	Reissued bool
	// NotAfter is the earliest expiry; RenewAt = NotAfter - rotateBefore.
	NotAfter, RenewAt time.Time
	// ReplacedNotAfter, when Reissued, is the earliest expiry of the certificates replaced
	// (issued at the input's IssuedAt): nodes not yet restarted serve them until they are.
	ReplacedNotAfter time.Time
}

// Issues is when the certificates of each issue end, by issue time (RFC 3339, as
// Leaves.IssuedAt).
type Issues map[string]time.Time

// Keep forgets all but the n latest issues.
func (is Issues) Keep(n int) {
	times := slices.Sorted(maps.Keys(is))
	for _, t := range times[:max(len(times)-n, 0)] {
		delete(is, t)
	}
}

// PlanLeaves keeps a Secret's certificates valid: all of them are re-issued together when
// the earliest comes within rotateBefore of its end or the signing CA changed; a
// certificate that is missing or names other hosts is issued alone. Each also holds the
// trust bundle under managed.TrustBundleKey.
func PlanLeaves(in LeavesInput) (Leaves, error) {
	all := in.IssuedAt == ""
	certs := map[string]*x509.Certificate{}
	var currentEnd time.Time // the earliest end of the current certificates
	for _, s := range in.Specs {
		c, err := pki.ParseCertificate(in.Current[s.Key+".crt"])
		if err != nil || len(in.Current[s.Key+".key"]) == 0 {
			continue
		}
		certs[s.Key] = c
		if currentEnd.IsZero() || c.NotAfter.Before(currentEnd) {
			currentEnd = c.NotAfter
		}
		if c.CheckSignatureFrom(in.Authority.Signing) != nil || !in.Now.Before(c.NotAfter.Add(-in.Lifetimes.RotateBefore)) {
			all = true
		}
	}
	out := Leaves{Data: map[string][]byte{managed.TrustBundleKey: in.Authority.Trust}, IssuedAt: in.IssuedAt}
	if all {
		out.IssuedAt, out.Reissued, out.ReplacedNotAfter = in.Now.UTC().Format(time.RFC3339), true, currentEnd
	}
	notAfter := in.Now.Add(in.Lifetimes.Validity)
	if caEnd := in.Authority.Signer.Cert.NotAfter; caEnd.Before(notAfter) {
		notAfter = caEnd
	}
	for _, s := range in.Specs {
		c, ok := certs[s.Key]
		if ok && !all && sameHosts(c, s.Hosts) {
			out.Data[s.Key+".crt"], out.Data[s.Key+".key"] = in.Current[s.Key+".crt"], in.Current[s.Key+".key"]
		} else {
			pair, err := in.Authority.Signer.Sign(pki.Leaf{CommonName: s.CommonName, OrganizationalUnit: s.OrganizationalUnit,
				Hosts: s.Hosts, NotAfter: notAfter, ClientOnly: s.ClientOnly})
			if err != nil {
				return Leaves{}, err
			}
			out.Data[s.Key+".crt"], out.Data[s.Key+".key"] = pair.CertPEM, pair.KeyPEM
			if c, err = pki.ParseCertificate(pair.CertPEM); err != nil {
				return Leaves{}, err
			}
		}
		if out.NotAfter.IsZero() || c.NotAfter.Before(out.NotAfter) {
			out.NotAfter = c.NotAfter
		}
	}
	out.RenewAt = out.NotAfter.Add(-in.Lifetimes.RotateBefore)
	return out, nil
}

func sameHosts(c *x509.Certificate, hosts []string) bool {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(hosts)))
}

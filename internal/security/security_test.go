package security

import (
	"bufio"
	"crypto/x509"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/pki"
)

func cluster() *v1alpha1.SearchCluster {
	return &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vec", Namespace: "search"},
		Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{Version: "3.6.0", NodePools: []v1alpha1.NodePool{
			{Name: "cm", Roles: []v1alpha1.NodeRole{"cluster_manager", "data"}, Replicas: 3},
		}}},
	}
}

var day = Lifetimes{Validity: 24 * time.Hour, RotateBefore: time.Hour}

func plan(t *testing.T, in CAInput) Authority {
	t.Helper()
	if in.Lifetimes == (Lifetimes{}) {
		in.Lifetimes = day
	}
	if in.CommonName == "" {
		in.CommonName = "test CA"
	}
	a, err := PlanCA(in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func serials(t *testing.T, bundle []byte) []string {
	t.Helper()
	certs, err := pki.ParseCertificates(bundle)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range certs {
		out = append(out, c.SerialNumber.String())
	}
	return out
}

func serial(t *testing.T, pem []byte) string {
	t.Helper()
	c, err := pki.ParseCertificate(pem)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// The operator's CA goes through introduce → promote → retire, never swapping in one step.
func TestOwnCARotatesInTwoPhases(t *testing.T) {
	now := time.Now()
	first := plan(t, CAInput{Now: now})
	if first.Event == "" || len(first.Data[CAKeyKey]) == 0 || first.Signer == nil {
		t.Fatalf("first CA: %+v", first)
	}
	if left := time.Until(first.Signing.NotAfter); left < 4*24*time.Hour || left > 5*24*time.Hour {
		t.Errorf("CA valid for %s, want 5 × the certificates' day", left)
	}
	again := plan(t, CAInput{Current: first.Data, Now: now.Add(time.Hour), Rolled: true})
	if again.Event != "" || string(again.Trust) != string(first.Trust) {
		t.Fatalf("a young CA changed: %q", again.Event)
	}
	// Within two rotation periods of its end a new CA is trusted, not yet signing.
	late := first.Signing.NotAfter.Add(-90 * time.Minute)
	intro := plan(t, CAInput{Current: first.Data, Now: late, Rolled: true})
	if len(intro.Data[NextCertKey]) == 0 || serial(t, intro.Data[CACertKey]) != serial(t, first.Data[CACertKey]) {
		t.Fatal("no CA introduced, or the signer changed at once")
	}
	if got := serials(t, intro.Trust); len(got) != 2 {
		t.Fatalf("trust %v, want signer and next", got)
	}
	if !intro.Signer.Cert.Equal(first.Signing) {
		t.Error("the introduced CA signs before the pods trust it")
	}
	// Not rolled yet: it waits.
	wait := plan(t, CAInput{Current: intro.Data, Now: late.Add(time.Minute), Rolled: false})
	if wait.Event != "" || len(wait.Data[NextCertKey]) == 0 {
		t.Fatalf("promoted before the pods rolled: %q", wait.Event)
	}
	// Rolled: the new CA signs; the old one stays trusted.
	promoted := plan(t, CAInput{Current: wait.Data, Now: late.Add(2 * time.Minute), Rolled: true})
	if serial(t, promoted.Data[CACertKey]) != serial(t, intro.Data[NextCertKey]) || len(promoted.Data[NextCertKey]) != 0 ||
		serial(t, promoted.Data[PreviousCertKey]) != serial(t, first.Data[CACertKey]) {
		t.Fatal("promotion did not move next → signing → previous")
	}
	if promoted.Signer.Cert.Equal(first.Signing) || len(serials(t, promoted.Trust)) != 2 {
		t.Fatal("the new CA does not sign, or the old one is no longer trusted")
	}
	// The old CA expired: no longer trusted.
	retired := plan(t, CAInput{Current: promoted.Data, Now: first.Signing.NotAfter.Add(time.Second), Rolled: true})
	if len(retired.Data[PreviousCertKey]) != 0 || len(serials(t, retired.Trust)) != 1 {
		t.Fatal("an expired CA is still trusted")
	}
}

func TestUserCAIsTrustedThenSigns(t *testing.T) {
	userCA := func() *UserCA {
		ca, err := pki.NewCA("cert-manager CA", 10*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := ca.KeyPEM()
		return &UserCA{CertPEM: ca.CertPEM, KeyPEM: key}
	}
	now := time.Now()
	u1 := userCA()
	first := plan(t, CAInput{User: u1, Now: now})
	if len(first.Data[CAKeyKey]) != 0 {
		t.Error("the user's key was copied into the operator's Secret")
	}
	if serial(t, first.Data[CACertKey]) != serial(t, u1.CertPEM) || serial(t, first.Signer.CertPEM) != serial(t, u1.CertPEM) {
		t.Fatal("the user's CA does not sign")
	}
	// The user replaced the CA in their Secret: trusted first, signing once rolled.
	u2 := userCA()
	intro := plan(t, CAInput{Current: first.Data, User: u2, Now: now, Rolled: true})
	if serial(t, intro.Data[NextCertKey]) != serial(t, u2.CertPEM) || !intro.Signing.Equal(first.Signing) || len(serials(t, intro.Trust)) != 2 {
		t.Fatal("a replaced user CA was not introduced first")
	}
	promoted := plan(t, CAInput{Current: intro.Data, User: u2, Now: now, Rolled: true})
	if serial(t, promoted.Data[CACertKey]) != serial(t, u2.CertPEM) || serial(t, promoted.Data[PreviousCertKey]) != serial(t, u1.CertPEM) {
		t.Fatal("the user's new CA was not promoted after the roll")
	}
	// A Secret that holds no CA is refused, with the reason.
	leaf, _ := first.Signer.Issue("not-a-ca", []string{"x"}, time.Hour)
	if _, err := PlanCA(CAInput{User: &UserCA{CertPEM: leaf.CertPEM, KeyPEM: leaf.KeyPEM}, Now: now, Lifetimes: day}); err == nil ||
		!strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a leaf as user CA: %v", err)
	}
}

func leavesOf(t *testing.T, in LeavesInput) Leaves {
	t.Helper()
	l, err := PlanLeaves(in)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Every node certificate verifies against the trust bundle for each of the node's names,
// for both TLS roles, with the subject nodes_dn admits, and expires when it should.
func TestNodeCertificatesVerify(t *testing.T) {
	sc := cluster()
	now := time.Now()
	auth := plan(t, CAInput{Now: now})
	l := leavesOf(t, LeavesInput{Specs: PoolSpecs(sc, sc.Spec.Managed.NodePools[0]), Authority: auth, Now: now, Lifetimes: day})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(l.Data[managed.TrustBundleKey])
	for _, pod := range managed.PodNames(sc, sc.Spec.Managed.NodePools[0]) {
		for key, hosts := range map[string][]string{
			managed.TransportKey(pod): managed.TransportHosts(sc, "cm", pod),
			managed.HTTPKey(pod):      managed.HTTPHosts(sc, "cm", pod),
		} {
			c, err := pki.ParseCertificate(l.Data[key+".crt"])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pki.ParseCA(auth.Signer.CertPEM, l.Data[key+".key"]); err == nil {
				t.Fatal("a node key matched the CA")
			}
			for _, h := range hosts {
				for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
					if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
						t.Errorf("%s as %s for %v: %v", key, h, usage, err)
					}
				}
			}
			if c.KeyUsage&x509.KeyUsageDigitalSignature == 0 || c.IsCA {
				t.Errorf("%s: key usage %v, CA %v", key, c.KeyUsage, c.IsCA)
			}
			if got, want := c.Subject.String(), "CN="+pod+",OU=nodes.vec.search,O=vectorpilot"; got != want {
				t.Errorf("%s subject %q, want %q (nodes_dn %q)", key, got, want, managed.NodesDN(sc))
			}
			if left := time.Until(c.NotAfter); left > 24*time.Hour || left < 23*time.Hour {
				t.Errorf("%s valid for %s, want a day", key, left)
			}
		}
	}
	// The HTTP certificate names the client Service; the transport one does not.
	http, _ := pki.ParseCertificate(l.Data[managed.HTTPKey("vec-cm-1")+".crt"])
	transport, _ := pki.ParseCertificate(l.Data[managed.TransportKey("vec-cm-1")+".crt"])
	if http.VerifyHostname("vec.search.svc.cluster.local") != nil || transport.VerifyHostname("vec.search.svc") == nil {
		t.Error("client Service names on the wrong certificate")
	}
	if http.VerifyHostname("vec-cm-0.vec-cm.search.svc") == nil {
		t.Error("a node's certificate names another node")
	}
	admin := leavesOf(t, LeavesInput{Specs: []LeafSpec{AdminSpec(sc)}, Authority: auth, Now: now, Lifetimes: day})
	ac, _ := pki.ParseCertificate(admin.Data["tls.crt"])
	if !slices.Equal(ac.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || ac.Subject.String() != managed.AdminDN(sc) {
		t.Errorf("admin certificate: usage %v subject %q, want client only and %q", ac.ExtKeyUsage, ac.Subject, managed.AdminDN(sc))
	}
}

func TestLeavesAreReissuedTogetherOnlyWhenDue(t *testing.T) {
	sc := cluster()
	pool := sc.Spec.Managed.NodePools[0]
	now := time.Now()
	auth := plan(t, CAInput{Now: now})
	first := leavesOf(t, LeavesInput{Specs: PoolSpecs(sc, pool), Authority: auth, Now: now, Lifetimes: day})
	if !first.Reissued || first.IssuedAt == "" {
		t.Fatal("first issue not marked")
	}
	same := func(a, b Leaves, key string) bool { return string(a.Data[key]) == string(b.Data[key]) }
	key0 := managed.HTTPKey("vec-cm-0") + ".crt"

	later := leavesOf(t, LeavesInput{Current: first.Data, IssuedAt: first.IssuedAt, Specs: PoolSpecs(sc, pool), Authority: auth, Now: now.Add(time.Hour), Lifetimes: day})
	if later.Reissued || later.IssuedAt != first.IssuedAt || !same(first, later, key0) {
		t.Fatal("valid certificates were re-issued")
	}
	// A new node gets its certificates alone: nobody restarts.
	pool.Replicas = 4
	scaled := leavesOf(t, LeavesInput{Current: first.Data, IssuedAt: first.IssuedAt, Specs: PoolSpecs(sc, pool), Authority: auth, Now: now.Add(time.Hour), Lifetimes: day})
	if scaled.Reissued || scaled.IssuedAt != first.IssuedAt || !same(first, scaled, key0) || len(scaled.Data[managed.HTTPKey("vec-cm-3")+".crt"]) == 0 {
		t.Fatal("scaling up re-issued the others, or the new node has none")
	}
	// Within rotateBefore of the end: all re-issued together.
	due := now.Add(23*time.Hour + time.Minute)
	rotated := leavesOf(t, LeavesInput{Current: scaled.Data, IssuedAt: scaled.IssuedAt, Specs: PoolSpecs(sc, pool), Authority: auth, Now: due, Lifetimes: day})
	if !rotated.Reissued || rotated.IssuedAt == first.IssuedAt || same(scaled, rotated, key0) {
		t.Fatal("due certificates were not re-issued")
	}
	// The replaced certificates' end is known: pods not yet restarted serve them.
	if !rotated.ReplacedNotAfter.Equal(first.NotAfter) || !first.ReplacedNotAfter.IsZero() || !later.ReplacedNotAfter.IsZero() {
		t.Errorf("replaced certificates end %s, want %s (first issue %s, none re-issued %s)", rotated.ReplacedNotAfter, first.NotAfter, first.ReplacedNotAfter, later.ReplacedNotAfter)
	}
	if want := first.NotAfter.Add(-time.Hour); !first.RenewAt.Equal(want) {
		t.Errorf("renew at %s, want %s", first.RenewAt, want)
	}
	// A new signing CA: all re-issued from it.
	other := plan(t, CAInput{Now: now, CommonName: "other"})
	moved := leavesOf(t, LeavesInput{Current: first.Data, IssuedAt: first.IssuedAt, Specs: PoolSpecs(sc, pool), Authority: other, Now: now, Lifetimes: day})
	c, _ := pki.ParseCertificate(moved.Data[key0])
	if !moved.Reissued || c.CheckSignatureFrom(other.Signing) != nil {
		t.Fatal("certificates of the old CA kept")
	}
	// Certificates never outlive their CA.
	short := plan(t, CAInput{Now: now, Lifetimes: Lifetimes{Validity: time.Hour, RotateBefore: time.Minute}})
	long := leavesOf(t, LeavesInput{Specs: PoolSpecs(sc, pool), Authority: short, Now: now, Lifetimes: Lifetimes{Validity: 100 * time.Hour, RotateBefore: time.Minute}})
	if long.NotAfter.After(short.Signing.NotAfter) {
		t.Error("a certificate outlives its CA")
	}
}

// The configuration files are exactly the plugin's required ones with its _meta types, the
// passwords verify against their hashes, and each user has its role.
func TestIssuesKeepsTheLatest(t *testing.T) {
	at := func(m int) string { return time.Date(2026, 11, 26, 3, m, 0, 0, time.UTC).Format(time.RFC3339) }
	is := Issues{}
	for _, m := range []int{9, 1, 10, 5, 2, 30} {
		is[at(m)] = time.Now()
	}
	is.Keep(3)
	if got := slices.Sorted(maps.Keys(is)); !slices.Equal(got, []string{at(9), at(10), at(30)}) {
		t.Errorf("kept %v", got)
	}
	is.Keep(5)
	if len(is) != 3 {
		t.Errorf("kept %d of 3 under a limit of 5", len(is))
	}
}

func TestSecurityConfigFiles(t *testing.T) {
	passwords := map[string]string{}
	for _, u := range Users {
		pw, err := NewPassword()
		if err != nil || len(pw) != 32 {
			t.Fatalf("password %q: %v", pw, err)
		}
		passwords[u] = pw
	}
	files, err := ConfigFiles(cluster(), passwords)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/security-config-types.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	required := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		content, ok := files[fields[0]]
		if !ok {
			if fields[2] == "required" {
				t.Errorf("%s missing: the plugin needs it", fields[0])
			}
			continue
		}
		required++
		var doc struct {
			Meta struct {
				Type          string `json:"type"`
				ConfigVersion int    `json:"config_version"`
			} `json:"_meta"`
		}
		if err := yaml.Unmarshal(content, &doc); err != nil || doc.Meta.Type != fields[1] || doc.Meta.ConfigVersion != 2 {
			t.Errorf("%s: _meta %+v (%v), want type %s, version 2", fields[0], doc.Meta, err, fields[1])
		}
	}
	if required != len(files) {
		t.Errorf("%d files, %d of them the plugin's", len(files), required)
	}
	var users map[string]struct {
		Hash string `json:"hash"`
	}
	if err := yaml.Unmarshal(files["internal_users.yml"], &users); err != nil {
		t.Fatal(err)
	}
	for u, pw := range passwords {
		if err := bcrypt.CompareHashAndPassword([]byte(users[u].Hash), []byte(pw)); err != nil {
			t.Errorf("%s: %v", u, err)
		}
		if strings.Contains(string(files["internal_users.yml"]), pw) {
			t.Errorf("%s's password in clear", u)
		}
	}
	var mapping map[string]struct {
		Users []string `json:"users"`
	}
	if err := yaml.Unmarshal(files["roles_mapping.yml"], &mapping); err != nil {
		t.Fatal(err)
	}
	for role, user := range map[string]string{"all_access": "admin", "vectorpilot_operator": "vectorpilot", "vectorpilot_probe": "vectorpilot-probe"} {
		if !slices.Equal(mapping[role].Users, []string{user}) {
			t.Errorf("role %s mapped to %v, want %s", role, mapping[role].Users, user)
		}
	}
	var roles map[string]struct {
		Cluster []string `json:"cluster_permissions"`
	}
	if err := yaml.Unmarshal(files["roles.yml"], &roles); err != nil {
		t.Fatal(err)
	}
	clusterPerms, _ := opensearch.AllPermissions()
	if !slices.Equal(roles["vectorpilot_operator"].Cluster, clusterPerms) || !slices.Equal(roles["vectorpilot_probe"].Cluster, []string{"cluster:monitor/health"}) {
		t.Errorf("roles %+v", roles)
	}
	if _, err := ConfigFiles(cluster(), map[string]string{"admin": "x"}); err == nil {
		t.Error("rendered without every user's password")
	}
}

func TestCredentialsDigestNamesThePasswords(t *testing.T) {
	a := CredentialsDigest(map[string]string{"admin": "one", "vectorpilot": "two"})
	if a != CredentialsDigest(map[string]string{"vectorpilot": "two", "admin": "one"}) {
		t.Error("digest depends on map order")
	}
	if a == CredentialsDigest(map[string]string{"admin": "one", "vectorpilot": "three"}) || strings.Contains(a, "one") {
		t.Error("digest misses a change or shows a password")
	}
}

package controllers_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/pki"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/security"
)

// TestSecuredManagedCluster: a managed cluster is secured by default. The operator writes
// its CA, each node's certificates and the admin's, the users' generated passwords and the
// security configuration; the certificates verify against the CA bundle it publishes; the
// operator connects over TLS with its own user — to a real nginx that presents a
// certificate of the operator's CA and checks the operator's generated password in front of
// the real node (the security plugin cannot run here, and the pods' own certificates name
// cluster DNS names that do not resolve on this machine); the pods here are played (see
// kubelet). With a short validity the certificates are re-issued before they expire and
// the nodes restart onto them one at a time. No password shows in status or Events.
func TestSecuredManagedCluster(t *testing.T) {
	waitsMostly(t)
	var endpoint atomic.Value
	endpoint.Store("https://127.0.0.1:1") // nothing listens until nginx has the operator's CA
	e := startRollingOperator(t, func(*v1alpha1.SearchCluster) string { return endpoint.Load().(string) }, &controlledHealth{health: rollout.Health{Status: "green"}})

	sc := shortLivedCertificates(e.ns, "sec")
	e.create(sc)
	// A new cluster is secured by default: the operator records it in the spec.
	e.eventually(10*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		return err == nil && ptr.Deref(sc.Spec.Managed.Security.Enabled, false), fmt.Sprintf("security.enabled %v (%v)", sc.Spec.Managed.Security.Enabled, err)
	})
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionSecured, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)

	get := func(name string) *corev1.Secret {
		var s corev1.Secret
		if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &s); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
		return &s
	}
	caSecret := get(managed.CASecretName(sc))
	var bundle corev1.ConfigMap
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.CABundleName(sc)}, &bundle); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(bundle.Data["ca.crt"])) {
		t.Fatal("the CA bundle holds no certificate")
	}
	certs := get(managed.CertsSecretName(sc, "nodes"))
	for _, pod := range []string{"sec-nodes-0", "sec-nodes-1"} {
		c, err := pki.ParseCertificate(certs.Data[managed.HTTPKey(pod)+".crt"])
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range managed.HTTPHosts(sc, "nodes", pod) {
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
				t.Errorf("%s as %s: %v", pod, host, err)
			}
		}
		if left := time.Until(c.NotAfter); left > 3*time.Minute || left < 2*time.Minute {
			t.Errorf("%s valid for %s more, want under 3m", pod, left)
		}
	}
	for _, owned := range []client.Object{caSecret, certs, get(managed.AdminCertSecretName(sc)), &bundle} {
		if !metav1.IsControlledBy(owned, sc) {
			t.Errorf("%s is not owned by the SearchCluster", owned.GetName())
		}
	}
	passwords := map[string]string{}
	for _, u := range security.Users {
		s := get(managed.CredentialsSecretName(sc, u))
		if s.Type != corev1.SecretTypeBasicAuth || string(s.Data["username"]) != u || len(s.Data["password"]) != 32 {
			t.Errorf("credentials of %s: type %s, %d-byte password", u, s.Type, len(s.Data["password"]))
		}
		// Retained like the data volumes: the security index on them keeps these users.
		if len(s.OwnerReferences) != 0 {
			t.Errorf("credentials of %s would go with the SearchCluster", u)
		}
		passwords[u] = string(s.Data["password"])
	}
	if cfg := get(managed.SecurityConfigSecretName(sc)); len(cfg.Data["internal_users.yml"]) == 0 || len(cfg.OwnerReferences) != 0 {
		t.Error("security configuration missing or not retained")
	}
	var sts appsv1.StatefulSet
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sec-nodes"}, &sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Annotations[managed.CertificatesAnnotation]; got == "" || got != certs.Annotations[controllers.IssuedAtAnnotation] {
		t.Errorf("pod template's certificates revision %q, Secret's %q", got, certs.Annotations[controllers.IssuedAtAnnotation])
	}

	// The operator's TLS client, its CA and its own user against a real TLS server.
	ca, err := pki.ParseCA(caSecret.Data[security.CACertKey], caSecret.Data[security.CAKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := devenv.StartTLSProxyWith(testsupport.Root(t), testsupport.OpenSearchURL(t), map[string]string{managed.OperatorUser: passwords[managed.OperatorUser]}, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Stop() })
	endpoint.Store(proxy.URL)
	k := playKubelet(e, sc, 2)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)

	// Another password on the server: the operator's user is refused, and says so.
	if err := proxy.SetUsers(map[string]string{managed.OperatorUser: "not-the-generated-one"}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnauthorized, 30*time.Second)
	if err := proxy.SetUsers(map[string]string{managed.OperatorUser: passwords[managed.OperatorUser]}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)

	// Rotation: re-issued before expiry, the nodes restarted onto the new revision.
	k.resetWorst()
	first := certs.Annotations[controllers.IssuedAtAnnotation]
	e.eventually(90*time.Second, func() (bool, string) {
		certs = get(managed.CertsSecretName(sc, "nodes"))
		return certs.Annotations[controllers.IssuedAtAnnotation] != first, "issued at " + first
	})
	e.waitEvent(sc.Name, v1alpha1.ReasonCertificatesRotated)
	e.eventually(60*time.Second, func() (bool, string) {
		r, _, _ := k.snapshot()
		return len(r) >= 2, fmt.Sprintf("restarts %v", r)
	})
	waitRolledOut(e, sc, 60*time.Second)
	if _, worst, _ := k.snapshot(); worst > 1 {
		t.Errorf("%d nodes down at once during the rotation: %s", worst, k.seenAtWorst())
	}
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sec-nodes"}, &sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Annotations[managed.CertificatesAnnotation]; got == first {
		t.Error("the pod template still names the first certificates")
	}
	if sc.Status.Certificates == nil || !sc.Status.Certificates.RenewAt.After(time.Now().Add(-time.Minute)) {
		t.Errorf("status.certificates %+v", sc.Status.Certificates)
	}

	// The operator's credentials Secret deleted: never regenerated (the security index
	// holds the hash of the password it had), reported until restored; a restore with
	// another password is reported too; the right one brings the cluster back.
	operatorCreds := get(managed.CredentialsSecretName(sc, managed.OperatorUser))
	if err := e.k8s.Delete(e.ctx, operatorCreds); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonCredentialsLost, 30*time.Second)
	e.waitEvent(sc.Name, v1alpha1.ReasonCredentialsLost)
	t.Logf("credentials deleted: %s", conditionMessageOf(sc.Status.Conditions, v1alpha1.ConditionDegraded))
	var regenerated corev1.Secret
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(operatorCreds), &regenerated); err == nil {
		t.Errorf("the deleted credentials Secret was regenerated")
	}
	restore := func(password string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: operatorCreds.Name, Namespace: e.ns, Labels: operatorCreds.Labels}, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte(managed.OperatorUser), "password": []byte(password)}}
		_ = e.k8s.Delete(e.ctx, s)
		e.eventually(10*time.Second, func() (bool, string) {
			err := e.k8s.Create(e.ctx, s)
			return err == nil, fmt.Sprint(err)
		})
	}
	restore("a-password-the-cluster-never-had")
	e.eventually(30*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		d := conditionMessageOf(sc.Status.Conditions, v1alpha1.ConditionDegraded)
		return strings.Contains(d, "holds another password"), d
	})
	restore(passwords[managed.OperatorUser])
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)

	// Nothing of the passwords in status or Events.
	status, _ := json.Marshal(sc.Status)
	var said strings.Builder
	said.Write(status)
	for _, ev := range e.events(sc.Name) {
		said.WriteString(ev.Note)
	}
	for u, pw := range passwords {
		if strings.Contains(said.String(), pw) {
			t.Errorf("%s's password shows in status or Events", u)
		}
	}
}

// shortLivedCertificates is a secured cluster of two nodes whose certificates are valid for
// 3 minutes and re-issued 40 s after issue (rotateBefore 140 s).
func shortLivedCertificates(namespace, name string) *v1alpha1.SearchCluster {
	return &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version:   "3.6.0",
		NodePools: []v1alpha1.NodePool{pool("nodes", v1alpha1.SIMDAuto, 2, "cluster_manager", "data")},
		Security: v1alpha1.ClusterSecurity{TLS: v1alpha1.ClusterTLS{
			CertificateValidity: &metav1.Duration{Duration: 3 * time.Minute}, RotateBefore: &metav1.Duration{Duration: 140 * time.Second}}},
	}}}
}

// TestSecurityOffIsAWarning: a cluster with security turned off says so in its Secured
// condition and a Warning Event, and gets no security material.
func TestSecurityOffIsAWarning(t *testing.T) {
	opts := fastOptions
	url := testsupport.OpenSearchURL(t)
	opts.ManagedEndpoint = func(*v1alpha1.SearchCluster) string { return url }
	e := startOperatorWith(t, opts)
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "open", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", Security: insecure,
		NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")},
	}}}
	e.create(sc)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionSecured, metav1.ConditionFalse, v1alpha1.ReasonSecurityDisabled, 30*time.Second)
	if note := e.waitEvent(sc.Name, v1alpha1.ReasonSecurityDisabled); !strings.Contains(note, "development only") {
		t.Errorf("event %q", note)
	}
	var s corev1.Secret
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.CASecretName(sc)}, &s); err == nil {
		t.Error("a CA for a cluster without security")
	}
	// Security cannot be switched on later: nodes with and without TLS form no cluster.
	err := e.tryUpdate(sc, func() { sc.Spec.Managed.Security.Enabled = nil })
	if err == nil || !strings.Contains(err.Error(), "spec.managed.security.enabled cannot change") {
		t.Errorf("switching security on: %v", err)
	}
}

// TestCertificatesNeverExpireOnARedCluster: a cluster that stays red and does not answer
// holds its rolling restarts, but not past its certificates: once the re-issued ones have
// waited half of rotateBefore, each pod still serving the old ones restarts onto them —
// one at a time — before the old ones end. status.certificates.servedNotAfter follows what
// the running pods serve: the old end until the last of them restarted, then the new.
func TestCertificatesNeverExpireOnARedCluster(t *testing.T) {
	waitsMostly(t)
	e := startRollingOperator(t, func(*v1alpha1.SearchCluster) string { return "https://127.0.0.1:1" }, &controlledHealth{health: rollout.Health{Status: "red"}})
	// Expiring (70 s left) 110 s after issue.
	sc := shortLivedCertificates(e.ns, "red")
	e.create(sc)
	k := playKubelet(e, sc, 2)
	var first time.Time
	e.eventually(60*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		c := sc.Status.Certificates
		if c == nil || c.ServedNotAfter == nil || len(sc.Status.Pools) == 0 || sc.Status.Pools[0].ReadyReplicas < 2 {
			return false, fmt.Sprintf("status.certificates %+v, pools %+v", c, sc.Status.Pools)
		}
		first = c.ServedNotAfter.Time
		return true, ""
	})
	issued := first.Add(-3 * time.Minute)
	k.resetWorst()
	// Re-issued at 40 s; the rollout holds on the red cluster meanwhile.
	e.eventually(90*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		r := sc.Status.Rollout
		return r != nil && r.BlockedBy == "cluster_health", fmt.Sprintf("rollout %+v", r)
	})
	if restarts, _, _ := k.snapshot(); len(restarts) > 0 {
		t.Errorf("restarted %v before the certificates were expiring, on a red cluster", restarts)
	}
	if c := sc.Status.Certificates; !c.NotAfter.After(first) || !c.ServedNotAfter.Equal(&metav1.Time{Time: first}) {
		t.Errorf("after the re-issue: notAfter %s, servedNotAfter %s; the pods serve the first ones, ending %s", c.NotAfter, c.ServedNotAfter, first)
	}
	// The first restart comes once they are expiring, both before the first ones end.
	e.eventually(time.Until(first), func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		restarts, _, _ := k.snapshot()
		return len(restarts) > 0, fmt.Sprintf("no restart yet, rollout %+v", sc.Status.Rollout)
	})
	if after := time.Since(issued); after < 105*time.Second {
		t.Errorf("the first restart came %s after issue, before the certificates were expiring (110 s)", after.Round(time.Second))
	}
	e.eventually(time.Until(first), func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		restarts, _, _ := k.snapshot()
		served := sc.Status.Certificates.ServedNotAfter
		return len(restarts) >= 2 && served != nil && served.After(first),
			fmt.Sprintf("restarts %v, servedNotAfter %v, rollout %+v", restarts, served, sc.Status.Rollout)
	})
	restarts, worst, _ := k.snapshot()
	t.Logf("certificates issued at %s; pods %v restarted onto the re-issued ones by %s, %s before the first ones ended",
		issued.Format(time.TimeOnly), restarts, time.Now().Format(time.TimeOnly), time.Until(first).Round(time.Second))
	if worst > 1 {
		t.Errorf("%d pods down at once: %s", worst, k.seenAtWorst())
	}
}

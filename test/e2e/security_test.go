package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/pki"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// securedClusterOnTheRealNode: a managed cluster with the default, security on, on the
// real node. The image built here has no security plugin, so OpenSearch itself cannot run
// secured here; what can run does: the operator's Deployment issues the CA and certificates
// into Secrets, the kubelet mounts them into the pod, the pod's init container refuses the
// plugin-less image and the cluster says SecurityPluginMissing; with a 3-minute validity the
// certificates are re-issued before expiry, the pod is restarted, and the certificates it
// mounts are the new ones (read from the kubelet's volume folder on this host).
func securedClusterOnTheRealNode(t *testing.T) {
	ctx := context.Background()
	const ns = "secured"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: sandbox.OpenSearchVersion,
		Image:   box.OpenSearchImage,
		NodePools: []v1alpha1.NodePool{{Name: "nodes", Roles: []v1alpha1.NodeRole{"cluster_manager", "data"}, Replicas: 1,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}},
		// Re-issued 40 s after issue.
		Security: v1alpha1.ClusterSecurity{TLS: v1alpha1.ClusterTLS{
			CertificateValidity: &metav1.Duration{Duration: 3 * time.Minute}, RotateBefore: &metav1.Duration{Duration: 140 * time.Second}}},
	}}}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })

	waitFor(t, 3*time.Minute, "SecurityPluginMissing", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded)
		return c != nil && c.Reason == v1alpha1.ReasonSecurityPluginMissing && strings.Contains(c.Message, "has no security plugin"),
			fmt.Sprintf("conditions %+v", sc.Status.Conditions)
	})
	t.Logf("Degraded: %s", meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded).Message)

	pod := managed.PoolName(sc, "nodes") + "-0"
	secretName := managed.CertsSecretName(sc, "nodes")
	first := mountedMatchesSecret(t, ns, pod, secretName, "")
	t.Logf("pod %s mounts the certificates issued at %s", pod, first.issuedAt)

	second := mountedMatchesSecret(t, ns, pod, secretName, first.issuedAt)
	if second.podUID == first.podUID {
		t.Fatal("the pod was not restarted onto its new certificates")
	}
	t.Logf("re-issued at %s; pod %s restarted (uid %s → %s) and mounts them", second.issuedAt, pod, first.podUID, second.podUID)
}

type mounted struct{ issuedAt, podUID string }

// mountedMatchesSecret waits until the certificates Secret was issued at a time other than
// notAt and the pod mounts exactly its certificates, then verifies the pod's HTTP
// certificate against the mounted CA bundle for each of the pod's names.
func mountedMatchesSecret(t *testing.T, ns, pod, secretName, notAt string) mounted {
	t.Helper()
	ctx := context.Background()
	var out mounted
	var s corev1.Secret
	var dir string
	waitFor(t, 3*time.Minute, "the pod to mount the certificates of its Secret", func() (bool, string) {
		var p corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &p); err != nil {
			return false, err.Error()
		}
		out = mounted{issuedAt: s.Annotations[controllers.IssuedAtAnnotation], podUID: string(p.UID)}
		if out.issuedAt == notAt {
			return false, "certificates still issued at " + notAt
		}
		if p.Annotations[managed.CertificatesAnnotation] != out.issuedAt {
			return false, fmt.Sprintf("pod %s started with certificates of %s, Secret has %s", p.UID, p.Annotations[managed.CertificatesAnnotation], out.issuedAt)
		}
		dir = cluster.SecretVolumeDir(string(p.UID), "certs")
		for key, want := range s.Data {
			got, err := os.ReadFile(filepath.Join(dir, key))
			if err != nil || !bytes.Equal(got, want) {
				return false, fmt.Sprintf("%s in the pod: %v", key, err)
			}
		}
		return true, ""
	})
	roots := x509.NewCertPool()
	ca, _ := os.ReadFile(filepath.Join(dir, managed.TrustBundleKey))
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the mounted CA bundle holds no certificate")
	}
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}}
	for _, key := range []string{managed.HTTPKey(pod), managed.TransportKey(pod)} {
		raw, _ := os.ReadFile(filepath.Join(dir, key+".crt"))
		c, err := pki.ParseCertificate(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range managed.TransportHosts(sc, "nodes", pod) {
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("mounted %s as %s: %v", key, host, err)
			}
		}
		if left := time.Until(c.NotAfter); left <= 0 || left > 3*time.Minute {
			t.Errorf("mounted %s valid for %s more", key, left)
		}
	}
	return out
}

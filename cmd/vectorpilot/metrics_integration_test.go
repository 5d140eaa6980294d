package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/operator"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.Kube)) }

// TestMetricsNeedATokenAllowedToReadThem runs the manager as its command does, with the
// default secure metrics: a scrape without a token is refused (401), a token whose service
// account may not GET /metrics is forbidden (403), and one bound to a ClusterRole that
// allows it reads the operator's metrics — the API server decides, by TokenReview and
// SubjectAccessReview.
func TestMetricsNeedATokenAllowedToReadThem(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	ns := fmt.Sprintf("metrics-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader := ns + "-metrics-reader"
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prometheus, nobody := token("prometheus"), token("nobody")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(runCtx, cp.Config, operator.Options{MetricsAddr: addr, MetricsSecure: true, ProbeAddr: "0", WatchNamespace: ns, SkipNameValidation: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// The certificate is the manager's own self-signed one: trust is the scraper's
	// configuration (insecureSkipVerify in the ServiceMonitor, or a mounted certificate).
	web := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	scrape := func(bearer string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := web.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	var code int
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// The metrics server starts before the controllers register their series.
		code, body, err = scrape(prometheus)
		if err == nil && code == http.StatusOK && strings.Contains(body, `controller_runtime_reconcile_total{controller="vectorindex"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an authorized scrape: %d %v %.200s", code, err, body)
		}
	}
	if code, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: %d %v, want 401", code, err)
	}
	if code, _, err := scrape(nobody); err != nil || code != http.StatusForbidden {
		t.Errorf("a scrape with a token not allowed /metrics: %d %v, want 403", code, err)
	}
	// controller-runtime answers a token the API server cannot review with 500, not 401:
	// refused all the same.
	if code, _, err := scrape("not-a-token"); err != nil || code == http.StatusOK {
		t.Errorf("a scrape with a forged token: %d %v, want it refused", code, err)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served the metrics")
		}
	}
}

package controllers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
)

// TestSecretsNeedTheirOwnersConsent: whoever may create a SearchCluster but not read
// Secrets cannot have the operator hand them one. A Secret without the consent annotation,
// named as an external cluster's credentials, is never sent to the endpoint (here a server
// that records what it is sent and answers like a cloud metadata service), nor mounted as a
// managed cluster's keystore (no StatefulSet is made); the cluster says why
// (SecretNotAllowed). The endpoint's answer never reaches status. Once the Secret's owner
// consents for that cluster, its credentials go.
func TestSecretsNeedTheirOwnersConsent(t *testing.T) {
	e := startOperator(t)
	const leak = "AKIA-INSTANCE-CREDENTIALS"
	var mu sync.Mutex
	var sent []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			sent = append(sent, a)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<html>role vectorpilot-node: %s</html>", leak)
	}))
	t.Cleanup(collector.Close)
	authorizations := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), sent...)
	}

	team := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-credentials", Namespace: e.ns},
		StringData: map[string]string{"username": "team", "password": "team-password"}}
	e.create(team)
	exfil := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "exfil", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{
		External: &v1alpha1.ExternalCluster{Endpoint: collector.URL, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: team.Name}}}}
	e.create(exfil)
	mounted := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "mounted", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", Security: insecure, Keystore: []v1alpha1.KeystoreSecret{{SecretName: team.Name}},
		NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")},
	}}}
	e.create(mounted)
	for _, sc := range []*v1alpha1.SearchCluster{exfil, mounted} {
		e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSecretNotAllowed, 30*time.Second)
		c := sc.Status.Conditions
		t.Logf("%s: %s", sc.Name, conditionMessageOf(c, v1alpha1.ConditionDegraded))
		if !strings.Contains(conditionMessageOf(c, v1alpha1.ConditionDegraded), connect.ConsentAnnotation) {
			t.Errorf("%s: the condition does not say which annotation the Secret's owner adds", sc.Name)
		}
	}
	if got := authorizations(); len(got) != 0 {
		t.Errorf("credentials of a Secret that did not consent were sent to the endpoint: %v", got)
	}
	var sets appsv1.StatefulSetList
	if err := e.k8s.List(e.ctx, &sets, client.InNamespace(e.ns)); err != nil || len(sets.Items) != 0 {
		t.Errorf("a cluster whose keystore Secret did not consent got %d StatefulSets (%v)", len(sets.Items), err)
	}

	// Consent for one cluster only: exfil may use it, mounted still may not.
	e.update(team, func() { team.Annotations = map[string]string{connect.ConsentAnnotation: "exfil"} })
	e.eventually(30*time.Second, func() (bool, string) { return len(authorizations()) > 0, "no request with credentials yet" })
	e.eventually(30*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(exfil), exfil)
		d := conditionMessageOf(exfil.Status.Conditions, v1alpha1.ConditionDegraded)
		return !strings.Contains(d, connect.ConsentAnnotation) && d != "", "degraded: " + d
	})
	for _, c := range exfil.Status.Conditions {
		if strings.Contains(c.Message, leak) {
			t.Errorf("condition %s echoes the endpoint's answer: %s", c.Type, c.Message)
		}
	}
	t.Logf("exfil, consented: %s", conditionMessageOf(exfil.Status.Conditions, v1alpha1.ConditionDegraded))
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(mounted), mounted); err != nil {
		t.Fatal(err)
	}
	if d := conditionMessageOf(mounted.Status.Conditions, v1alpha1.ConditionDegraded); !strings.Contains(d, "does not allow SearchCluster mounted") {
		t.Errorf("mounted, not named in the consent: %s", d)
	}
}

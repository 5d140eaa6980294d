package controllers_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestExternalClusterTLSAndAuthentication runs the TLS and authentication matrix against a
// real TLS-terminating, password-checking server (nginx, certificates from a private CA)
// in front of the real node: the right CA is Ready, no CA or another CA is TLSError,
// insecureSkipVerify is Ready with a Warning Event, a wrong password is Unauthorized, and a
// password rotated on the server and then in the Secret is picked up without a restart.
// Nothing of the passwords shows in status or Events.
func TestExternalClusterTLSAndAuthentication(t *testing.T) {
	e := startOperator(t)
	const first, second = "first-s3cr3t-never-shown", "second-s3cr3t-never-shown"
	proxy, err := devenv.StartTLSProxy(testsupport.Root(t), testsupport.OpenSearchURL(t), map[string]string{"vectorpilot": first})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Stop() })
	e.create(secret(e.ns, "ca", map[string]string{"ca.crt": string(proxy.CA)}))
	e.create(secret(e.ns, "other-ca", map[string]string{"ca.crt": string(proxy.WrongCA)}))
	e.create(secret(e.ns, "credentials", map[string]string{"username": "vectorpilot", "password": first}))
	e.create(secret(e.ns, "wrong-credentials", map[string]string{"username": "vectorpilot", "password": "not-it"}))
	ref := func(name string) *v1alpha1.LocalObjectReference { return &v1alpha1.LocalObjectReference{Name: name} }
	cluster := func(name string, ext v1alpha1.ExternalCluster) *v1alpha1.SearchCluster {
		ext.Endpoint = proxy.URL
		sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{External: &ext}}
		e.create(sc)
		return sc
	}
	conds := func(sc *v1alpha1.SearchCluster) func() []metav1.Condition {
		return func() []metav1.Condition { return sc.Status.Conditions }
	}

	trusted := cluster("vectors", v1alpha1.ExternalCluster{CASecretRef: ref("ca"), CredentialsSecretRef: ref("credentials")})
	noCA := cluster("no-ca", v1alpha1.ExternalCluster{CredentialsSecretRef: ref("credentials")})
	otherCA := cluster("other-ca", v1alpha1.ExternalCluster{CASecretRef: ref("other-ca"), CredentialsSecretRef: ref("credentials")})
	skip := cluster("skip-verify", v1alpha1.ExternalCluster{InsecureSkipVerify: true, CredentialsSecretRef: ref("credentials")})
	wrongPassword := cluster("wrong-password", v1alpha1.ExternalCluster{CASecretRef: ref("ca"), CredentialsSecretRef: ref("wrong-credentials")})
	anonymous := cluster("anonymous", v1alpha1.ExternalCluster{CASecretRef: ref("ca")})

	e.waitCondition(trusted, conds(trusted), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)
	vi := luceneIndex(e, "over-tls")
	e.create(vi)
	e.waitIndexReady(vi)
	for _, sc := range []*v1alpha1.SearchCluster{noCA, otherCA} {
		e.waitCondition(sc, conds(sc), v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonTLSError, 30*time.Second)
		if msg := conditionMessageOf(sc.Status.Conditions, v1alpha1.ConditionDegraded); !strings.Contains(msg, "unknown authority") {
			t.Errorf("%s: TLSError message %q does not name the problem", sc.Name, msg)
		}
	}
	e.waitCondition(skip, conds(skip), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)
	e.waitEvent(skip.Name, "InsecureSkipVerify")
	for _, sc := range []*v1alpha1.SearchCluster{wrongPassword, anonymous} {
		e.waitCondition(sc, conds(sc), v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnauthorized, 30*time.Second)
	}

	// The password is rotated on the server: refused until the Secret has the new one too,
	// which the running operator picks up by itself.
	if err := proxy.SetUsers(map[string]string{"vectorpilot": second}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(trusted, conds(trusted), v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnauthorized, 30*time.Second)
	s := secret(e.ns, "credentials", nil)
	e.update(s, func() { s.StringData = map[string]string{"username": "vectorpilot", "password": second} })
	e.waitCondition(trusted, conds(trusted), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)
	e.waitIndexReady(vi)

	for _, sc := range []*v1alpha1.SearchCluster{trusted, noCA, otherCA, skip, wrongPassword, anonymous} {
		for _, o := range []any{sc.Status, e.events(sc.Name)} {
			if b, _ := json.Marshal(o); strings.Contains(string(b), first) || strings.Contains(string(b), second) {
				t.Errorf("a password is visible in %s", b)
			}
		}
	}
	for _, o := range []any{vi.Status, e.events(vi.Name)} {
		if b, _ := json.Marshal(o); strings.Contains(string(b), first) || strings.Contains(string(b), second) {
			t.Errorf("a password is visible in %s", b)
		}
	}
}

package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

// TestAnUpgradedOperatorKeepsWhatAClusterMeant: a managed cluster an older operator ran
// before security, the NetworkPolicy and mmap existed has none of those fields in etcd (the
// test writes it so, with the status that operator left). The operator of today must keep
// running it as it ran — plain HTTP, no policy, nodes mapping files — record that in its
// spec, and let its owner opt in where the API allows; a cluster created now gets today's
// defaults. With CRD defaults, the old cluster was read as secured and closed: the operator
// switched its client to HTTPS, created a policy that cut every application off and
// rewrote its pods so a recreated one could not join.
func TestAnUpgradedOperatorKeepsWhatAClusterMeant(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	spec := func() *v1alpha1.ManagedCluster {
		return &v1alpha1.ManagedCluster{Version: "3.6.0", NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")}}
	}
	old := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: v1alpha1.SearchClusterSpec{Managed: spec()}}
	opts := fastOptions
	opts.ManagedEndpoint = func(*v1alpha1.SearchCluster) string { return url }
	health := &controlledHealth{health: rollout.Health{Status: "green"}}
	opts.ClusterHealth = health
	e := startOperatorOver(t, opts, func(e *env) {
		old.Namespace = e.ns
		e.create(old)
		old.Status.ObservedGeneration = old.Generation
		if err := e.k8s.Status().Update(e.ctx, old); err != nil {
			t.Fatal(err)
		}
	})
	health.mu.Lock()
	health.pods = e.k8s
	health.mu.Unlock()
	ensureNodes(e)
	releaseNodes(e)
	fresh := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: spec()}}
	e.create(fresh)
	playKubelet(e, old, 1)

	recorded := func(sc *v1alpha1.SearchCluster, security, policy bool, mmap v1alpha1.MMapMode) {
		t.Helper()
		e.eventually(30*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
				return false, err.Error()
			}
			m := sc.Spec.Managed
			got := fmt.Sprintf("security.enabled %v, networkPolicy.enabled %v, mmap %q", ptr.Deref(m.Security.Enabled, !security), ptr.Deref(m.NetworkPolicy.Enabled, !policy), m.MMap)
			return m.Security.Enabled != nil && *m.Security.Enabled == security && m.NetworkPolicy.Enabled != nil && *m.NetworkPolicy.Enabled == policy && m.MMap == mmap, sc.Name + ": " + got
		})
	}
	recorded(old, false, false, v1alpha1.MMapNodeConfigured)
	if note := e.waitEvent(old.Name, "DefaultsRecorded"); !strings.Contains(note, "before this operator version") {
		t.Errorf("the Event does not say the old meaning was kept: %q", note)
	}
	recorded(fresh, true, true, v1alpha1.MMapDisabled)

	// The old cluster runs as it ran: served over plain HTTP (the probe reaches the plain
	// node), nodes without the security plugin and free to map files, no policy.
	e.waitCondition(old, func() []metav1.Condition { return old.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)
	if !strings.HasPrefix(old.Status.Endpoint, "http://") {
		t.Errorf("status.endpoint %q, want the plain-HTTP endpoint it had", old.Status.Endpoint)
	}
	var sts appsv1.StatefulSet
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.PoolName(old, "all")}, &sts); err != nil {
		t.Fatal(err)
	}
	if env := sts.Spec.Template.Spec.Containers[0].Env; !hasEnv(env, "DISABLE_SECURITY_PLUGIN", "true") {
		t.Errorf("the old cluster's nodes were given the security plugin: env %v", env)
	}
	var cm corev1.ConfigMap
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.ConfigName(old, "all")}, &cm); err != nil {
		t.Fatal(err)
	}
	for _, yml := range cm.Data {
		if strings.Contains(yml, "allow_mmap") {
			t.Errorf("the old cluster's nodes were told not to map files:\n%s", yml)
		}
	}
	policy := func(sc *v1alpha1.SearchCluster) error {
		return e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.NetworkPolicyName(sc)}, &networkingv1.NetworkPolicy{})
	}
	e.eventually(20*time.Second, func() (bool, string) {
		err := policy(fresh)
		return err == nil, fmt.Sprintf("the new cluster has no NetworkPolicy: %v", err)
	})
	if err := policy(old); !apierrors.IsNotFound(err) {
		t.Errorf("the old cluster was closed by a NetworkPolicy nobody asked for: %v", err)
	}

	// Opting in and out where the API allows: the policy can be turned on; security cannot
	// change on a running cluster, and a recorded field cannot be removed.
	e.update(old, func() { old.Spec.Managed.NetworkPolicy.Enabled = ptr.To(true) })
	e.eventually(20*time.Second, func() (bool, string) {
		err := policy(old)
		return err == nil, fmt.Sprintf("opted in, the old cluster has no NetworkPolicy: %v", err)
	})
	for _, refused := range []struct {
		change func(*v1alpha1.ManagedCluster)
		field  string
	}{
		{func(m *v1alpha1.ManagedCluster) { m.Security.Enabled = ptr.To(true) }, "spec.managed.security.enabled cannot change"},
		{func(m *v1alpha1.ManagedCluster) { m.Security.Enabled = nil }, "spec.managed.security.enabled cannot change or be removed"},
		{func(m *v1alpha1.ManagedCluster) { m.NetworkPolicy.Enabled = nil }, "spec.managed.networkPolicy.enabled cannot be removed"},
		{func(m *v1alpha1.ManagedCluster) { m.MMap = "" }, "spec.managed.mmap cannot be removed"},
	} {
		if err := e.k8s.Get(e.ctx, clientKey(old), old); err != nil {
			t.Fatal(err)
		}
		refused.change(old.Spec.Managed)
		if err := e.k8s.Update(e.ctx, old); err == nil || !strings.Contains(err.Error(), refused.field) {
			t.Errorf("update accepted or refused for another reason, want %q: %v", refused.field, err)
		}
	}
}

// hasEnv says whether env sets name to value.
func hasEnv(env []corev1.EnvVar, name, value string) bool {
	for _, v := range env {
		if v.Name == name {
			return v.Value == value
		}
	}
	return false
}

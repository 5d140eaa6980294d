package controllers_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
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
	var oldSts *appsv1.StatefulSet
	e := startOperatorOver(t, opts, func(e *env) {
		old.Namespace = e.ns
		e.create(old)
		old.Status.ObservedGeneration = old.Generation
		if err := e.k8s.Status().Update(e.ctx, old); err != nil {
			t.Fatal(err)
		}
		oldSts = renderedByAnOlderOperator(e, old)
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
	// Its pods keep the template and configuration the older operator rendered (no pod
	// restarts), adopted: the StatefulSet now says what they were rendered from.
	if sts.Generation != oldSts.Generation || sts.Spec.Template.Annotations[olderRendering] == "" || sts.Annotations[managed.RenderedFromAnnotation] == "" {
		t.Errorf("the older operator's pod template was replaced (generation %d → %d, template annotations %v) or not adopted (annotations %v)",
			oldSts.Generation, sts.Generation, sts.Spec.Template.Annotations, sts.Annotations)
	}
	var cm corev1.ConfigMap
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.ConfigName(old, "all")}, &cm); err != nil {
		t.Fatal(err)
	}
	for _, yml := range cm.Data {
		if strings.Contains(yml, "allow_mmap") {
			t.Errorf("the old cluster's nodes were told not to map files:\n%s", yml)
		}
		if !strings.Contains(yml, olderSetting) {
			t.Errorf("the older operator's configuration was replaced:\n%s", yml)
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
	// A change of the spec renders the pool this operator's way (its pods then roll).
	e.eventually(20*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(&sts), &sts); err != nil {
			return false, err.Error()
		}
		return sts.Spec.Template.Annotations[olderRendering] == "", fmt.Sprintf("after a spec change the template still is the older operator's: %v", sts.Spec.Template.Annotations)
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
		err := e.tryUpdate(old, func() { refused.change(old.Spec.Managed) })
		if err == nil || !strings.Contains(err.Error(), refused.field) {
			t.Errorf("update accepted or refused for another reason, want %q: %v", refused.field, err)
		}
	}
}

// olderRendering and olderSetting mark what renderedByAnOlderOperator rendered differently
// from today's operator: a pod template annotation and a node setting.
const (
	olderRendering = "test.vectorpilot.io/older-operator"
	olderSetting   = "node.attr.older_operator"
)

// renderedByAnOlderOperator creates sc's pool objects as an operator that renders pods
// differently left them (without the rendered-from annotation, which it did not know), as
// the cluster means them: security and the policy off, nodes free to map files.
func renderedByAnOlderOperator(e *env, sc *v1alpha1.SearchCluster) *appsv1.StatefulSet {
	e.t.Helper()
	meant := sc.DeepCopy()
	meant.Spec.Managed.Security.Enabled, meant.Spec.Managed.NetworkPolicy.Enabled = ptr.To(false), ptr.To(false)
	meant.Spec.Managed.MMap = v1alpha1.MMapNodeConfigured
	pool, err := managed.BuildPool(meant, meant.Spec.Managed.NodePools[0], managed.Live{})
	if err != nil {
		e.t.Fatal(err)
	}
	pool.StatefulSet.Annotations = nil
	pool.StatefulSet.Spec.Template.Annotations[olderRendering] = "true"
	pool.ConfigMap.Data = maps.Clone(pool.ConfigMap.Data)
	for k, v := range pool.ConfigMap.Data {
		pool.ConfigMap.Data[k] = v + olderSetting + ": \"true\"\n"
	}
	// Applied as the operator applies, under its field manager: what it stops rendering
	// later goes.
	for _, obj := range []client.Object{pool.ConfigMap, pool.StatefulSet} {
		if err := controllerutil.SetControllerReference(sc, obj, e.k8s.Scheme()); err != nil {
			e.t.Fatal(err)
		}
		content, err := managed.Content(obj)
		if err != nil {
			e.t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		if err := e.k8s.Apply(e.ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("vectorpilot"), client.ForceOwnership); err != nil {
			e.t.Fatal(err)
		}
	}
	var sts appsv1.StatefulSet
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(pool.StatefulSet), &sts); err != nil {
		e.t.Fatal(err)
	}
	return &sts
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

package controllers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// TestObjectsItDidNotMakeAreNeverTakenOver: a ConfigMap, a Service and a Secret that a user
// made under the names a managed cluster's objects would take are left as they are — no
// owner reference (the cluster's deletion would garbage-collect them), no data replaced —
// and the cluster says so (NameConflict, naming the object).
func TestObjectsItDidNotMakeAreNeverTakenOver(t *testing.T) {
	e := startOperator(t)
	plain := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", Security: insecure, NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")}}}}
	secured := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "secured", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")}}}}
	service := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "service", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", Security: insecure, NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")}}}}
	users := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: managed.ConfigName(plain, "all"), Namespace: e.ns}, Data: map[string]string{"app.yaml": "mine"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: managed.CASecretName(secured), Namespace: e.ns}, StringData: map[string]string{"token": "mine"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: managed.ClientServiceName(service), Namespace: e.ns},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 8080}}}},
	}
	for _, o := range users {
		e.create(o)
	}
	for _, sc := range []*v1alpha1.SearchCluster{plain, secured, service} {
		e.create(sc)
	}
	for i, sc := range []*v1alpha1.SearchCluster{plain, secured, service} {
		e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonNameConflict, 30*time.Second)
		t.Logf("%s: %s", sc.Name, conditionMessageOf(sc.Status.Conditions, v1alpha1.ConditionDegraded))
		o := users[i]
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if len(o.GetOwnerReferences()) != 0 {
			t.Errorf("%s: the user's %s was taken over: owners %v", sc.Name, o.GetName(), o.GetOwnerReferences())
		}
	}
	if cm := users[0].(*corev1.ConfigMap); cm.Data["app.yaml"] != "mine" || len(cm.Data) != 1 {
		t.Errorf("the user's ConfigMap was rewritten: %v", cm.Data)
	}
	if s := users[1].(*corev1.Secret); string(s.Data["token"]) != "mine" || len(s.Data) != 1 {
		t.Errorf("the user's Secret was rewritten: keys %d", len(s.Data))
	}
	if svc := users[2].(*corev1.Service); len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "web" {
		t.Errorf("the user's Service was rewritten: %+v", svc.Spec.Ports)
	}
}

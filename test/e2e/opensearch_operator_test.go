package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// searchClusterOfAnOpenSearchOperatorCluster: a SearchCluster that names an
// OpenSearchCluster of the OpenSearch operator instead of an endpoint, on the real node.
// That operator's module is not served here, so its CRD is one of the fields read
// (schema-less beyond them) and its cluster is the sandbox's managed one: the
// OpenSearchCluster's serviceName is that cluster's client Service, and its admin
// credentials Secret is laid out as that operator makes it (<cluster>-admin-password).
// The operator's pod reads the OpenSearchCluster under the chart's ClusterRole, refuses
// the admin credentials until their Secret consents, then reaches the cluster by the
// Service's DNS name and is Ready with the version the cluster reports; an
// OpenSearchCluster deleted is OpenSearchClusterNotFound at the next probe.
func searchClusterOfAnOpenSearchOperatorCluster(t *testing.T) {
	ctx := context.Background()
	managedSC := &v1alpha1.SearchCluster{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: "vectors"}, managedSC); err != nil {
		t.Fatalf("the sandbox's managed cluster (TestManagedClusterServesVectorsFromPods): %v", err)
	}
	gvk := connect.OpenSearchClusterKinds[0]
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "opensearchclusters." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "opensearchclusters", Singular: "opensearchcluster", Kind: gvk.Kind, ListKind: gvk.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvk.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := k8s.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
	waitFor(t, time.Minute, "the OpenSearchCluster CRD to be established", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", crd.Status.Conditions)
	})

	osc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"general": map[string]any{"serviceName": managed.ClientServiceName(managedSC), "httpPort": int64(managed.HTTPPort), "version": managedSC.Spec.Managed.Version},
	}}}
	osc.SetGroupVersionKind(gvk)
	osc.SetNamespace(searchNamespace)
	osc.SetName("operated")
	waitFor(t, time.Minute, "the OpenSearchCluster to be created", func() (bool, string) {
		err := k8s.Create(ctx, osc)
		return err == nil, fmt.Sprint(err) // the new kind reaches the API server's discovery shortly after
	})
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), osc) })
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: searchNamespace, Name: "operated-admin-password"},
		StringData: map[string]string{connect.UsernameKey: "admin", connect.PasswordKey: "admin-password"}}
	if err := k8s.Create(ctx, admin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), admin) })

	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: searchNamespace, Name: "operated"},
		Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{OpenSearchClusterRef: &v1alpha1.LocalObjectReference{Name: "operated"}}}}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	degradedBy := func(reason string) func() (bool, string) {
		return func() (bool, string) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason, fmt.Sprintf("conditions %+v", sc.Status.Conditions)
		}
	}
	waitFor(t, 2*time.Minute, "SecretNotAllowed while the admin credentials do not consent", degradedBy(v1alpha1.ReasonSecretNotAllowed))
	t.Logf("before consent: %s", meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded).Message)

	admin.Annotations = map[string]string{connect.ConsentAnnotation: sc.Name}
	if err := k8s.Update(ctx, admin); err != nil {
		t.Fatal(err)
	}
	waitReady(t, sc, func() []metav1.Condition { return sc.Status.Conditions }, 3*time.Minute)
	want := fmt.Sprintf("http://%s.%s.svc:%d", managed.ClientServiceName(managedSC), searchNamespace, managed.HTTPPort)
	if sc.Status.Endpoint != want || sc.Status.Version == "" || sc.Status.Version != managedSC.Status.Version {
		t.Errorf("endpoint %q, version %q; want %q and the managed cluster's %q", sc.Status.Endpoint, sc.Status.Version, want, managedSC.Status.Version)
	}
	t.Logf("Ready: endpoint %s, OpenSearch %s, %d nodes, health %s", sc.Status.Endpoint, sc.Status.Version, sc.Status.Nodes, sc.Status.Health)

	if err := k8s.Delete(ctx, osc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "OpenSearchClusterNotFound once it is gone", degradedBy(v1alpha1.ReasonOpenSearchClusterNotFound))
	t.Logf("after its deletion: %s", meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded).Message)
}

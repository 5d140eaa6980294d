package connect

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// openSearchClusterOf is an OpenSearchCluster of kind gvk named my-cluster in ns "search",
// its spec as the OpenSearch operator's API types serialize it.
func openSearchClusterOf(gvk schema.GroupVersionKind, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("search")
	u.SetName("my-cluster")
	return u
}

// TestOpenSearchClusterConnection: the endpoint, CA Secret and credentials Secret read
// from an OpenSearchCluster as the OpenSearch operator sets the cluster up.
func TestOpenSearchClusterConnection(t *testing.T) {
	general := map[string]any{"serviceName": "my-cluster", "version": "3.6.0"}
	for _, tc := range []struct {
		name   string
		spec   map[string]any
		want   Connection
		reason string
	}{
		{"generated HTTP certificate, defaults", map[string]any{"general": general,
			"security": map[string]any{"tls": map[string]any{"http": map[string]any{"generate": true}}}},
			Connection{Endpoint: "https://my-cluster.search.svc:9200", CASecret: "my-cluster-http-cert", CredentialsSecret: "my-cluster-admin-password"}, ""},
		{"own certificate with its CA in it, own port and admin Secret", map[string]any{
			"general": map[string]any{"serviceName": "search-api", "httpPort": int64(9443)},
			"security": map[string]any{"config": map[string]any{"adminCredentialsSecret": map[string]any{"name": "admin-creds"}},
				"tls": map[string]any{"http": map[string]any{"secret": map[string]any{"name": "http-tls"}}}}},
			Connection{Endpoint: "https://search-api.search.svc:9443", CASecret: "http-tls", CredentialsSecret: "admin-creds"}, ""},
		{"own certificate, CA in a Secret of its own", map[string]any{"general": general,
			"security": map[string]any{"tls": map[string]any{"http": map[string]any{"secret": map[string]any{"name": "http-tls"}, "caSecret": map[string]any{"name": "http-ca"}}}}},
			Connection{Endpoint: "https://my-cluster.search.svc:9200", CASecret: "http-ca", CredentialsSecret: "my-cluster-admin-password"}, ""},
		{"HTTP TLS turned off", map[string]any{"general": general,
			"security": map[string]any{"tls": map[string]any{"http": map[string]any{"enabled": false, "generate": true}}}},
			Connection{Endpoint: "http://my-cluster.search.svc:9200", CredentialsSecret: "my-cluster-admin-password"}, ""},
		{"no security section: plain HTTP", map[string]any{"general": general},
			Connection{Endpoint: "http://my-cluster.search.svc:9200", CredentialsSecret: "my-cluster-admin-password"}, ""},
		{"no service name", map[string]any{"general": map[string]any{"version": "3.6.0"}}, Connection{}, v1alpha1.ReasonOpenSearchClusterInvalid},
	} {
		got, err := OpenSearchClusterConnection(openSearchClusterOf(OpenSearchClusterKinds[0], tc.spec))
		var ce *Error
		if got != tc.want || (tc.reason == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Reason != tc.reason)) {
			t.Errorf("%s: %+v, %v; want %+v, reason %q", tc.name, got, err, tc.want, tc.reason)
		}
	}
}

// TestExternalConnection: an external cluster is reached as written, or as its
// OpenSearchCluster says in whichever of the two API groups the cluster serves, its own
// credentialsSecretRef and caSecretRef first; a missing one is OpenSearchClusterNotFound.
func TestExternalConnection(t *testing.T) {
	spec := map[string]any{"general": map[string]any{"serviceName": "my-cluster"},
		"security": map[string]any{"tls": map[string]any{"http": map[string]any{"generate": true}}}}
	ref := func(name string) *v1alpha1.LocalObjectReference { return &v1alpha1.LocalObjectReference{Name: name} }
	sc := func(ext v1alpha1.ExternalCluster) *v1alpha1.SearchCluster {
		return &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "vectors"}, Spec: v1alpha1.SearchClusterSpec{External: &ext}}
	}
	for _, tc := range []struct {
		name    string
		served  []schema.GroupVersionKind // the kinds the API server serves
		objects []*unstructured.Unstructured
		sc      *v1alpha1.SearchCluster
		want    Connection
		reason  string
	}{
		{"an endpoint as written", nil, nil,
			sc(v1alpha1.ExternalCluster{Endpoint: "https://os:9200", CredentialsSecretRef: ref("creds"), CASecretRef: ref("ca"), InsecureSkipVerify: true}),
			Connection{Endpoint: "https://os:9200", CredentialsSecret: "creds", CASecret: "ca", InsecureSkipVerify: true}, ""},
		{"opensearch.org", OpenSearchClusterKinds, []*unstructured.Unstructured{openSearchClusterOf(OpenSearchClusterKinds[0], spec)},
			sc(v1alpha1.ExternalCluster{OpenSearchClusterRef: ref("my-cluster")}),
			Connection{Endpoint: "https://my-cluster.search.svc:9200", CASecret: "my-cluster-http-cert", CredentialsSecret: "my-cluster-admin-password"}, ""},
		{"opensearch.opster.io only, own user and CA", OpenSearchClusterKinds[1:], []*unstructured.Unstructured{openSearchClusterOf(OpenSearchClusterKinds[1], spec)},
			sc(v1alpha1.ExternalCluster{OpenSearchClusterRef: ref("my-cluster"), CredentialsSecretRef: ref("vectorpilot-user"), CASecretRef: ref("corp-ca")}),
			Connection{Endpoint: "https://my-cluster.search.svc:9200", CASecret: "corp-ca", CredentialsSecret: "vectorpilot-user"}, ""},
		{"served, none by that name", OpenSearchClusterKinds, nil,
			sc(v1alpha1.ExternalCluster{OpenSearchClusterRef: ref("my-cluster")}), Connection{}, v1alpha1.ReasonOpenSearchClusterNotFound},
		{"the OpenSearch operator not installed", nil, nil,
			sc(v1alpha1.ExternalCluster{OpenSearchClusterRef: ref("my-cluster")}), Connection{}, v1alpha1.ReasonOpenSearchClusterNotFound},
	} {
		scheme := runtime.NewScheme()
		mapper := meta.NewDefaultRESTMapper(nil)
		for _, gvk := range tc.served {
			scheme.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
			mapper.Add(gvk, meta.RESTScopeNamespace)
		}
		b := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper)
		for _, o := range tc.objects {
			b = b.WithObjects(o)
		}
		got, err := ExternalConnection(context.Background(), b.Build(), tc.sc)
		var ce *Error
		if got != tc.want || (tc.reason == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Reason != tc.reason)) {
			t.Errorf("%s: %+v, %v; want %+v, reason %q", tc.name, got, err, tc.want, tc.reason)
		}
	}
}

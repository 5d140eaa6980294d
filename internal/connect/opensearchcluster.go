package connect

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// Connection is where and how the operator reaches an external cluster: its endpoint,
// the Secret of its credentials (used only with that Secret's consent) and the Secret
// whose ca.crt verifies its certificate; empty names for none.
type Connection struct {
	Endpoint           string
	CredentialsSecret  string
	CASecret           string
	InsecureSkipVerify bool
}

// OpenSearchClusterKinds are the OpenSearch operator's OpenSearchCluster kinds, the
// current API group first: opensearch.org from its 3.0 line, opensearch.opster.io before.
var OpenSearchClusterKinds = []schema.GroupVersionKind{
	{Group: "opensearch.org", Version: "v1", Kind: "OpenSearchCluster"},
	{Group: "opensearch.opster.io", Version: "v1", Kind: "OpenSearchCluster"},
}

// ExternalConnection is how sc.Spec.External is reached: as it is written, or read from
// the OpenSearchCluster it names; its own credentialsSecretRef and caSecretRef come first.
func ExternalConnection(ctx context.Context, reader client.Reader, sc *v1alpha1.SearchCluster) (Connection, error) {
	ext := sc.Spec.External
	if ext == nil {
		return Connection{}, &Error{Reason: v1alpha1.ReasonClusterNotReady, Message: "SearchCluster " + sc.Name + " has neither spec.external nor spec.managed"}
	}
	conn := Connection{Endpoint: ext.Endpoint, InsecureSkipVerify: ext.InsecureSkipVerify}
	if ref := ext.OpenSearchClusterRef; ref != nil {
		obj, err := openSearchCluster(ctx, reader, sc.Namespace, ref.Name)
		if err != nil {
			return Connection{}, err
		}
		if conn, err = OpenSearchClusterConnection(obj); err != nil {
			return Connection{}, err
		}
		conn.InsecureSkipVerify = ext.InsecureSkipVerify
	}
	if ref := ext.CredentialsSecretRef; ref != nil {
		conn.CredentialsSecret = ref.Name
	}
	if ref := ext.CASecretRef; ref != nil {
		conn.CASecret = ref.Name
	}
	return conn, nil
}

// openSearchCluster reads the OpenSearchCluster name of namespace, of whichever API group
// the cluster serves.
func openSearchCluster(ctx context.Context, reader client.Reader, namespace, name string) (*unstructured.Unstructured, error) {
	for _, gvk := range OpenSearchClusterKinds {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
		switch {
		case err == nil:
			return obj, nil
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
			continue
		default:
			return nil, err
		}
	}
	return nil, &Error{Reason: v1alpha1.ReasonOpenSearchClusterNotFound, Message: fmt.Sprintf(
		"OpenSearchCluster %s/%s not found (API groups %s and %s; is the OpenSearch operator installed?)", namespace, name,
		OpenSearchClusterKinds[0].Group, OpenSearchClusterKinds[1].Group)}
}

// OpenSearchClusterConnection reads a connection from an OpenSearchCluster as the
// OpenSearch operator sets its cluster up: the endpoint its service DNS name and HTTP port
// (9200 unless set), over TLS when the HTTP layer has it (security.tls.http set and not
// disabled); the CA the ca.crt of the HTTP certificate's Secret (<name>-http-cert when
// the operator generates it, else http.caSecret or http.secret); the credentials its
// admin credentials Secret (security.config.adminCredentialsSecret, else the
// <name>-admin-password Secret the operator generates).
func OpenSearchClusterConnection(obj *unstructured.Unstructured) (Connection, error) {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(obj.Object, path...)
		return v
	}
	service := str("spec", "general", "serviceName")
	if service == "" {
		return Connection{}, &Error{Reason: v1alpha1.ReasonOpenSearchClusterInvalid, Message: fmt.Sprintf(
			"OpenSearchCluster %s/%s has no spec.general.serviceName to reach it by", obj.GetNamespace(), obj.GetName())}
	}
	port, found, _ := unstructured.NestedInt64(obj.Object, "spec", "general", "httpPort")
	if !found || port == 0 {
		port = 9200
	}
	httpTLS := []string{"spec", "security", "tls", "http"}
	_, tls, _ := unstructured.NestedMap(obj.Object, httpTLS...)
	if enabled, set, _ := unstructured.NestedBool(obj.Object, append(httpTLS, "enabled")...); set {
		tls = tls && enabled
	}
	conn := Connection{CredentialsSecret: str("spec", "security", "config", "adminCredentialsSecret", "name")}
	if conn.CredentialsSecret == "" {
		conn.CredentialsSecret = obj.GetName() + "-admin-password"
	}
	scheme := "http"
	if tls {
		scheme = "https"
		generated, _, _ := unstructured.NestedBool(obj.Object, append(httpTLS, "generate")...)
		switch ca, own := str(append(httpTLS, "caSecret", "name")...), str(append(httpTLS, "secret", "name")...); {
		case generated:
			conn.CASecret = obj.GetName() + "-http-cert"
		case ca != "":
			conn.CASecret = ca
		default:
			conn.CASecret = own
		}
	}
	conn.Endpoint = fmt.Sprintf("%s://%s.%s.svc:%d", scheme, service, obj.GetNamespace(), port)
	return conn, nil
}

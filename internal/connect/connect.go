// Package connect turns a SearchCluster into an OpenSearch client, reading its credentials
// and CA from Secrets. Clients are cached per cluster and rebuilt only when the endpoint,
// TLS settings or Secret contents change, so connections are reused across reconciles.
package connect

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Error is a SearchCluster whose connection settings cannot be turned into a client; the
// reason is a condition reason.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Secret keys the API documents.
const (
	UsernameKey = "username"
	PasswordKey = "password"
	CAKey       = "ca.crt"
)

// Resolver builds and caches clients.
type Resolver struct {
	Reader client.Reader
	// ManagedEndpoint is the URL of a managed cluster; nil means its client Service. Tests
	// and out-of-cluster development point it elsewhere.
	ManagedEndpoint func(*v1alpha1.SearchCluster) string
	// ObserveRequest, when set, sees every request sent to any cluster (tests derive the
	// operator's OpenSearch role, and check the owners of the settings it writes, from them).
	ObserveRequest func(opensearch.SentRequest)

	mu      sync.Mutex
	clients map[types.NamespacedName]cached
}

type cached struct {
	fingerprint [32]byte
	client      *opensearch.Client
}

// ClientFor returns the client for sc; an *Error when its Secrets are missing or malformed.
func (r *Resolver) ClientFor(ctx context.Context, sc *v1alpha1.SearchCluster) (*opensearch.Client, error) {
	if sc.Spec.Managed != nil {
		return r.managedClient(ctx, sc)
	}
	conn, err := ExternalConnection(ctx, r.Reader, sc)
	if err != nil {
		return nil, err
	}
	cfg := opensearch.Config{Endpoint: conn.Endpoint, InsecureSkipVerify: conn.InsecureSkipVerify}
	if conn.CredentialsSecret != "" {
		// The credentials go to whatever URL the spec names (or the OpenSearchCluster it
		// names): only with the Secret's consent (the CA below is public and stays here).
		data, err := ClusterSecret(ctx, r.Reader, sc, conn.CredentialsSecret, UsernameKey, PasswordKey)
		if err != nil {
			return nil, err
		}
		cfg.Username, cfg.Password = string(data[UsernameKey]), string(data[PasswordKey])
	}
	if conn.CASecret != "" {
		data, err := r.secretData(ctx, sc.Namespace, conn.CASecret, CAKey)
		if err != nil {
			return nil, err
		}
		cfg.CACert = data[CAKey]
	}
	return r.cached(sc, cfg)
}

// managedClient connects to a managed cluster: over TLS, trusting the cluster's CA bundle,
// as the operator's own user, unless the cluster's security is off.
func (r *Resolver) managedClient(ctx context.Context, sc *v1alpha1.SearchCluster) (*opensearch.Client, error) {
	cfg := opensearch.Config{Endpoint: r.Endpoint(sc)}
	if managed.SecurityEnabled(sc) {
		creds, err := r.secretData(ctx, sc.Namespace, managed.CredentialsSecretName(sc, managed.OperatorUser), UsernameKey, PasswordKey)
		if err != nil {
			return nil, err
		}
		var bundle corev1.ConfigMap
		if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: sc.Namespace, Name: managed.CABundleName(sc)}, &bundle); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &Error{Reason: v1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf("CA bundle ConfigMap %s/%s not found yet", sc.Namespace, managed.CABundleName(sc))}
			}
			return nil, err
		}
		cfg.Username, cfg.Password, cfg.CACert = string(creds[UsernameKey]), string(creds[PasswordKey]), []byte(bundle.Data[managed.TrustBundleKey])
	}
	return r.cached(sc, cfg)
}

// Endpoint is the URL the operator reaches a managed cluster at (an external one's is
// ExternalConnection's).
func (r *Resolver) Endpoint(sc *v1alpha1.SearchCluster) string {
	if r.ManagedEndpoint != nil {
		return r.ManagedEndpoint(sc)
	}
	return managed.Endpoint(sc)
}

// cached returns the client of cfg for sc, building it when cfg changed.
func (r *Resolver) cached(sc *v1alpha1.SearchCluster, cfg opensearch.Config) (*opensearch.Client, error) {
	fp := fingerprint(cfg)
	key := types.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[key]; ok && c.fingerprint == fp {
		return c.client, nil
	}
	sent := metrics.OpenSearchRequests.WithLabelValues(sc.Namespace, sc.Name)
	cfg.OnRequest = func(req opensearch.SentRequest) {
		sent.Inc()
		if r.ObserveRequest != nil {
			r.ObserveRequest(req)
		}
	}
	c, err := opensearch.New(cfg)
	if err != nil {
		return nil, &Error{Reason: v1alpha1.ReasonTLSError, Message: err.Error()}
	}
	if r.clients == nil {
		r.clients = map[types.NamespacedName]cached{}
	}
	if old, ok := r.clients[key]; ok {
		// A replaced client (rotated password, new CA) stops its background polling and
		// drops its idle connections; requests already under way finish.
		old.client.Close()
	}
	r.clients[key] = cached{fingerprint: fp, client: c}
	return c, nil
}

// Forget drops the cached client of a deleted cluster.
func (r *Resolver) Forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.clients[key]; ok {
		old.client.Close()
	}
	delete(r.clients, key)
}

func (r *Resolver) secretData(ctx context.Context, namespace, name string, keys ...string) (map[string][]byte, error) {
	return SecretData(ctx, r.Reader, namespace, name, keys...)
}

// ConsentAnnotation on a Secret names the SearchClusters of its namespace that may use it
// where its content leaves it through the operator — basic-auth credentials sent to an
// external endpoint, a CA key that signs the cluster's certificates, keystore entries
// mounted into the cluster's pods (whose image the cluster's author chooses): comma-separated
// names, or * for every one. Whoever may create a SearchCluster but not read Secrets thus
// cannot have the operator hand them one; only someone who may write the Secret consents.
const ConsentAnnotation = "vectorpilot.io/searchclusters"

// Consents says whether s allows SearchCluster cluster to use it (ConsentAnnotation).
func Consents(s *corev1.Secret, cluster string) bool {
	for _, name := range strings.Split(s.Annotations[ConsentAnnotation], ",") {
		if name = strings.TrimSpace(name); name == "*" || name == cluster {
			return true
		}
	}
	return false
}

// ClusterSecret reads a Secret sc names for a use its content leaves the Secret by (see
// ConsentAnnotation) and checks it has keys; a Secret that does not consent is an *Error
// with reason SecretNotAllowed, saying what its owner adds.
func ClusterSecret(ctx context.Context, reader client.Reader, sc *v1alpha1.SearchCluster, name string, keys ...string) (map[string][]byte, error) {
	s, err := readSecret(ctx, reader, sc.Namespace, name, keys)
	if err != nil {
		return nil, err
	}
	if !Consents(s, sc.Name) {
		return nil, &Error{Reason: v1alpha1.ReasonSecretNotAllowed, Message: fmt.Sprintf(
			"Secret %s/%s does not allow SearchCluster %s to use it: its owner annotates it %s: %q (or \"*\")", sc.Namespace, name, sc.Name, ConsentAnnotation, sc.Name)}
	}
	return s.Data, nil
}

// SecretData reads a Secret a user names and checks it has keys; a missing Secret or key is
// an *Error with the reason a condition shows.
func SecretData(ctx context.Context, reader client.Reader, namespace, name string, keys ...string) (map[string][]byte, error) {
	s, err := readSecret(ctx, reader, namespace, name, keys)
	if err != nil {
		return nil, err
	}
	return s.Data, nil
}

func readSecret(ctx context.Context, reader client.Reader, namespace, name string, keys []string) (*corev1.Secret, error) {
	var s corev1.Secret
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Error{Reason: v1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf("Secret %s/%s not found", namespace, name)}
		}
		return nil, err
	}
	for _, k := range keys {
		if len(s.Data[k]) == 0 {
			return nil, &Error{Reason: v1alpha1.ReasonInvalidSecret, Message: fmt.Sprintf("Secret %s/%s has no key %q", namespace, name, k)}
		}
	}
	return &s, nil
}

// fingerprint hashes everything a client is built from; secrets are hashed, never stored.
func fingerprint(cfg opensearch.Config) [32]byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cfg.Endpoint), []byte(cfg.Username), []byte(cfg.Password), cfg.CACert, []byte(fmt.Sprint(cfg.InsecureSkipVerify))} {
		h.Write(part)
		h.Write([]byte{0})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

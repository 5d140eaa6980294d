package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// fakeClients stand in for the Resolver in decision tests: the OpenSearch API a kind's
// steps use, by the SearchCluster's namespace and name.
type fakeClients[API any] func(ctx context.Context, namespace, cluster string) (API, error)

// openSearchFor is how every reconciler reaches a cluster's OpenSearch: the decision
// test's fake when one is set, else the named SearchCluster's client from the Resolver
// (its Secrets, its CA, the client cached for them). API is an interface the client
// answers.
func openSearchFor[API any](ctx context.Context, fake fakeClients[API], c client.Reader, resolver *connect.Resolver, namespace, cluster string) (API, error) {
	if fake != nil {
		return fake(ctx, namespace, cluster)
	}
	var none API
	osClient, err := clusterClient(ctx, c, resolver, namespace, cluster)
	if err != nil {
		return none, err
	}
	return any(osClient).(API), nil
}

// The client answers every kind's API (openSearchFor's assertion cannot fail).
var (
	_ indexAPI      = (*opensearch.Client)(nil)
	_ snapshotAPI   = (*opensearch.Client)(nil)
	_ settingsAPI   = (*opensearch.Client)(nil)
	_ clusterAPI    = (*opensearch.Client)(nil)
	_ repositoryAPI = (*opensearch.Client)(nil)
)

// clusterClient resolves a SearchCluster in namespace to its OpenSearch client; a missing
// cluster is a *connect.Error with reason ClusterNotFound.
func clusterClient(ctx context.Context, c client.Reader, resolver *connect.Resolver, namespace, name string) (*opensearch.Client, error) {
	var sc v1alpha1.SearchCluster
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &sc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, &connect.Error{Reason: v1alpha1.ReasonClusterNotFound, Message: "SearchCluster " + name + " not found"}
		}
		return nil, err
	}
	return resolver.ClientFor(ctx, &sc)
}

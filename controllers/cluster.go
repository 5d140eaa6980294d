package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
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

package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
)

// forcedSetting forces every value of the node attribute: weighted routing needs its
// attribute among the awareness attributes (opensearch.AwarenessSetting), every value forced.
var forcedSetting = opensearch.ForcedAwarenessSetting(managed.NodeAttribute)

// routeSearchesAway weighs the nodes about to restart out of shard search routing, so no
// search starts its query phase there while the node's preStop keeps it serving the ones
// in flight. With one awareness value per node, forced awareness allows what the same-shard
// rule allows, so allocation does not change. When OpenSearch cannot take the weights (see
// rollout.SearchWeights) or the cluster already weighs another attribute, the restart goes
// ahead without them, as before; a request that fails holds the restart.
func routeSearchesAway(ctx context.Context, osClient clusterAPI, sc *v1alpha1.SearchCluster, nodes []opensearch.NodeVariant, away []string) error {
	values := map[string]string{}
	for _, n := range nodes {
		values[n.Name] = n.Attributes[managed.NodeAttribute]
	}
	weights, ok := rollout.SearchWeights(values, away)
	if !ok {
		logf.FromContext(ctx).Info("restarting without search weights: some node lacks the node attribute, or too few nodes would stay", "nodes", away)
		return nil
	}
	if err := osClient.SetAllocationAwareness(ctx, awarenessAttributes(sc), managed.NodeAttribute, slices.Sorted(maps.Keys(weights))); err != nil {
		return fmt.Errorf("setting the node awareness attribute before a restart: %w", err)
	}
	current, err := osClient.SearchWeights(ctx, managed.NodeAttribute)
	if err != nil {
		return fmt.Errorf("reading search weights before a restart: %w", err)
	}
	for value := range current.Weights {
		if _, ours := weights[value]; !ours {
			logf.FromContext(ctx).Info("restarting without search weights: the cluster has weights of its own", "weights", current.Weights)
			return nil
		}
	}
	if err := osClient.PutSearchWeights(ctx, managed.NodeAttribute, weights, current.Version); err != nil {
		return fmt.Errorf("weighing %v out of search routing before a restart: %w", away, err)
	}
	return nil
}

// weighed says whether the persistent settings hold the restart's awareness attribute.
func weighed(settings map[string]string) bool {
	return slices.Contains(strings.Split(settings[opensearch.AwarenessSetting], ","), managed.NodeAttribute)
}

// removeSearchWeights deletes the weights on the per-node attribute, if any.
func removeSearchWeights(ctx context.Context, osClient clusterAPI) error {
	current, err := osClient.SearchWeights(ctx, managed.NodeAttribute)
	if err != nil {
		return err
	}
	if len(current.Weights) == 0 {
		return nil
	}
	return osClient.DeleteSearchWeights(ctx, current.Version)
}

// awarenessAttributes are the awareness attributes in force before the restart — the
// persistent setting it found, or else the pools' configuration — then the per-node one:
// the persistent setting replaces the configured one while it is set.
func awarenessAttributes(sc *v1alpha1.SearchCluster) []string {
	var configured []string
	if v, ok := sc.Status.SettingsBeforeRestart[opensearch.AwarenessSetting]; ok {
		configured = strings.Split(v, ",")
	} else {
		for _, p := range sc.Spec.Managed.NodePools {
			configured = append(configured, strings.Split(p.AdditionalConfig[opensearch.AwarenessSetting], ",")...)
		}
	}
	var out []string
	for _, a := range configured {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) && a != managed.NodeAttribute {
			out = append(out, a)
		}
	}
	return append(out, managed.NodeAttribute)
}

package opensearch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// The persistent cluster settings the operator writes, each through one named operation
// below, so that who writes a setting is one search for its method: a managed cluster's
// rolling restart, drain and search routing. A nil value resets a setting to OpenSearch's
// default.
const (
	// AllocationEnableSetting is set to primaries while a node restarts, as OpenSearch's
	// rolling-restart procedure says: its replicas are not copied elsewhere for a minute's
	// absence.
	AllocationEnableSetting = "cluster.routing.allocation.enable"
	// AllocationExcludeSetting lists the nodes shards move off: drained nodes.
	AllocationExcludeSetting = "cluster.routing.allocation.exclude._name"
	// AwarenessSetting lists the node attributes shard allocation is aware of; weighted
	// search routing needs its attribute among them.
	AwarenessSetting = "cluster.routing.allocation.awareness.attributes"
)

// ForcedAwarenessSetting lists the forced values of an awareness attribute: OpenSearch
// refuses a zero search weight for a value it does not know.
func ForcedAwarenessSetting(attribute string) string {
	return "cluster.routing.allocation.awareness.force." + attribute + ".values"
}

// RestrictAllocationToPrimaries lets only primaries be allocated (ECK's
// DisableReplicaShardsAllocation), before a serving node restarts.
func (c *Client) RestrictAllocationToPrimaries(ctx context.Context) error {
	return c.putPersistentClusterSettings(ctx, PrimariesOnlyAllocation())
}

// PrimariesOnlyAllocation is RestrictAllocationToPrimaries' settings body.
func PrimariesOnlyAllocation() map[string]any {
	return map[string]any{AllocationEnableSetting: "primaries"}
}

// ExcludeFromAllocation moves every shard off the named nodes; no names lifts the
// exclusion.
func (c *Client) ExcludeFromAllocation(ctx context.Context, nodes []string) error {
	return c.putPersistentClusterSettings(ctx, AllocationExclusion(nodes))
}

// AllocationExclusion is ExcludeFromAllocation's settings body.
func AllocationExclusion(nodes []string) map[string]any {
	if len(nodes) == 0 {
		return map[string]any{AllocationExcludeSetting: nil}
	}
	return map[string]any{AllocationExcludeSetting: strings.Join(nodes, ",")}
}

// SetAllocationAwareness makes shard allocation aware of attributes and forces attribute's
// values, so that weighted search routing can weigh each of them.
func (c *Client) SetAllocationAwareness(ctx context.Context, attributes []string, attribute string, forced []string) error {
	return c.putPersistentClusterSettings(ctx, AllocationAwareness(attributes, attribute, forced))
}

// AllocationAwareness is SetAllocationAwareness' settings body.
func AllocationAwareness(attributes []string, attribute string, forced []string) map[string]any {
	return map[string]any{AwarenessSetting: strings.Join(attributes, ","), ForcedAwarenessSetting(attribute): strings.Join(forced, ",")}
}

// PutBackClusterSettings writes back values the operator read before it changed them (nil
// for a setting that was unset). It refuses any setting the named operations above do not
// write: it is their undo, not a way to write others.
func (c *Client) PutBackClusterSettings(ctx context.Context, values map[string]any) error {
	if err := PutBackable(values); err != nil {
		return err
	}
	return c.putPersistentClusterSettings(ctx, values)
}

// PutBackable says whether PutBackClusterSettings takes values back: only settings the
// named operations write.
func PutBackable(values map[string]any) error {
	for k := range values {
		switch {
		case k == AllocationEnableSetting, k == AllocationExcludeSetting, k == AwarenessSetting:
		case strings.HasPrefix(k, "cluster.routing.allocation.awareness.force.") && strings.HasSuffix(k, ".values"):
		default:
			return fmt.Errorf("putting back cluster setting %s: the operator writes no such setting", k)
		}
	}
	return nil
}

// putPersistentClusterSettings sets persistent cluster settings; a nil value resets one.
func (c *Client) putPersistentClusterSettings(ctx context.Context, settings map[string]any) error {
	return c.do(ctx, http.MethodPut, "/_cluster/settings", map[string]any{"persistent": settings}, nil)
}

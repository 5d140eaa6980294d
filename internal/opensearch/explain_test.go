package opensearch

import "testing"

func TestStuckReason(t *testing.T) {
	refusals := []Refusal{
		{Node: "n0", Decider: "same_shard", Decision: "NO", Explanation: "a copy of this shard is already allocated to this node"},
		{Node: "n0", Decider: "disk_threshold", Decision: "NO", Explanation: "the node is above the low watermark"},
		{Node: "n2", Decider: "filter", Decision: "YES", Explanation: "node passes include/exclude/require filters"},
		{Node: "n2", Decider: "disk_threshold", Decision: "NO", Explanation: "the node is above the high watermark"},
		{Node: "n3", Decider: "awareness", Decision: "NO", Explanation: "too many copies in the zone"},
	}
	for _, tc := range []struct {
		name, canMove string
		refusals      []Refusal
		want          string
	}{
		{"can move", "yes", refusals, ""},
		{"throttled: moving soon", "throttled", refusals, ""},
		{"stuck: the first refusal of the first two nodes", "no", refusals,
			"cannot move; n0: [same_shard] a copy of this shard is already allocated to this node; n2: [disk_threshold] the node is above the high watermark"},
		{"stuck with no other node", "no", nil, "cannot move"},
	} {
		if got := stuckReason(tc.canMove, "cannot move", tc.refusals); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

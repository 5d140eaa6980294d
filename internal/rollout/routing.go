package rollout

import "slices"

// SearchWeights are the weighted shard routing that keeps searches off the nodes about to
// stop: weight 0 for them, 1 for every other node, keyed by each node's value of the
// per-node awareness attribute (nodes: node name → that value, "" when the node lacks it).
// A search whose query phase ran on a stopping node fails in its fetch phase when the node
// goes; with weight 0 no new search starts there while the pod's preStop keeps it serving
// the ones in flight.
//
// ok is false when OpenSearch cannot take them: a node without the attribute (it started
// before the operator rendered it, and awareness would refuse that node every shard), or
// more than half of the nodes weighed away (OpenSearch refuses that), or none to weigh away.
func SearchWeights(nodes map[string]string, away []string) (weights map[string]string, ok bool) {
	weights = map[string]string{}
	zero := 0
	for name, value := range nodes {
		if value == "" {
			return nil, false
		}
		weights[value] = "1"
		if slices.Contains(away, name) {
			weights[value] = "0"
			zero++
		}
	}
	if zero == 0 || zero > len(nodes)/2 {
		return nil, false
	}
	return weights, true
}

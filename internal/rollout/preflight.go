package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// IndexSettings are an index's own settings, flat ("index.version.created": "137277827"),
// as the cluster state holds them.
type IndexSettings = map[string]any

// openSearchMask marks OpenSearch's version IDs apart from the Elasticsearch IDs of the
// indexes it inherited (org.opensearch.Version.MASK).
const openSearchMask = 0x08000000

// createdBy is the version that created an index, from index.version.created: its name
// ("OpenSearch 2.19.1", "Elasticsearch 7.10.2") and its OpenSearch major (Elasticsearch 7
// indexes are read as OpenSearch 1's were, 6 and older as older still). ok is false for a
// value that is no version ID.
func createdBy(settings IndexSettings) (name string, major int, ok bool) {
	id, err := strconv.Atoi(fmt.Sprint(settings["index.version.created"]))
	if err != nil || id <= 0 {
		return "", 0, false
	}
	product := "Elasticsearch"
	if id&openSearchMask != 0 {
		product, id = "OpenSearch", id^openSearchMask
	}
	v := [3]int{id / 1000000, id / 10000 % 100, id / 100 % 100}
	major = v[0]
	if product == "Elasticsearch" {
		major = v[0] - 6
	}
	return fmt.Sprintf("%s %d.%d.%d", product, v[0], v[1], v[2]), major, true
}

// removedIn are index settings a release of the k-NN plugin removed, by the OpenSearch
// major it shipped with: a node of that major no longer applies them (k-NN 3.0.0 removed
// the index-level space type and graph parameters fields without a method took).
var removedIn = map[int][]string{
	3: {"index.knn.space_type", "index.knn.algo_param.m", "index.knn.algo_param.ef_construction"},
}

// Preflight is what nodes of version target could not serve of the indexes (by name),
// read before the first node of an upgrade restarts: one "index: why" per finding, sorted.
// OpenSearch reads indexes created by its own and the previous major version only, and an
// index setting a newer release removed no longer applies to the index that sets it.
func Preflight(target string, indexes map[string]IndexSettings) []string {
	major, err := strconv.Atoi(strings.SplitN(target, ".", 2)[0])
	if err != nil {
		return nil
	}
	var out []string
	for name, settings := range indexes {
		if created, m, ok := createdBy(settings); ok && m < major-1 {
			out = append(out, fmt.Sprintf("%s: created by %s, and OpenSearch %s reads indexes of %d.x and %d.x only: reindex it on the running version, or delete it, first",
				name, created, target, major-1, major))
		}
		for since, removed := range removedIn {
			if major < since {
				continue
			}
			for _, s := range removed {
				if _, set := settings[s]; set {
					out = append(out, fmt.Sprintf("%s: sets %s, which the k-NN plugin of OpenSearch %d.x removed: its vector fields without a method would lose it; reindex it with the value in each field's method first",
						name, s, since))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

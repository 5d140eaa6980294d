package owners

import (
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// written are the setting keys the code writes, from the builders themselves: what a
// VectorIndex creates (every option set) and converges (tuned), what a BenchmarkRun holds,
// the rebuild's write block, and the rolling restart's and the drains' cluster settings.
// The other direction — every setting the operator is seen writing has a row — is checked
// from the requests it sends in the controllers' integration tests (sentRequests.owned).
func written() []string {
	spec := v1alpha1.VectorIndexSpec{
		Shards: 2, Replicas: 1, RefreshInterval: "1s",
		Fields: []v1alpha1.VectorField{{Name: "v", Dimension: 4, Method: v1alpha1.VectorMethod{Name: "hnsw",
			Parameters: &v1alpha1.MethodParameters{EfSearch: ptr.To[int32](100)}}}},
	}
	spec.Search.ConcurrentSegmentSearch.Mode = "auto"
	var out []string
	for k := range indexspec.CreateSettings(&spec) {
		out = append(out, k)
	}
	for k := range indexspec.DynamicSettings(&spec, ptr.To[indexspec.Slices](4)) {
		out = append(out, k)
	}
	out = append(out, benchrun.HeldSettings...)
	out = append(out, indexspec.RestoreMarkerSetting) // the restore request's index_settings
	out = append(out, opensearch.WriteBlockSetting)   // the rebuild's write block (SetWriteBlock)
	out = append(out, opensearch.AllocationEnableSetting, opensearch.AllocationExcludeSetting, opensearch.AwarenessSetting, opensearch.ForcedAwarenessSetting(managed.NodeAttribute))
	slices.Sort(out)
	return slices.Compact(out)
}

// TestEverySettingHasOneOwner: every setting the code writes is in the table; every key in
// the table is one the code writes; a setting has two writers only when one of them holds
// it through status.restoreSettings (benchrun.HeldSettings), which the other steps respect.
func TestEverySettingHasOneOwner(t *testing.T) {
	writers := map[string]int{}
	for _, o := range Table {
		if !strings.Contains(o.Setting, "`") {
			writers[o.Setting]++
		}
	}
	for _, k := range written() {
		if writers[k] == 0 {
			t.Errorf("the code writes %s but the owners table has no row for it", k)
		}
	}
	for k, n := range writers {
		if !slices.Contains(written(), k) {
			t.Errorf("the owners table lists %s, which no builder writes", k)
		}
		if n > 1 && !slices.Contains(benchrun.HeldSettings, k) {
			t.Errorf("%s has %d writers and no hold between them", k, n)
		}
	}
}

// TestDocsHaveTheTable keeps the table of docs/concepts.md the one this package describes.
func TestDocsHaveTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/concepts.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), Describe()) {
		t.Errorf("docs/concepts.md lacks the current setting owners table; put in:\n%s", Describe())
	}
}

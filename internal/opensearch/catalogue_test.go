package opensearch

import (
	"testing"
	"time"
)

func TestCatalogueLookup(t *testing.T) {
	cat := NewCatalogue(time.Now(),
		CatalogueEntry{Name: "docs-v1", UUID: "u1", Aliases: []string{"docs"}},
		CatalogueEntry{Name: "a-1", UUID: "u2", Aliases: []string{"both"}},
		CatalogueEntry{Name: "a-2", UUID: "u3", Aliases: []string{"both"}})
	for _, tc := range []struct {
		name, want string
	}{
		{"docs-v1", "docs-v1"},
		{"docs", "docs-v1"}, // an alias of one index
		{"both", ""},        // an alias of two: GetIndex refuses it too
		{"missing", ""},
	} {
		e, ok := cat.Lookup(tc.name)
		if ok != (tc.want != "") || e.Name != tc.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tc.name, e.Name, ok, tc.want)
		}
	}
}

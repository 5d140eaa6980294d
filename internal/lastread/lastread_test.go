package lastread

import (
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func TestUnchanged(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	read := Record{Generation: 3, Index: &opensearch.Index{Name: "docs-v1", UUID: "u1"}, Version: 7, ReadEnd: t0}
	entry := opensearch.CatalogueEntry{Name: "docs-v1", UUID: "u1", Version: 7}
	after := opensearch.NewCatalogue(t0.Add(time.Second))
	for _, tc := range []struct {
		name       string
		record     func(*Record)
		generation int64
		cat        *opensearch.Catalogue
		entry      func(*opensearch.CatalogueEntry)
		missing    bool
		want       bool
	}{
		{name: "same index, same version, catalogue after the read", generation: 3, cat: after, want: true},
		{name: "the spec changed since", generation: 4, cat: after},
		{name: "no version known at the read", record: func(r *Record) { r.Version = 0 }, generation: 3, cat: after},
		{name: "catalogue begun before the read returned", generation: 3, cat: opensearch.NewCatalogue(t0)},
		{name: "version moved", generation: 3, cat: after, entry: func(e *opensearch.CatalogueEntry) { e.Version = 8 }},
		{name: "index recreated (other UUID)", generation: 3, cat: after, entry: func(e *opensearch.CatalogueEntry) { e.UUID = "u2" }},
		{name: "the name now reaches another index", generation: 3, cat: after, entry: func(e *opensearch.CatalogueEntry) { e.Name = "docs-v2" }},
		{name: "not in the catalogue", generation: 3, cat: after, missing: true},
		{name: "no read recorded", record: func(r *Record) { r.Index = nil }, generation: 3, cat: after},
	} {
		r, e := read, entry
		if tc.record != nil {
			tc.record(&r)
		}
		if tc.entry != nil {
			tc.entry(&e)
		}
		if got := Unchanged(r, tc.generation, tc.cat, e, !tc.missing); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

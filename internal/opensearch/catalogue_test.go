package opensearch

import (
	"context"
	"net/http"
	"sync/atomic"
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

// TestCatalogueReadsOncePerPeriod: a catalogue younger than the period is shared; a refusal
// is answered again for the period, to callers asking for a reading begun after their own
// last read too, so a cluster that refuses the catalogue costs one request per period.
func TestCatalogueReadsOncePerPeriod(t *testing.T) {
	var requests atomic.Int64
	refuse := atomic.Bool{}
	c := clientOf(t, func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		if refuse.Load() {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"type":"security_exception","reason":"no permissions for [indices:monitor/stats]"},"status":403}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	ctx := context.Background()
	ask := func(step string, after time.Time, maxAge time.Duration, wantRequests int64, wantErr bool) {
		t.Helper()
		before := requests.Load()
		_, err := c.Catalogue(ctx, after, maxAge)
		if got := requests.Load() - before; got != wantRequests || (err != nil) != wantErr {
			t.Errorf("%s: %d requests, error %v; want %d requests, an error %v", step, got, err, wantRequests, wantErr)
		}
	}
	long := time.Hour
	ask("first", time.Time{}, long, 3, false)
	ask("young enough", time.Time{}, long, 0, false)
	ask("begun after the last", time.Now(), long, 3, false)
	ask("too old", time.Time{}, time.Nanosecond, 3, false)

	refuse.Store(true)
	ask("refused", time.Now(), long, 1, true)
	for i := 0; i < 3; i++ {
		ask("refused again, within the period", time.Now(), long, 0, true)
	}
	ask("refused, the period over", time.Now(), time.Nanosecond, 1, true)
}

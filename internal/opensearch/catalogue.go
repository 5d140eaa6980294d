package opensearch

import (
	"context"
	"net/http"
	"sort"
	"time"
)

// Catalogue is every index of a cluster as it stood when it was read: each index's identity,
// its metadata version and its figures, in three requests whatever the number of indexes.
// A resync that finds an index's UUID and version where its last full read left them knows
// the index is as read then, without reading it again.
type Catalogue struct {
	// ReadAt is when the reading began: a change made before it is in it.
	ReadAt  time.Time
	indexes map[string]CatalogueEntry
	// aliases are the indexes each alias names.
	aliases map[string][]string
}

// CatalogueEntry is one index of a Catalogue.
type CatalogueEntry struct {
	Name, UUID string
	// Version is the index metadata's version: OpenSearch raises it with every change of
	// the index's settings, mappings (its _meta too), aliases, blocks and state.
	Version int64
	Aliases []string
	// Stats are the index's figures as Stats reads them; nil when the stats API left the
	// index out (a closed index).
	Stats *IndexStats
}

// NewCatalogue is a catalogue of entries read at readAt.
func NewCatalogue(readAt time.Time, entries ...CatalogueEntry) *Catalogue {
	c := &Catalogue{ReadAt: readAt, indexes: map[string]CatalogueEntry{}, aliases: map[string][]string{}}
	for _, e := range entries {
		c.indexes[e.Name] = e
		for _, a := range e.Aliases {
			c.aliases[a] = append(c.aliases[a], e.Name)
		}
	}
	for _, names := range c.aliases {
		sort.Strings(names)
	}
	return c
}

// Lookup finds the index name names, as GetIndex would: an index, or an alias of exactly
// one index.
func (c *Catalogue) Lookup(name string) (CatalogueEntry, bool) {
	if e, ok := c.indexes[name]; ok {
		return e, true
	}
	if names := c.aliases[name]; len(names) == 1 {
		return c.indexes[names[0]], true
	}
	return CatalogueEntry{}, false
}

// catalogueCache holds a client's last catalogue; sem lets one caller read at a time.
type catalogueCache struct {
	sem      chan struct{}
	last     *Catalogue
	err      error
	failedAt time.Time
}

// Catalogue returns a catalogue begun after `after` and at most maxAge old: the last one
// read when it is, else a new one — read once for every caller waiting on it. A failed
// reading (a user without the monitor permissions on every index) is answered again for
// maxAge to every caller, so a cluster that refuses costs one request per maxAge, not one
// per caller.
func (c *Client) Catalogue(ctx context.Context, after time.Time, maxAge time.Duration) (*Catalogue, error) {
	select {
	case c.catalogue.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.catalogue.sem }()
	cache := &c.catalogue
	if cache.last != nil && cache.last.ReadAt.After(after) && time.Since(cache.last.ReadAt) <= maxAge {
		return cache.last, nil
	}
	if cache.err != nil && time.Since(cache.failedAt) < maxAge {
		return nil, cache.err
	}
	cat, err := c.readCatalogue(ctx)
	if err != nil {
		cache.err, cache.failedAt = err, time.Now()
		return nil, err
	}
	cache.last, cache.err = cat, nil
	return cat, nil
}

// readCatalogue reads the cluster state's index metadata (trimmed to identities, versions
// and aliases), every index's statistics and every index's health.
func (c *Client) readCatalogue(ctx context.Context) (*Catalogue, error) {
	readAt := time.Now()
	var state struct {
		Metadata struct {
			Indices map[string]struct {
				Version  int64    `json:"version"`
				Aliases  []string `json:"aliases"`
				Settings struct {
					Index struct {
						UUID string `json:"uuid"`
					} `json:"index"`
				} `json:"settings"`
			} `json:"indices"`
		} `json:"metadata"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/state/metadata?filter_path=metadata.indices.*.version,metadata.indices.*.aliases,metadata.indices.*.settings.index.uuid", nil, &state); err != nil {
		return nil, err
	}
	var stats struct {
		Indices map[string]statsBody `json:"indices"`
	}
	if err := c.do(ctx, http.MethodGet, "/_stats/"+statsMetrics+"&level=indices&filter_path=indices.*.primaries.docs.count,indices.*.primaries.segments.count,indices.*.total.store.size_in_bytes,indices.*.total.search.query_total,indices.*.total.search.query_time_in_millis,indices.*.total.search.groups.*.query_total,indices.*.total.search.groups.*.query_time_in_millis", nil, &stats); err != nil {
		return nil, err
	}
	var health struct {
		Indices map[string]healthBody `json:"indices"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/health?level=indices&filter_path=indices.*.status,indices.*.active_primary_shards", nil, &health); err != nil {
		return nil, err
	}
	entries := make([]CatalogueEntry, 0, len(state.Metadata.Indices))
	for name, m := range state.Metadata.Indices {
		e := CatalogueEntry{Name: name, UUID: m.Settings.Index.UUID, Version: m.Version, Aliases: m.Aliases}
		if s, ok := stats.Indices[name]; ok {
			if h, ok := health.Indices[name]; ok {
				figures := s.figures(h)
				e.Stats = &figures
			}
		}
		entries = append(entries, e)
	}
	return NewCatalogue(readAt, entries...), nil
}

// Package lastread remembers, per VectorIndex, the last full read of its OpenSearch index
// that a settled reconcile acted on, so that a resync which finds the index unchanged in
// its cluster's catalogue (internal/opensearch) takes that read again instead of asking
// OpenSearch: an idle index then costs no request of its own, only its share of the
// cluster's catalogue.
package lastread

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Record is one full read.
type Record struct {
	// Generation is the object's generation the reconcile that read it settled.
	Generation int64
	Index      *opensearch.Index
	// Version is the index's metadata version in a catalogue read before the index was:
	// the read holds at least that version. 0 when no catalogue was at hand.
	Version int64
	// ReadEnd is when the read returned.
	ReadEnd time.Time
}

// Unchanged says the read still stands for an object at generation, by a catalogue entry
// for the name it read (found: the catalogue has one): the spec is the one the read was
// settled for, and a catalogue begun after the read shows the same index at the version
// read. A change made after the read raises the version; one made between the catalogue
// that gave Version and the read leaves Version below the read's, so it only costs a
// read too many.
func Unchanged(r Record, generation int64, cat *opensearch.Catalogue, entry opensearch.CatalogueEntry, found bool) bool {
	return found && r.Index != nil && r.Generation == generation && r.Version > 0 &&
		cat.ReadAt.After(r.ReadEnd) && entry.Name == r.Index.Name && entry.UUID == r.Index.UUID && entry.Version == r.Version
}

// Store holds the records by object UID.
type Store struct {
	mu      sync.Mutex
	records map[types.UID]Record
}

// Get is the record of uid.
func (s *Store) Get(uid types.UID) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[uid]
	return r, ok
}

// Put records a read for uid.
func (s *Store) Put(uid types.UID, r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[types.UID]Record{}
	}
	s.records[uid] = r
}

// Forget drops uid's record: its next reconcile reads the index.
func (s *Store) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, uid)
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestIngestBoundsEachBulkBody: a bulk body holds at most BulkBodyBytes and one document
// more, whatever the dimension, and every vector is sent once, in order. A server that
// records the bodies plays OpenSearch: what is checked is the requests' shape.
func TestIngestBoundsEachBulkBody(t *testing.T) {
	cases := []struct {
		name         string
		count, dim   int
		batch        int
		wantRequests int
	}{
		{"narrow vectors: the document count bounds", 2500, 32, 1000, 3},
		{"the widest vectors admission takes: the bytes bound", 300, 16000, 1000, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				largest int
				ids     []string
				bodies  int
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				bodies++
				largest = max(largest, len(body))
				lines := bufio.NewScanner(bytes.NewReader(body))
				lines.Buffer(nil, len(body)+1)
				for i := 0; lines.Scan(); i++ {
					if i%2 == 0 {
						var action map[string]struct {
							ID string `json:"_id"`
						}
						if err := json.Unmarshal(lines.Bytes(), &action); err != nil {
							t.Errorf("action line: %v", err)
						}
						ids = append(ids, action["index"].ID)
					}
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"errors":false,"items":[]}`))
			}))
			defer srv.Close()
			c, err := opensearch.New(opensearch.Config{Endpoint: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			v := dataset.Vectors{Dim: tc.dim, Data: make([]float32, tc.count*tc.dim)}
			for i := range v.Data {
				v.Data[i] = -1.2345678e-05 // as long as a float32 gets in JSON
			}
			if err := Ingest(context.Background(), c, "wide", "embedding", v, tc.batch, nil); err != nil {
				t.Fatal(err)
			}
			if limit := BulkBodyBytes + documentBytes(tc.dim); largest > limit {
				t.Errorf("largest bulk body %d bytes, want at most %d", largest, limit)
			}
			if tc.wantRequests > 0 && bodies != tc.wantRequests {
				t.Errorf("%d bulk requests, want %d", bodies, tc.wantRequests)
			}
			if len(ids) != tc.count {
				t.Fatalf("%d documents sent, want %d", len(ids), tc.count)
			}
			for i, id := range ids {
				if id != strconv.Itoa(i) {
					t.Fatalf("document %d sent with id %s", i, id)
				}
			}
			t.Logf("%d × %d-d in %d bulk requests, largest %.1f MiB", tc.count, tc.dim, bodies, float64(largest)/(1<<20))
		})
	}
}

// TestIngestSendsRejectedBulksAgain: a bulk OpenSearch refuses only for now — the request
// answered 429 or 503, or items rejected with 429 — is sent again after a wait, and the
// load completes; an item refused for good (a mapping error) fails the load at once, as
// does a rejection that outlasts the attempts.
func TestIngestSendsRejectedBulksAgain(t *testing.T) {
	defer func(first, most time.Duration) { bulkRejectionBackoff, bulkRejectionBackoffMax = first, most }(bulkRejectionBackoff, bulkRejectionBackoffMax)
	bulkRejectionBackoff, bulkRejectionBackoffMax = time.Millisecond, 2*time.Millisecond
	item := func(status int, typ string) string {
		if typ == "" {
			return `{"index":{"status":` + strconv.Itoa(status) + `}}`
		}
		return `{"index":{"status":` + strconv.Itoa(status) + `,"error":{"type":"` + typ + `","reason":"r"}}}`
	}
	accepted := `{"errors":false,"items":[` + item(201, "") + `,` + item(201, "") + `]}`
	itemRejected := `{"errors":true,"items":[` + item(201, "") + `,` + item(429, "es_rejected_execution_exception") + `]}`
	mappingError := `{"errors":true,"items":[` + item(429, "es_rejected_execution_exception") + `,` + item(400, "mapper_parsing_exception") + `]}`
	type answer struct {
		status int
		body   string
	}
	for _, tc := range []struct {
		name    string
		answers []answer // in order; the last repeats
		sends   int
		failed  bool
	}{
		{"request refused with 429, then taken", []answer{{429, `{"error":"too many"}`}, {200, accepted}}, 2, false},
		{"node unavailable, then taken", []answer{{503, `{"error":"unavailable"}`}, {503, `{"error":"unavailable"}`}, {200, accepted}}, 3, false},
		{"an item rejected, then taken", []answer{{200, itemRejected}, {200, accepted}}, 2, false},
		{"a mapping error beside a rejection: refused for good", []answer{{200, mappingError}}, 1, true},
		{"rejected for longer than the attempts", []answer{{429, `{"error":"too many"}`}}, bulkAttempts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			sends := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				a := tc.answers[min(sends, len(tc.answers)-1)]
				sends++
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(a.body))
			}))
			defer srv.Close()
			c, err := opensearch.New(opensearch.Config{Endpoint: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v := dataset.Vectors{Dim: 2, Data: []float32{1, 2, 3, 4}}
			err = Ingest(context.Background(), c, "docs", "embedding", v, 10, nil)
			if sends != tc.sends || (err != nil) != tc.failed {
				t.Errorf("%d sends, error %v; want %d sends, failed %v", sends, err, tc.sends, tc.failed)
			}
		})
	}
}

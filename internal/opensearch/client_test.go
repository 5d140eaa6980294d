package opensearch

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// clientOf is a client of a test server that answers with handler; both go when the test
// ends.
func clientOf(t *testing.T, handler http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

package testsupport

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Send makes one JSON request (to OpenSearch, to S3) and wants a 2xx; it returns the body.
func Send(t testing.TB, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s %s", method, url, resp.Status, out)
	}
	return string(out)
}

package devenv_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestS3ServerOnLoopback starts the real S3-compatible server, creates a bucket, stores an
// object and lists it back, then stops the server by PID.
func TestS3ServerOnLoopback(t *testing.T) {
	testgate.Integration(t, "the S3-compatible server")
	s3, err := devenv.StartS3(testsupport.Root(t), fmt.Sprintf("devenv-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s3.URL, "http://127.0.0.1:") {
		t.Errorf("server not on loopback: %s", s3.URL)
	}
	defer func() {
		if err := s3.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := http.Get(s3.URL); err == nil {
			t.Error("server still answers after Stop")
		}
	}()
	do := func(method, path, body string) string {
		req, _ := http.NewRequest(method, s3.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	do(http.MethodPut, "/snapshots", "")
	do(http.MethodPut, "/snapshots/probe.txt", "hello")
	if list := do(http.MethodGet, "/snapshots?list-type=2", ""); !strings.Contains(list, "<Key>probe.txt</Key>") || !strings.Contains(list, "<Size>5</Size>") {
		t.Fatalf("listing does not show the stored object: %s", list)
	}
}

package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestExitCode: an OpenSearch failure that may pass exits benchrun.ExitTransient, which
// the Workflow steps retry; anything else exits 1.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"no answer (a node restarting)", fmt.Errorf("measuring: %w", &opensearch.TransportError{Op: "POST /products/_search", Err: errors.New("EOF")}), benchrun.ExitTransient},
		{"back-pressure", &opensearch.APIError{Status: 429}, benchrun.ExitTransient},
		{"a 503", fmt.Errorf("refresh: %w", &opensearch.APIError{Status: 503}), benchrun.ExitTransient},
		{"a bad request", &opensearch.APIError{Status: 400}, 1},
		{"refused credentials", &opensearch.APIError{Status: 401}, 1},
		{"an untrusted certificate", &opensearch.TransportError{Op: "GET /", Err: errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")}, 1},
		{"anything else", errors.New("--index is required"), 1},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

package opensearch

import (
	"crypto/x509"
	"errors"
	"net"
	"testing"
)

func TestParseAPIError(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		body       string
		wantType   string
		wantReason string
	}{
		{"structured with cause", 400,
			`{"error":{"type":"mapper_parsing_exception","reason":"Failed to parse mapping","caused_by":{"type":"illegal_argument_exception","reason":"nmslib engine is deprecated"}},"status":400}`,
			"mapper_parsing_exception", "Failed to parse mapping: nmslib engine is deprecated"},
		{"string error", 401, `{"error":"Unauthorized","status":401}`, "", "Unauthorized"},
		// Any host's answer (a metadata endpoint's credentials, an internal page) stays out.
		{"not json", 502, `<html>Bad Gateway</html>`, "", "an answer of 24 bytes that is not an OpenSearch error (not shown)"},
		{"another service's JSON", 200, `{"AccessKeyId":"AKIA-SECRET","Token":"t0ken"}`, "", "an answer of 45 bytes that is not an OpenSearch error (not shown)"},
	}
	for _, c := range cases {
		err := parseAPIError(c.status, []byte(c.body))
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Status != c.status || apiErr.Type != c.wantType || apiErr.Reason != c.wantReason {
			t.Errorf("%s: got %#v", c.name, err)
		}
	}
}

func TestClassifiers(t *testing.T) {
	refused := &TransportError{Op: "GET /", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	tlsErr := &TransportError{Op: "GET /", Err: x509.UnknownAuthorityError{}}
	cases := []struct {
		name                                            string
		err                                             error
		notFound, unauthorized, unreachable, tls, retry bool
	}{
		{"404", &APIError{Status: 404}, true, false, false, false, false},
		{"401", &APIError{Status: 401}, false, true, false, false, false},
		{"403", &APIError{Status: 403}, false, true, false, false, false},
		{"429", &APIError{Status: 429}, false, false, false, false, true},
		{"503", &APIError{Status: 503}, false, false, false, false, true},
		{"400", &APIError{Status: 400}, false, false, false, false, false},
		{"connection refused", refused, false, false, true, false, true},
		{"unknown CA", tlsErr, false, false, true, true, false},
	}
	for _, c := range cases {
		got := []bool{IsNotFound(c.err), IsUnauthorized(c.err), IsUnreachable(c.err), IsTLSError(c.err), IsRetryable(c.err)}
		want := []bool{c.notFound, c.unauthorized, c.unreachable, c.tls, c.retry}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: classifier %d = %v, want %v", c.name, i, got[i], want[i])
			}
		}
	}
}

// TestClusterBlocksAreNotCredentialProblems: a write refused by a block (a read-only index,
// the flood-stage watermark) answers 403 or 429 with cluster_block_exception.
func TestClusterBlocksAreNotCredentialProblems(t *testing.T) {
	readOnly := parseAPIError(403, []byte(`{"error":{"type":"cluster_block_exception","reason":"index [products] blocked by: [FORBIDDEN/8/index write (api)];"},"status":403}`))
	flood := parseAPIError(429, []byte(`{"error":{"type":"cluster_block_exception","reason":"index [products] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"},"status":429}`))
	for _, err := range []error{readOnly, flood} {
		if !IsClusterBlocked(err) || IsUnauthorized(err) {
			t.Errorf("%v: blocked %v, unauthorized %v; want blocked only", err, IsClusterBlocked(err), IsUnauthorized(err))
		}
	}
	if IsClusterBlocked(&APIError{Status: 403, Type: "security_exception"}) || !IsUnauthorized(&APIError{Status: 403, Type: "security_exception"}) {
		t.Error("a 403 security_exception is a permission problem, not a block")
	}
}

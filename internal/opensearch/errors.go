package opensearch

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// APIError is an answer from OpenSearch with a non-2xx status.
type APIError struct {
	Status int
	// Type is OpenSearch's error type, e.g. resource_already_exists_exception.
	Type   string
	Reason string
}

func (e *APIError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("opensearch answered %d: %s", e.Status, e.Reason)
	}
	return fmt.Sprintf("opensearch answered %d %s: %s", e.Status, e.Type, e.Reason)
}

// TransportError is a request that got no answer: refused connection, timeout, TLS failure.
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string { return fmt.Sprintf("%s: %v", e.Op, e.Err) }
func (e *TransportError) Unwrap() error { return e.Err }

func parseAPIError(status int, body []byte) error {
	var parsed struct {
		Error json.RawMessage `json:"error"`
	}
	apiErr := &APIError{Status: status}
	if json.Unmarshal(body, &parsed) == nil && len(parsed.Error) > 0 {
		var detail struct {
			Type     string `json:"type"`
			Reason   string `json:"reason"`
			CausedBy *struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"caused_by"`
		}
		if json.Unmarshal(parsed.Error, &detail) == nil && detail.Type != "" {
			apiErr.Type, apiErr.Reason = detail.Type, detail.Reason
			if detail.CausedBy != nil && detail.CausedBy.Reason != "" && detail.CausedBy.Reason != detail.Reason {
				apiErr.Reason += ": " + detail.CausedBy.Reason
			}
			return apiErr
		}
		var s string
		if json.Unmarshal(parsed.Error, &s) == nil {
			apiErr.Reason = s
			return apiErr
		}
	}
	// Not OpenSearch's error shape: the endpoint may be any host a SearchCluster names (an
	// internal service, a metadata endpoint), and its answer must not reach status, Events
	// or logs.
	apiErr.Reason = fmt.Sprintf("an answer of %d bytes that is not an OpenSearch error (not shown)", len(body))
	return apiErr
}

func statusOf(err error) int {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status
	}
	return 0
}

// IsNotFound says OpenSearch answered 404.
func IsNotFound(err error) bool { return statusOf(err) == 404 }

// IsClusterBlocked says OpenSearch refused the request because of a cluster or index block
// (a read-only index, the flood-stage disk watermark): 403 or 429 with
// cluster_block_exception, which is neither a credentials problem nor back-pressure.
func IsClusterBlocked(err error) bool { return ErrorType(err) == "cluster_block_exception" }

// IsUnauthorized says OpenSearch refused the credentials (401) or the permission (403).
// A 403 for a block is not one.
func IsUnauthorized(err error) bool {
	s := statusOf(err)
	return (s == 401 || s == 403) && !IsClusterBlocked(err)
}

// IsUnreachable says no answer came back at all.
func IsUnreachable(err error) bool {
	var te *TransportError
	return errors.As(err, &te)
}

// IsTLSError says the TLS handshake failed: an unknown CA, a wrong host name, plain HTTP
// spoken to an HTTPS port or the reverse.
func IsTLSError(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return true
	}
	msg := err.Error()
	return IsUnreachable(err) && (strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") ||
		strings.Contains(msg, "server gave HTTP response to HTTPS client"))
}

// IsRetryable says the same call may succeed later without any change: no answer, 429
// (back-pressure) or a 5xx.
func IsRetryable(err error) bool {
	if IsUnreachable(err) {
		return !IsTLSError(err)
	}
	s := statusOf(err)
	return s == 429 || s >= 500
}

// ErrorType is OpenSearch's error type of err, empty when err is not an API error.
func ErrorType(err error) string {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Type
	}
	return ""
}

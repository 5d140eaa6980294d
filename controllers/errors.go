package controllers

import (
	"errors"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// failure is why a step could not finish: a condition reason and message, and whether the
// same call may succeed later on its own (then the reconcile backs off and retries).
type failure struct {
	reason    string
	message   string
	transient bool
}

// reasonError is a step's own refusal with a condition reason.
type reasonError struct {
	reason, message string
	transient       bool
}

func (e *reasonError) Error() string { return e.message }

// classify turns an error from a step into a failure with a condition reason.
func classify(err error) failure {
	var ce *connect.Error
	var re *reasonError
	switch {
	case errors.As(err, &re):
		return failure{reason: re.reason, message: re.message, transient: re.transient}
	case errors.As(err, &ce):
		// A Secret may appear or be fixed later; retry on the backoff.
		return failure{reason: ce.Reason, message: ce.Message, transient: true}
	case opensearch.IsTLSError(err):
		return failure{reason: v1alpha1.ReasonTLSError, message: err.Error(), transient: true}
	case opensearch.IsUnreachable(err):
		return failure{reason: v1alpha1.ReasonUnreachable, message: err.Error(), transient: true}
	case opensearch.IsClusterBlocked(err):
		// Clears when the block is lifted (disk freed, block removed): retry on the backoff.
		return failure{reason: v1alpha1.ReasonClusterBlocked, message: err.Error(), transient: true}
	case opensearch.IsUnauthorized(err):
		return failure{reason: v1alpha1.ReasonUnauthorized, message: err.Error(), transient: true}
	case opensearch.IsRetryable(err):
		return failure{reason: v1alpha1.ReasonOpenSearchError, message: err.Error(), transient: true}
	default:
		var apiErr *opensearch.APIError
		if errors.As(err, &apiErr) {
			// OpenSearch refused the request as given; only a spec change helps.
			return failure{reason: v1alpha1.ReasonRejected, message: err.Error()}
		}
		return failure{reason: v1alpha1.ReasonReconciling, message: err.Error(), transient: true}
	}
}

func asConnectError(err error, target **connect.Error) bool { return errors.As(err, target) }

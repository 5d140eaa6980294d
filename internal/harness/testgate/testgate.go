// Package testgate says whether a test run may start real parts (kube-apiserver, OpenSearch,
// the real node, tools from bin/). Plain `go test ./...` runs the unit tests only and needs
// nothing but Go; `make test` (hack/test.sh) turns the integration tests on. It imports
// nothing of the project, so every harness package can use it.
package testgate

import (
	"os"
	"testing"
)

// Env turns integration tests on when set to 1 (hack/test.sh sets it); -short turns them
// off again, as it always did.
const Env = "VECTORPILOT_INTEGRATION"

// Enabled says whether integration tests run. It reads -short from the command line: a
// TestMain asks before the testing flags are parsed.
func Enabled() bool {
	if os.Getenv(Env) != "1" {
		return false
	}
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			return false
		}
	}
	return true
}

// Integration skips t unless integration tests run; needs says what real part it needs.
func Integration(t testing.TB, needs string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("integration test (needs %s): runs under make test, or with %s=1", needs, Env)
	}
}

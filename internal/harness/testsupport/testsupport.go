// Package testsupport gives integration tests the real parts: a kube-apiserver + etcd with
// the CRDs installed, and an OpenSearch node with k-NN. A part that cannot start fails the
// test run with a message saying what is missing; nothing is skipped silently.
package testsupport

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Parts says which real parts a test package needs.
type Parts int

const (
	// Kube is a real kube-apiserver + etcd with the CRDs.
	Kube Parts = 1 << iota
	// OpenSearch is one real OpenSearch node with k-NN, shared by the package's tests.
	OpenSearch
	// Scheduling adds the real kube-scheduler and kube-controller-manager to Kube.
	Scheduling
	// Argo adds Argo Workflows' CRDs (from the pinned Go module) to Kube.
	Argo
)

// SharedNodeEnv names the environment variable with the URL of an OpenSearch node that
// hack/test.sh starts once for a whole `make test` run; SharedNodePIDEnv its process.
const (
	SharedNodeEnv    = "VECTORPILOT_OPENSEARCH_URL"
	SharedNodePIDEnv = "VECTORPILOT_OPENSEARCH_PID"
)

var (
	root         string
	controlPlane *devenv.ControlPlane
	nodeURL      string
	nodePID      string
)

// Main starts the parts, runs the package's tests and stops what it started. Unless
// integration tests run (testgate) it starts nothing, and they skip themselves.
func Main(m *testing.M, parts Parts) int {
	if !testgate.Enabled() {
		return m.Run()
	}
	var err error
	if root, err = devenv.RepoRoot(); err != nil {
		return fail(err)
	}
	if parts&Kube != 0 {
		if controlPlane, err = devenv.StartControlPlane(root); err != nil {
			return fail(err)
		}
		defer func() { _ = controlPlane.Stop() }()
		if parts&Scheduling != 0 {
			if err := controlPlane.StartScheduling(); err != nil {
				return fail(err)
			}
		}
		if parts&Argo != 0 {
			if err := controlPlane.InstallArgoCRDs(); err != nil {
				return fail(err)
			}
		}
	}
	if parts&OpenSearch != 0 {
		nodeURL, nodePID = os.Getenv(SharedNodeEnv), os.Getenv(SharedNodePIDEnv)
		if nodeURL == "" {
			node, err := devenv.StartNode(root, "gotest-"+packageName(), devenv.NodeOptions{})
			if err != nil {
				return fail(fmt.Errorf("real OpenSearch node could not start (hack/install-opensearch.sh assembles it from Maven Central): %w", err))
			}
			defer func() { _ = node.Destroy() }()
			nodeURL, nodePID = node.URL, node.PID
		}
	}
	return m.Run()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "FAIL: real parts unavailable:", err)
	return 1
}

func packageName() string {
	wd, _ := os.Getwd()
	return strings.ReplaceAll(filepath.Base(wd), "_", "-")
}

// ControlPlane is the package's kube-apiserver + etcd; Main must have been asked for Kube.
func ControlPlane(t testing.TB) *devenv.ControlPlane {
	t.Helper()
	testgate.Integration(t, "kube-apiserver and etcd")
	if controlPlane == nil {
		t.Fatal("testsupport.Main was not asked for the Kube part")
	}
	return controlPlane
}

// OpenSearchURL is the package's OpenSearch node; Main must have been asked for OpenSearch.
func OpenSearchURL(t testing.TB) string {
	t.Helper()
	testgate.Integration(t, "a real OpenSearch node")
	if nodeURL == "" {
		t.Fatal("testsupport.Main was not asked for the OpenSearch part")
	}
	return nodeURL
}

// OpenSearchPID is the process of the package's OpenSearch node (the benchmarks read its
// CPU time).
func OpenSearchPID(t testing.TB) int {
	t.Helper()
	OpenSearchURL(t)
	pid, err := strconv.Atoi(nodePID)
	if err != nil {
		t.Fatalf("the OpenSearch node's process is not known (%s=%q)", SharedNodePIDEnv, nodePID)
	}
	return pid
}

// OpenSearchClient is a client of the package's OpenSearch node, closed when the test ends.
func OpenSearchClient(t testing.TB) *opensearch.Client {
	t.Helper()
	c, err := opensearch.New(opensearch.Config{Endpoint: OpenSearchURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Root is the repository root.
func Root(t testing.TB) string {
	t.Helper()
	if root == "" {
		r, err := devenv.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		root = r
	}
	return root
}

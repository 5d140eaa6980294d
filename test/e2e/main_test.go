// Package e2e runs the product on a real node: the operator installed from its Helm chart as
// a Deployment under the chart's ServiceAccount and RBAC, and managed OpenSearch clusters
// in pods (test/sandbox: test/harness/kubenode, images from test/harness/images, the manifests the
// kind sandbox applies too). `make e2e` runs it alone; it is part of `make test`.
package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/test/harness/kubenode"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

const (
	operatorNamespace = sandbox.OperatorNamespace
	release           = sandbox.Release
)

var (
	box     *sandbox.Sandbox
	cluster *kubenode.Cluster
	k8s     client.Client
)

func TestMain(m *testing.M) {
	if !testgate.Enabled() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if box, err = sandbox.Up(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: e2e set-up:", err)
		return 1
	}
	defer box.Down()
	cluster, k8s = box.Cluster, box.Client
	operatorMemory.start(5 * time.Second)
	defer operatorMemory.stop()
	return m.Run()
}

// readSandbox decodes one of the manifests the kind sandbox applies too.
func readSandbox(name string, into any) error { return box.Manifest(name, into) }

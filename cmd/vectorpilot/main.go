// Command vectorpilot is the operator's manager and its command-line tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/version"
)

// newVersionCommand prints the release, the source revision and the Go version.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print which vectorpilot this is",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version.Get()) },
	}
}

func main() {
	root := &cobra.Command{
		Use:           "vectorpilot",
		Short:         "Kubernetes operator for OpenSearch vector search",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand(), newManagerCommand(), newBenchCommand(), newTuneCommand(), newDashboardsCommand(), newChartValuesCommand(), newSysctlCommand(), newCRDsCommand())
	if err := root.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "vectorpilot:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 1, or benchrun.ExitTransient for an OpenSearch failure that may pass, which
// the Workflow steps retry.
func exitCode(err error) int {
	if opensearch.IsRetryable(err) {
		return benchrun.ExitTransient
	}
	return 1
}

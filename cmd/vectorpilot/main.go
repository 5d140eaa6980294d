// Command vectorpilot is the operator's manager and its command-line tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	root := &cobra.Command{
		Use:           "vectorpilot",
		Short:         "Kubernetes operator for OpenSearch vector search",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newManagerCommand(), newDevCommand(), newBenchCommand(), newTuneCommand(), newDashboardsCommand(), newChartValuesCommand(), newSysctlCommand())
	if err := root.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "vectorpilot:", err)
		os.Exit(1)
	}
}

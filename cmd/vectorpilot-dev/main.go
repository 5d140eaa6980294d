// Command vectorpilot-dev is the embedded local default of `make demo`: a real
// kube-apiserver + etcd from bin/ with the CRDs installed, and the operator's manager
// against it, until interrupted. It is a binary of its own so that the shipped operator
// links no development environment (envtest).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/operator"
)

func main() {
	var opts operator.Options
	var logOpts zap.Options
	var kubeconfigOut string
	cmd := &cobra.Command{
		Use:           "vectorpilot-dev",
		Short:         "Run a local control plane with the CRDs installed and the operator against it",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
			root, err := devenv.RepoRoot()
			if err != nil {
				return err
			}
			cp, err := devenv.StartControlPlane(root)
			if err != nil {
				return err
			}
			defer func() { _ = cp.Stop() }()
			kubeconfig, err := cp.AdminKubeconfig()
			if err != nil {
				return err
			}
			if err := os.WriteFile(kubeconfigOut, kubeconfig, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "control plane up: KUBECONFIG=%s\n", kubeconfigOut)
			return operator.Run(cmd.Context(), cp.Config, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigOut, "kubeconfig-out", "bin/run/dev/kubeconfig", "where to write the admin kubeconfig of the local control plane")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of the health probes")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	logOpts.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	if err := cmd.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "vectorpilot-dev:", err)
		os.Exit(1)
	}
}

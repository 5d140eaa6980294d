package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vectorpilot/vectorpilot/internal/devenv"
)

// newDevCommand runs the embedded local default: a real kube-apiserver + etcd from bin/
// with the CRDs installed, and the manager against it, until interrupted.
func newDevCommand() *cobra.Command {
	opts := &managerOptions{}
	var kubeconfigOut string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local control plane with the CRDs installed and the operator against it",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
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
			return runManager(cmd, cp.Config, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigOut, "kubeconfig-out", "bin/run/dev/kubeconfig", "where to write the admin kubeconfig of the local control plane")
	f.StringVar(&opts.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint")
	f.StringVar(&opts.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "address of the health probes")
	return cmd
}

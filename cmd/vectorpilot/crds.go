package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/crds"
)

// newCRDsCommand applies the operator's CRDs: what the chart's pre-upgrade hook runs, since
// Helm installs crds/ but never upgrades them.
func newCRDsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "crds", Short: "Manage the operator's CustomResourceDefinitions", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "apply",
		Short: "Server-side apply this release's CRDs, then check them (the chart's upgrade hook)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			return applyCRDs(cmd, cfg)
		},
	})
	return cmd
}

// applyCRDs applies the CRDs and reads them back: an API server that kept an older schema
// (another field manager, a webhook) fails the command.
func applyCRDs(cmd *cobra.Command, cfg *rest.Config) error {
	wanted, err := crd.All()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return err
	}
	if err := crds.Apply(cmd.Context(), c, wanted); err != nil {
		return err
	}
	outdated, err := crds.Outdated(cmd.Context(), c, wanted)
	if err != nil {
		return err
	}
	if len(outdated) > 0 {
		return fmt.Errorf("applied, yet outdated: %v", outdated)
	}
	for _, w := range wanted {
		fmt.Fprintln(cmd.OutOrStdout(), "applied", w.Name)
	}
	return nil
}

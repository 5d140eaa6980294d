package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vectorpilot/vectorpilot/internal/dashboards"
)

// newDashboardsCommand writes the Grafana dashboards as JSON files.
func newDashboardsCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "dashboards",
		Short: "Write vectorpilot's Grafana dashboards (JSON) to a folder",
		RunE: func(*cobra.Command, []string) error {
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			for name, b := range dashboards.All() {
				raw, err := dashboards.Render(b)
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, name), raw, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "dashboards", "folder to write to")
	return cmd
}

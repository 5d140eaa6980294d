package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// newSysctlCommand is what the privileged init container of an mmap: InitContainer cluster
// runs, in the operator's image: it raises vm.max_map_count and does nothing else.
func newSysctlCommand() *cobra.Command {
	return &cobra.Command{
		Use:    managed.SysctlCommand,
		Short:  fmt.Sprintf("raise vm.max_map_count to %d if lower (the managed pods' privileged init step)", managed.MinMaxMapCount),
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			before, after, err := managed.RaiseMaxMapCount(managed.MaxMapCountPath)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "vm.max_map_count %d → %d\n", before, after)
			return nil
		},
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/chartvalues"
)

// newChartValuesCommand writes the official OpenSearch chart's values, one file per node
// group, from a SearchCluster's managed node pools.
func newChartValuesCommand() *cobra.Command {
	var file, out string
	cmd := &cobra.Command{
		Use:   "chart-values",
		Short: "Write values for the official OpenSearch Helm chart (one release per node group) from a SearchCluster's managed node pools",
		Long: `chart-values reads a SearchCluster manifest with spec.managed.nodePools and writes
<out>/<pool>.yaml for each pool: values of the official chart (opensearch-project/helm-charts,
chart opensearch ` + chartvalues.ChartVersion + `) that give the node group the pool's roles, replicas,
resources, storage, SIMD placement (node affinity), JVM options, k-NN variant and concurrent
search settings, vm.max_map_count choice and the discovery the chart expects. Install each:
  helm install <cluster>-<pool> opensearch/opensearch --version ` + chartvalues.ChartVersion + ` -f <pool>.yaml
then point an external SearchCluster at the client Service.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			sc := &v1alpha1.SearchCluster{}
			if err := yaml.UnmarshalStrict(raw, sc); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			groups, err := chartvalues.NodeGroups(sc)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			for _, g := range groups {
				body, err := yaml.Marshal(g.Values)
				if err != nil {
					return err
				}
				header := fmt.Sprintf("# Node group %s of %s, for the official chart:\n#   helm install %s-%s opensearch/opensearch --version %s -f %s.yaml\n# Written by vectorpilot chart-values from %s.\n",
					g.Name, sc.Name, sc.Name, g.Name, chartvalues.ChartVersion, g.Name, filepath.Base(file))
				path := filepath.Join(out, g.Name+".yaml")
				if err := os.WriteFile(path, append([]byte(header), body...), 0o644); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "SearchCluster manifest with spec.managed.nodePools")
	cmd.Flags().StringVar(&out, "out", "chart-values", "folder for the values files")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

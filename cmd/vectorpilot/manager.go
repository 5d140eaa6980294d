package main

import (
	"flag"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/operator"
)

func newManagerCommand() *cobra.Command {
	var opts operator.Options
	logOpts := zap.Options{Development: false}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the operator: reconcile SearchClusters and VectorIndexes",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			return operator.Run(cmd.Context(), cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to; 0 turns it off")
	f.BoolVar(&opts.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes to GET /metrics (SubjectAccessReview); false serves plain HTTP to anyone who reaches the port")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	f.BoolVar(&opts.LeaderElect, "leader-elect", false, "elect one active manager among replicas (a Lease in the manager's namespace)")
	f.StringVar(&opts.LeaderElectionNS, "leader-election-namespace", "", "namespace of the leader election Lease; the pod's namespace when empty")
	f.StringVar(&opts.WatchNamespace, "watch-namespace", "", "watch only this namespace (namespaced install); all namespaces when empty")
	f.DurationVar(&opts.CRDCheckInterval, "crd-check-interval", 30*time.Second, "how often the CRDs are read again while they are older than this operator (its controllers wait for them)")
	c := &opts.Controllers
	f.DurationVar(&c.SnapshotStallTimeout, "snapshot-stall-timeout", 30*time.Minute, "abort a running snapshot whose shards and bytes done have not moved for this long")
	f.DurationVar(&c.MetricsInterval, "opensearch-stats-interval", 30*time.Second, "how often the metrics read OpenSearch's statistics (search counters, node CPU, heap, k-NN, snapshots); scraping the metrics faster only repeats samples")
	f.Int64Var(&c.LocalBenchmarkMaxBytes, "local-benchmark-max-bytes", 256<<20, "most bytes of vectors a Local BenchmarkRun may hold in the operator's memory")
	f.StringVar(&c.SysctlImage, "sysctl-image", "", "image of the privileged init container that raises vm.max_map_count for mmap: InitContainer clusters, running `vectorpilot "+managed.SysctlCommand+"` (the operator's own image; the chart sets it); empty refuses that mode")
	f.StringVar(&c.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, which managed clusters' NetworkPolicies admit (POD_NAMESPACE from the downward API by default)")
	f.StringSliceVar(&c.BenchmarkRunners.WorkflowTemplates, "benchmark-allowed-workflow-templates", []string{"vectorpilot-benchmark-sweep"}, "WorkflowTemplates an Argo BenchmarkRun may name as spec.runner.workflowTemplateRef (an entry ending in * matches by prefix); the shipped sweep template by default")
	f.StringSliceVar(&c.BenchmarkRunners.Images, "benchmark-allowed-images", nil, "images an Argo BenchmarkRun may set as spec.runner.image (an entry ending in * matches by prefix); none by default")
	f.StringSliceVar(&c.BenchmarkRunners.ServiceAccounts, "benchmark-allowed-service-accounts", nil, "service accounts an Argo BenchmarkRun may set as spec.runner.serviceAccountName; none by default")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	logOpts.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	return cmd
}

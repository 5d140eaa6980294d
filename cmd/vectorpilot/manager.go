package main

import (
	"context"
	"flag"
	"math"
	"os"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/crds"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/version"
)

// managerOptions are the manager's command-line settings.
type managerOptions struct {
	metricsAddr      string
	metricsSecure    bool
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	watchNamespace   string
	crdCheckInterval time.Duration
	// skipNameValidation lets tests run one manager after another in one process, where
	// controller names would repeat (no flag: one manager per process otherwise).
	skipNameValidation bool
	controllers        controllers.Options
	zap                zap.Options
}

func newManagerCommand() *cobra.Command {
	opts := &managerOptions{zap: zap.Options{Development: false}}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the operator: reconcile SearchClusters and VectorIndexes",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			return runManager(cmd, cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to; 0 turns it off")
	f.BoolVar(&opts.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes to GET /metrics (SubjectAccessReview); false serves plain HTTP to anyone who reaches the port")
	f.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	f.BoolVar(&opts.leaderElect, "leader-elect", false, "elect one active manager among replicas (a Lease in the manager's namespace)")
	f.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader election Lease; the pod's namespace when empty")
	f.StringVar(&opts.watchNamespace, "watch-namespace", "", "watch only this namespace (namespaced install); all namespaces when empty")
	f.DurationVar(&opts.crdCheckInterval, "crd-check-interval", 30*time.Second, "how often the CRDs are read again while they are older than this operator (its controllers wait for them)")
	f.DurationVar(&opts.controllers.SnapshotStallTimeout, "snapshot-stall-timeout", 30*time.Minute, "abort a running snapshot whose shards and bytes done have not moved for this long")
	f.DurationVar(&opts.controllers.MetricsInterval, "opensearch-stats-interval", 30*time.Second, "how often the metrics read OpenSearch's statistics (search counters, node CPU, heap, k-NN, snapshots); scraping the metrics faster only repeats samples")
	f.Int64Var(&opts.controllers.LocalBenchmarkMaxBytes, "local-benchmark-max-bytes", 256<<20, "most bytes of vectors a Local BenchmarkRun may hold in the operator's memory")
	f.StringVar(&opts.controllers.SysctlImage, "sysctl-image", "", "image of the privileged init container that raises vm.max_map_count for mmap: InitContainer clusters, running `vectorpilot "+managed.SysctlCommand+"` (the operator's own image; the chart sets it); empty refuses that mode")
	f.StringVar(&opts.controllers.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, which managed clusters' NetworkPolicies admit (POD_NAMESPACE from the downward API by default)")
	f.StringSliceVar(&opts.controllers.BenchmarkRunners.WorkflowTemplates, "benchmark-allowed-workflow-templates", []string{"vectorpilot-benchmark-sweep"}, "WorkflowTemplates an Argo BenchmarkRun may name as spec.runner.workflowTemplateRef (an entry ending in * matches by prefix); the shipped sweep template by default")
	f.StringSliceVar(&opts.controllers.BenchmarkRunners.Images, "benchmark-allowed-images", nil, "images an Argo BenchmarkRun may set as spec.runner.image (an entry ending in * matches by prefix); none by default")
	f.StringSliceVar(&opts.controllers.BenchmarkRunners.ServiceAccounts, "benchmark-allowed-service-accounts", nil, "service accounts an Argo BenchmarkRun may set as spec.runner.serviceAccountName; none by default")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.zap.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	return cmd
}

// runManager runs the controllers until the command's context ends (SIGTERM/SIGINT), then
// drains them within the graceful shutdown timeout.
func runManager(cmd *cobra.Command, cfg *rest.Config, opts *managerOptions) error {
	log := ctrl.Log.WithName("setup")
	info := version.Get()
	log.Info("starting", "version", info.Version, "revision", info.Revision, "modified", info.Modified, "go", info.GoVersion)
	// The Go runtime collects before the container's memory limit is reached (90% of the
	// cgroup's limit, unless GOMEMLIMIT or AUTOMEMLIMIT say otherwise): without it the heap
	// grows to twice what is live, and Local benchmark runs near their budget would get the
	// pod OOM-killed. No limit leaves the runtime as it is.
	if limit, err := memlimit.Set(); err != nil {
		log.Info("GOMEMLIMIT not set from the container's memory limit", "error", err.Error())
	} else if limit < math.MaxInt64 {
		log.Info("GOMEMLIMIT set", "bytes", limit)
	}
	mgrOpts := ctrl.Options{
		Scheme:                        controllers.Scheme(),
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "vectorpilot.vectorpilot.io",
		LeaderElectionNamespace:       opts.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptrTo(30 * time.Second),
		Cache:                         controllers.CacheOptions(opts.watchNamespace, controllers.ArgoServed(cfg)),
		Controller:                    config.Controller{SkipNameValidation: &opts.skipNameValidation},
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return err
	}
	if err := gateControllers(cmd.Context(), mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting manager", "metrics", opts.metricsAddr, "probes", opts.probeAddr, "leaderElection", opts.leaderElect)
	return mgr.Start(cmd.Context())
}

func ptrTo[T any](v T) *T { return &v }

// gateControllers sets the controllers up once the installed CRDs are as new as the
// operator's (internal/crds): at once when they are, else when a later read finds them so,
// reporting them meanwhile. Readiness fails while they wait. An operator not allowed to
// read CRDs cannot tell and runs.
func gateControllers(ctx context.Context, mgr ctrl.Manager, opts *managerOptions) error {
	log := ctrl.Log.WithName("crds")
	wanted, err := crd.All()
	if err != nil {
		return err
	}
	gate := &crds.Gate{
		Reader:   mgr.GetAPIReader(),
		Wanted:   wanted,
		Recorder: mgr.GetEventRecorder("vectorpilot-crds"),
		Log:      log,
		Interval: opts.crdCheckInterval,
		Open:     func() error { return controllers.Setup(mgr, opts.controllers) },
	}
	if err := mgr.AddReadyzCheck("readyz", gate.Ready); err != nil {
		return err
	}
	switch open, err := gate.Check(ctx); {
	case open:
		return err
	case apierrors.IsForbidden(err):
		log.Info("not allowed to read the CRDs: not checking them against this operator's", "error", err.Error())
		return gate.Open()
	case err != nil:
		log.Error(err, "reading the CRDs; trying again")
	}
	return mgr.Add(gate)
}

// metricsOptions serve the metrics securely unless told otherwise: HTTPS (a self-signed
// certificate unless one is mounted), and only to callers the API server says may GET
// /metrics — Prometheus with the usual nonResourceURLs rule, as kube-prometheus-stack
// grants it.
func metricsOptions(opts *managerOptions) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.metricsAddr}
	if opts.metricsSecure {
		o.SecureServing, o.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	return o
}

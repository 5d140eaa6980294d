// Package operator runs the operator's manager: the controllers behind the CRD gate, the
// metrics and probe servers, leader election. The shipped binary's `manager` command and
// the development binary's local control plane (cmd/vectorpilot-dev) both run it, so the
// shipped one links no development environment.
package operator

import (
	"context"
	"math"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/crds"
	"github.com/vectorpilot/vectorpilot/internal/version"
)

// Options are the manager's settings (the manager command's flags).
type Options struct {
	MetricsAddr      string
	MetricsSecure    bool
	ProbeAddr        string
	LeaderElect      bool
	LeaderElectionNS string
	WatchNamespace   string
	CRDCheckInterval time.Duration
	// SkipNameValidation lets tests run one manager after another in one process, where
	// controller names would repeat (no flag: one manager per process otherwise).
	SkipNameValidation bool
	Controllers        controllers.Options
}

// Run runs the controllers until ctx ends (SIGTERM/SIGINT), then drains them within the
// graceful shutdown timeout.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
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
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              "vectorpilot.vectorpilot.io",
		LeaderElectionNamespace:       opts.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(30 * time.Second),
		Cache:                         controllers.CacheOptions(opts.WatchNamespace, controllers.ArgoServed(cfg)),
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipNameValidation},
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return err
	}
	if err := gateControllers(ctx, mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting manager", "metrics", opts.MetricsAddr, "probes", opts.ProbeAddr, "leaderElection", opts.LeaderElect)
	return mgr.Start(ctx)
}

// gateControllers sets the controllers up once the installed CRDs are as new as the
// operator's (internal/crds): at once when they are, else when a later read finds them so,
// reporting them meanwhile. Readiness fails while they wait. An operator not allowed to
// read CRDs cannot tell and runs.
func gateControllers(ctx context.Context, mgr ctrl.Manager, opts Options) error {
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
		Interval: opts.CRDCheckInterval,
		Open:     func() error { return controllers.Setup(mgr, opts.Controllers) },
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
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.MetricsSecure {
		o.SecureServing, o.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	return o
}

package crds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=benchmarkruns.vectorpilot.io;searchclusters.vectorpilot.io;snapshotpolicies.vectorpilot.io;vectorindices.vectorpilot.io;vectorsnapshots.vectorpilot.io

// Gate keeps the controllers from running against CRDs older than the operator: each
// write would prune the fields the old schema lacks. While any CRD is outdated it says so
// in the log, in a Warning Event on the CRD and in vectorpilot_crd_outdated, fails the
// readiness check, and reads the CRDs again every Interval; once they are current it calls
// Open (which starts the controllers) and is done.
type Gate struct {
	Reader   client.Reader
	Wanted   []*apiextensionsv1.CustomResourceDefinition
	Recorder recorder.EventRecorder
	Log      logr.Logger
	Interval time.Duration
	Open     func() error

	outdated atomic.Pointer[string]
}

// Check reads the CRDs once: it opens the gate when they are current and reports them
// otherwise. It says whether the gate is open; open, the error is Open's.
func (g *Gate) Check(ctx context.Context) (bool, error) {
	outdated, err := Outdated(ctx, g.Reader, g.Wanted)
	if err != nil {
		return false, err
	}
	for _, w := range g.Wanted {
		metrics.CRDOutdated.WithLabelValues(w.Name).Set(map[bool]float64{true: 1}[len(outdated[w.Name]) > 0])
	}
	if len(outdated) == 0 {
		g.outdated.Store(nil)
		return true, g.Open()
	}
	var say []string
	for _, name := range slices.Sorted(maps.Keys(outdated)) {
		m := outdated[name]
		msg := fmt.Sprintf("CRD %s is older than this operator: it lacks %s", name, strings.Join(m[:min(len(m), 8)], ", "))
		if len(m) > 8 {
			msg += fmt.Sprintf(" and %d more", len(m)-8)
		}
		say = append(say, msg)
		var crd apiextensionsv1.CustomResourceDefinition
		if err := g.Reader.Get(ctx, client.ObjectKey{Name: name}, &crd); err == nil {
			g.Recorder.Eventf(&crd, nil, corev1.EventTypeWarning, v1alpha1.ReasonCRDOutdated, "CheckCRDs", "%s; the controllers wait: %s", msg, Remedy)
		}
	}
	report := strings.Join(say, "; ")
	g.outdated.Store(&report)
	g.Log.Error(errors.New(report), "the controllers wait for current CRDs", "remedy", Remedy)
	return false, nil
}

// Remedy says how to bring the CRDs up to date.
const Remedy = "apply this release's CRDs (helm upgrade runs its crds hook; or kubectl apply --server-side -f config/crd/bases, or vectorpilot crds apply)"

// Start checks until the CRDs are current; a failed read is retried too.
func (g *Gate) Start(ctx context.Context) error {
	for {
		open, err := g.Check(ctx)
		if open {
			return err // the controllers' set-up failed: the manager stops
		}
		if err != nil {
			g.Log.Error(err, "reading the CRDs")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cmp.Or(g.Interval, 30*time.Second)):
		}
	}
}

// NeedLeaderElection is false: every replica checks, so each starts its controllers.
func (g *Gate) NeedLeaderElection() bool { return false }

// Ready is a readiness check: failing while the CRDs are outdated.
func (g *Gate) Ready(*http.Request) error {
	if r := g.outdated.Load(); r != nil {
		return errors.New(*r)
	}
	return nil
}

package crds

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/controllers"
)

// TestGateReturnsWhatOpenFails: with current CRDs the gate opens, and a failure to set
// the controllers up is the gate's failure — at start-up (Check) and later (Start) — never
// an operator that runs with no controllers. (A fake client: only the gate's logic is
// under test; cmd/vectorpilot tests the gate against a real API server.)
func TestGateReturnsWhatOpenFails(t *testing.T) {
	wanted, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(controllers.Scheme())
	for _, w := range wanted {
		b = b.WithObjects(w.DeepCopy())
	}
	setupFailed := errors.New("setup failed")
	g := &Gate{Reader: b.Build(), Wanted: wanted, Recorder: events.NewFakeRecorder(10), Log: logr.Discard(), Open: func() error { return setupFailed }}
	if open, err := g.Check(context.Background()); !open || !errors.Is(err, setupFailed) {
		t.Errorf("Check: open %v, err %v; want open with the setup's error", open, err)
	}
	if err := g.Start(context.Background()); !errors.Is(err, setupFailed) {
		t.Errorf("Start: %v; want the setup's error", err)
	}
}

// Package operatortest runs the operator — a manager with every controller — inside a
// test process. It lives beside controllers, not in internal/harness, because it imports
// them: the harness stays below the product it tests.
package operatortest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// Run creates namespace (unless it exists) and runs the operator — a manager with every controller —
// in the test process against the package's control plane, watching only that namespace,
// until the test or benchmark ends. metricsAddr "0" turns the metrics endpoint off. It
// returns an uncached client for the test's own reads and writes.
func Run(t testing.TB, namespace, metricsAddr string, opts controllers.Options) client.Client {
	t.Helper()
	cp := testsupport.ControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 controllers.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(namespace, controllers.ArgoServed(cp.Config)),
		// Tests run one manager after another in the same process; controller names repeat.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return k8s
}

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/operator"
)

// freePort is a loopback address nothing listens on yet.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestTheOperatorWaitsForCurrentCRDs: with the SearchCluster CRD as an older release left
// it (no status.drainingNodes, status.allocationRestricted: the API server would prune
// them on each write), the manager runs but its controllers do not: readiness fails, the
// metric and a Warning Event on the CRD name what is missing, and a SearchCluster is not
// reconciled. After `vectorpilot crds apply` the controllers start without a restart.
func TestTheOperatorWaitsForCurrentCRDs(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	ctx := t.Context()
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	cmd.SetOut(io.Discard)
	t.Cleanup(func() {
		// The next test finds the CRDs as the package's control plane installed them.
		if err := applyCRDs(cmd, cp.Config); err != nil {
			t.Error(err)
		}
	})
	var scCRD apiextensionsv1.CustomResourceDefinition
	if err := k8s.Get(ctx, client.ObjectKey{Name: "searchclusters.vectorpilot.io"}, &scCRD); err != nil {
		t.Fatal(err)
	}
	status := scCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	delete(status.Properties, "drainingNodes")
	delete(status.Properties, "allocationRestricted")
	scCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = status
	if err := k8s.Update(ctx, &scCRD); err != nil {
		t.Fatal(err)
	}

	ns := fmt.Sprintf("crds-%d", time.Now().UnixNano()%100000)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := freePort(t), freePort(t)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(runCtx, cp.Config, operator.Options{MetricsAddr: metricsAddr, ProbeAddr: probeAddr, WatchNamespace: ns, CRDCheckInterval: 300 * time.Millisecond, SkipNameValidation: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	get := func(url string) (int, string) {
		resp, err := http.Get(url) //nolint:gosec,noctx // loopback test server
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually := func(what string, check func() (bool, string)) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			var ok bool
			if ok, last = check(); ok {
				return
			}
		}
		t.Fatalf("%s: %s", what, last)
	}
	const outdated = `vectorpilot_crd_outdated{crd="searchclusters.vectorpilot.io"}`
	eventually("metric says the CRD is outdated", func() (bool, string) {
		_, body := get("http://" + metricsAddr + "/metrics")
		return strings.Contains(body, outdated+" 1") && strings.Contains(body, `vectorpilot_crd_outdated{crd="vectorindices.vectorpilot.io"} 0`), grep(body, "vectorpilot_crd_outdated")
	})
	if code, body := get("http://" + probeAddr + "/readyz"); code != http.StatusInternalServerError {
		t.Errorf("readyz while the CRDs are outdated: %d %s", code, body)
	}
	eventually("a Warning Event on the CRD names what it lacks", func() (bool, string) {
		var events eventsv1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, err.Error()
		}
		for _, ev := range events.Items {
			if ev.Regarding.Name == "searchclusters.vectorpilot.io" && ev.Reason == v1alpha1.ReasonCRDOutdated {
				ok := ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Note, "status.allocationRestricted") && strings.Contains(ev.Note, "status.drainingNodes")
				return ok, ev.Note
			}
		}
		return false, fmt.Sprintf("no CRDOutdated event among %d", len(events.Items))
	})
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "waits", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "http://127.0.0.1:1"}}}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil || sc.Status.ObservedGeneration != 0 {
		t.Fatalf("reconciled against an outdated CRD: observedGeneration %d (%v)", sc.Status.ObservedGeneration, err)
	}

	if err := applyCRDs(cmd, cp.Config); err != nil {
		t.Fatal(err)
	}
	eventually("the controllers start once the CRDs are current", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc)
		return err == nil && sc.Status.ObservedGeneration == sc.Generation, fmt.Sprintf("observedGeneration %d (%v)", sc.Status.ObservedGeneration, err)
	})
	eventually("ready, and the metric back to 0", func() (bool, string) {
		code, _ := get("http://" + probeAddr + "/readyz")
		_, body := get("http://" + metricsAddr + "/metrics")
		return code == http.StatusOK && strings.Contains(body, outdated+" 0"), fmt.Sprintf("readyz %d, %s", code, grep(body, "vectorpilot_crd_outdated"))
	})
}

// grep is the lines of text that contain s.
func grep(text, s string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/internal/kubenode"
)

// TestOperatorPodStayedUp runs last (go test runs a package's files in name order): over
// the whole e2e run the operator's container never restarted. It reports its memory as the
// kubelet measures it (stats/summary through the apiserver's node proxy) and every Event
// the operator emitted.
func TestOperatorPodStayedUp(t *testing.T) {
	integration(t)
	ctx := context.Background()
	pod := operatorPod(t)
	for _, s := range pod.Status.ContainerStatuses {
		if s.RestartCount != 0 {
			t.Errorf("operator container %s restarted %d times (last state %+v)", s.Name, s.RestartCount, s.LastTerminationState)
		}
	}
	raw, err := cluster.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", kubenode.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Pods []struct {
			PodRef     struct{ Name, Namespace string } `json:"podRef"`
			Containers []struct {
				Name   string `json:"name"`
				Memory struct {
					RSSBytes        *uint64 `json:"rssBytes"`
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range summary.Pods {
		if p.PodRef.Name != pod.Name {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.RSSBytes == nil {
				t.Logf("operator container %s: RSS not reported by the kubelet", c.Name)
				continue
			}
			found = true
			t.Logf("operator container %s: RSS %.1f MiB, working set %.1f MiB", c.Name,
				float64(*c.Memory.RSSBytes)/(1<<20), float64(*c.Memory.WorkingSetBytes)/(1<<20))
		}
	}
	if !found {
		t.Log("the kubelet's summary has no memory figures for the operator pod yet")
	}
	var events corev1.EventList
	if err := k8s.List(ctx, &events, client.InNamespace("")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if !strings.HasPrefix(e.ReportingController, "vectorpilot") && !strings.HasPrefix(e.Source.Component, "vectorpilot") {
			continue
		}
		n++
		t.Logf("event %s %s/%s %s: %s (×%d)", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1))
	}
	t.Logf("%d events from the operator", n)
}

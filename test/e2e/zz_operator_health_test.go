package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/test/harness/kubenode"
)

// TestOperatorPodStayedUp runs last (go test runs a package's files in name order): over
// the whole e2e run the operator's container never restarted. It reports its memory as the
// kubelet measures it (stats/summary through the apiserver's node proxy), sampled every few
// seconds from the chart's install to now, and every Event the operator emitted.
func TestOperatorPodStayedUp(t *testing.T) {
	integration(t)
	ctx := context.Background()
	pod := operatorPod(t)
	for _, s := range pod.Status.ContainerStatuses {
		if s.RestartCount != 0 {
			t.Errorf("operator container %s restarted %d times (last state %+v)", s.Name, s.RestartCount, s.LastTerminationState)
		}
	}
	memory := operatorMemory.stop()
	if memory.samples == 0 {
		t.Errorf("the kubelet reported the operator's memory in none of the samples (last error: %v)", memory.err)
	} else {
		t.Logf("operator RSS over the run: max %.1f MiB, last %.1f MiB (working set max %.1f MiB), %d samples over %s",
			mib(memory.maxRSS), mib(memory.lastRSS), mib(memory.maxWorkingSet), memory.samples, memory.span.Round(time.Second))
	}
	var events corev1.EventList
	if err := k8s.List(ctx, &events, client.InNamespace("")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if !strings.HasPrefix(e.ReportingController, "vectorpilot-") && !strings.HasPrefix(e.Source.Component, "vectorpilot-") {
			continue
		}
		n++
		t.Logf("event %s %s/%s %s: %s (×%d)", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1))
	}
	t.Logf("%d events from the operator", n)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// operatorMemory samples the operator container's memory from the chart's install on.
var operatorMemory = &memorySampler{}

// memorySampler reads the operator container's memory from the kubelet every interval
// until stop; the figures are what the kubelet measured, samples counts the readings.
type memorySampler struct {
	mu                             sync.Mutex
	samples                        int
	maxRSS, lastRSS, maxWorkingSet uint64
	span                           time.Duration
	err                            error
	cancel                         context.CancelFunc
	done                           chan struct{}
}

func (m *memorySampler) start(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	began := time.Now()
	go func() {
		defer close(m.done)
		for {
			rss, ws, err := readOperatorMemory(ctx)
			m.mu.Lock()
			if err != nil {
				m.err = err
			} else {
				m.samples++
				m.lastRSS, m.maxRSS, m.maxWorkingSet = rss, max(m.maxRSS, rss), max(m.maxWorkingSet, ws)
				m.span = time.Since(began)
			}
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
}

// stop ends the sampling and returns the figures.
func (m *memorySampler) stop() memorySampler {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return memorySampler{samples: m.samples, maxRSS: m.maxRSS, lastRSS: m.lastRSS, maxWorkingSet: m.maxWorkingSet, span: m.span, err: m.err}
}

// readOperatorMemory is the operator container's RSS and working set from the kubelet's
// stats/summary, read through the apiserver's node proxy.
func readOperatorMemory(ctx context.Context) (rss, workingSet uint64, err error) {
	pod, err := findOperatorPod(ctx)
	if err != nil {
		return 0, 0, err
	}
	raw, err := cluster.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", kubenode.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		return 0, 0, err
	}
	var summary struct {
		Pods []struct {
			PodRef     struct{ Name, Namespace string } `json:"podRef"`
			Containers []struct {
				Memory struct {
					RSSBytes        *uint64 `json:"rssBytes"`
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return 0, 0, err
	}
	for _, p := range summary.Pods {
		if p.PodRef.Name != pod.Name || p.PodRef.Namespace != operatorNamespace {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.RSSBytes != nil && c.Memory.WorkingSetBytes != nil {
				return *c.Memory.RSSBytes, *c.Memory.WorkingSetBytes, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("the kubelet's summary has no memory figures for %s yet", pod.Name)
}

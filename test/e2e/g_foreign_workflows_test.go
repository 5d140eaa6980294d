package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// foreignWorkflows is how many Workflows of another team the test puts in the cluster.
const foreignWorkflows = 5000

// TestForeignWorkflowsLeaveTheOperatorsMemoryAlone: 5,000 Argo Workflows that are not the
// operator's (another team's, about 8 KiB each, labelled for another Argo instance so the
// sandbox's workflow controller leaves them alone too) appear in the cluster; the
// operator's informer selects only its own (vectorpilot.io/benchmark-run), so its RSS, as
// the kubelet measures it, does not grow with them. Caching them would hold their ~40 MiB
// of JSON, decoded.
func TestForeignWorkflowsLeaveTheOperatorsMemoryAlone(t *testing.T) {
	integration(t)
	ctx := context.Background()
	before := operatorRSS(t, 3)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "another-team"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The clean-up waits for the namespace to be gone: deleting 5,000 Workflows kept the
	// sandbox's API server, etcd and controller-manager on more than a core of this machine
	// for over a minute, and the test after this one (a rolling restart under load) timed
	// its queries out on the node's starved pods while they did.
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
			return
		}
		started := time.Now()
		waitFor(t, 10*time.Minute, "namespace "+ns.Name+" and its Workflows deleted", func() (bool, string) {
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			return apierrors.IsNotFound(err), fmt.Sprintf("namespace still there (%v)", err)
		})
		t.Logf("namespace %s and its Workflows deleted in %s", ns.Name, time.Since(started).Round(time.Second))
	})

	// A realistic spec: a container step with its arguments, and the kind of annotation
	// (a rendered config) that makes real Workflows weigh kilobytes.
	config := strings.Repeat("x", 8<<10)
	var created, bytes atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	names := make(chan int)
	started := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				wf := &wfv1.Workflow{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("etl-%05d", i), Namespace: ns.Name,
						Labels:      map[string]string{"workflows.argoproj.io/controller-instanceid": "another-team"},
						Annotations: map[string]string{"another-team.example/config": config}},
					Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main",
						Container: &corev1.Container{Image: "registry.example/etl:1.0", Args: []string{"--shard", fmt.Sprint(i)}}}}},
				}
				if err := k8s.Create(ctx, wf); err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				created.Add(1)
				if b, err := json.Marshal(wf); err == nil {
					bytes.Add(int64(len(b)))
				}
			}
		}()
	}
	for i := range foreignWorkflows {
		names <- i
	}
	close(names)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("creating the foreign Workflows: %v (%d created)", firstErr, created.Load())
	}
	var list wfv1.WorkflowList
	if err := k8s.List(ctx, &list, client.InNamespace(ns.Name)); err != nil || len(list.Items) != foreignWorkflows {
		t.Fatalf("listing the foreign Workflows: %d, %v", len(list.Items), err)
	}
	t.Logf("%d foreign Workflows (%.1f MiB of JSON) created in %s", created.Load(), mib(uint64(bytes.Load())), time.Since(started).Round(time.Second))
	// An informer that watched them would have listed them by now; the samples span a
	// minute so a resync or a GC cycle shows.
	time.Sleep(15 * time.Second)
	after := operatorRSS(t, 12)
	t.Logf("operator RSS: %.1f MiB before (max of 3 samples), %.1f MiB with the foreign Workflows (max of 12 samples over a minute)", mib(before), mib(after))
	if grew := int64(after) - int64(before); grew > 16<<20 {
		t.Errorf("the operator's RSS grew by %.1f MiB with %d foreign Workflows (%.1f MiB of JSON): it caches them", float64(grew)/(1<<20), foreignWorkflows, mib(uint64(bytes.Load())))
	}
	for _, s := range operatorPod(t).Status.ContainerStatuses {
		if s.RestartCount != 0 {
			t.Errorf("operator container %s restarted %d times", s.Name, s.RestartCount)
		}
	}
}

// operatorRSS is the highest of n readings of the operator container's RSS, 5 s apart.
func operatorRSS(t *testing.T, n int) uint64 {
	t.Helper()
	var highest uint64
	for i := range n {
		if i > 0 {
			time.Sleep(5 * time.Second)
		}
		rss, _, err := readOperatorMemory(context.Background())
		if err != nil {
			t.Fatalf("reading the operator's memory from the kubelet: %v", err)
		}
		highest = max(highest, rss)
	}
	return highest
}

// Command democluster is `make demo-cluster`: a managed OpenSearch cluster end to end on the
// real node. It starts the sandbox (test/sandbox: node, images, the operator from its chart),
// applies the managed SearchCluster and VectorIndex the kind sandbox applies
// (hack/sandbox/), runs a Local BenchmarkRun against it and prints what the cluster and the
// operator report. Everything is stopped at the end, unless -keep.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

const namespace = "search"

func main() {
	keep := flag.Bool("keep", false, "leave the sandbox running until interrupted")
	vectors := flag.Int("vectors", 20000, "vectors the benchmark loads")
	flag.Parse()
	if err := run(*keep, int32(*vectors)); err != nil {
		fmt.Fprintln(os.Stderr, "demo-cluster:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m== "+format+"\033[0m\n", args...) }

func run(keep bool, vectors int32) error {
	step("1. A real node: control plane, containerd, kubelet, kube-proxy, CoreDNS; images; the operator from its chart")
	box, err := sandbox.Up(os.Stdout)
	if err != nil {
		return err
	}
	defer box.Down()
	ctx := context.Background()
	k8s := box.Client
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		return err
	}

	step("2. kubectl apply -f hack/sandbox/searchcluster-managed.yaml (image: %s, security off: the image has no security plugin)", box.OpenSearchImage)
	sc := &v1alpha1.SearchCluster{}
	if err := box.Manifest("searchcluster-managed.yaml", sc); err != nil {
		return err
	}
	sc.Namespace = namespace
	box.RunHere(sc)
	applied := time.Now()
	if err := k8s.Create(ctx, sc); err != nil {
		return err
	}
	if err := box.WaitReady(ctx, sc, func() []metav1.Condition { return sc.Status.Conditions }, 10*time.Minute, os.Stdout); err != nil {
		return err
	}
	fmt.Printf("SearchCluster Ready %s after it was applied\n", time.Since(applied).Round(time.Second))
	base := fmt.Sprintf("http://%s.%s.svc:%d", managed.ClientServiceName(sc), namespace, managed.HTTPPort)
	var svc corev1.Service
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: managed.ClientServiceName(sc)}, &svc); err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, managed.HTTPPort)
	fmt.Printf("client Service %s (%s, routed from this machine through the node)\n", base, url)
	for _, path := range []string{"/_cat/nodes?v&h=name,ip,node.role,cluster_manager,heap.max", "/_cluster/health?pretty"} {
		body, err := sandbox.Get(url + path)
		if err != nil {
			return err
		}
		fmt.Printf("GET %s\n%s\n", path, strings.TrimRight(body, "\n"))
	}
	for _, p := range sc.Status.Pools {
		fmt.Printf("status.pools[%s]: %d/%d ready, CPU %s, k-NN variant %s (as OpenSearch reports it)\n", p.Name, p.ReadyReplicas, p.Replicas, p.NodeSIMD, p.SIMD)
	}

	step("3. kubectl apply -f hack/sandbox/vectorindex-managed.yaml")
	index := &v1alpha1.VectorIndex{}
	if err := box.Manifest("vectorindex-managed.yaml", index); err != nil {
		return err
	}
	index.Namespace = namespace
	if err := k8s.Create(ctx, index); err != nil {
		return err
	}
	if err := box.WaitReady(ctx, index, func() []metav1.Condition { return index.Status.Conditions }, 3*time.Minute, os.Stdout); err != nil {
		return err
	}

	step("4. A Local BenchmarkRun: %d vectors loaded through the client Service, recall@10 against brute force", vectors)
	run := sandbox.RecallRun(namespace, "demo", index.Name, vectors, 0, 2)
	if err := k8s.Create(ctx, run); err != nil {
		return err
	}
	if err := box.WaitSucceeded(ctx, run, 10*time.Minute); err != nil {
		return err
	}
	fmt.Println("slices clients      p50 ms      p99 ms        QPS  recall@10")
	for _, c := range run.Status.Results {
		fmt.Printf("%6d %7d %11s %11s %10s %10s\n", c.SliceCount, c.Clients, c.P50Ms, c.P99Ms, c.QPS, c.Recall)
	}

	if keep {
		step("Left running until interrupted")
		fmt.Printf("  export KUBECONFIG=%s\n  kubectl -n %s get searchclusters,vectorindices,pods -o wide\n  curl %s/_cat/nodes?v\n",
			box.Cluster.Kubeconfig, namespace, url)
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		<-stop
	}
	step("Stopping the node (every process by PID, the network namespace, cgroups, mounts)")
	return nil
}

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

func integration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the real node")
	}
}

// operatorPod is the operator's one running pod.
func operatorPod(t *testing.T) corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "vectorpilot", "app.kubernetes.io/instance": release}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("want 1 operator pod, have %d", len(pods.Items))
	}
	return pods.Items[0]
}

// TestOperatorRunsAsItsDeployment: the operator from the chart runs as its Deployment's pod
// under the chart's ServiceAccount (restricted Pod Security), holds the leader Lease, and
// serves metrics to a token allowed to read them.
func TestOperatorRunsAsItsDeployment(t *testing.T) {
	integration(t)
	ctx := context.Background()
	pod := operatorPod(t)
	if pod.Spec.ServiceAccountName != release+"-vectorpilot" {
		t.Errorf("operator runs as ServiceAccount %q, want the chart's %q", pod.Spec.ServiceAccountName, release+"-vectorpilot")
	}
	var lease coordinationv1.Lease
	deadline := time.Now().Add(time.Minute)
	for {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "vectorpilot.vectorpilot.io"}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && strings.HasPrefix(*lease.Spec.HolderIdentity, pod.Name) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader Lease not held by %s: %v %+v", pod.Name, err, lease.Spec)
		}
		time.Sleep(time.Second)
	}
	t.Logf("leader Lease held by %s", *lease.Spec.HolderIdentity)

	// A scraper: a ServiceAccount bound to the chart's metrics-reader ClusterRole.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: operatorNamespace}}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-vectorpilot-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: operatorNamespace}},
	}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	token, err := cluster.Client.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, "scraper",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s:8443/metrics", pod.Status.PodIP)
	// The metrics server's certificate is self-signed by controller-runtime; what is checked
	// here is who may read, not whom the scraper talks to.
	scrape := func(bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("scraping %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		code, body := scrape(token.Status.Token)
		if code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics with the scraper's token: HTTP %d\n%.500s", code, body)
		}
		time.Sleep(2 * time.Second)
	}
	if code, _ := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: HTTP %d, want 401", code)
	}
}

// TestManagedClusterServesVectorsFromPods: a managed SearchCluster of three
// cluster_manager+data nodes on a stock node (vm.max_map_count 65530, the default mmap
// setting) forms one OpenSearch cluster in pods through its headless Service; the operator,
// in its pod, reaches it through the client Service; a VectorIndex becomes Ready; a Local
// BenchmarkRun loads 20,000 vectors through the client Service and measures recall@10
// against brute force.
func TestManagedClusterServesVectorsFromPods(t *testing.T) {
	integration(t)
	ctx := context.Background()
	const ns = "search"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	sc := &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns},
		Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
			Version: openSearchVersion,
			Image:   openSearchImage,
			NodePools: []v1alpha1.NodePool{{
				Name:     "nodes",
				Roles:    []v1alpha1.NodeRole{v1alpha1.RoleClusterManager, v1alpha1.RoleData, v1alpha1.RoleIngest},
				Replicas: 3,
				SIMD:     v1alpha1.SIMDAVX512,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
			}},
		}},
	}
	applied := time.Now()
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, 8*time.Minute)
	t.Logf("SearchCluster Ready %s after it was created", time.Since(applied).Round(time.Second))

	base := clientServiceURL(t, sc)
	t.Logf("_cat/nodes through the client Service:\n%s", get(t, base+"/_cat/nodes?v&h=name,ip,node.role,cluster_manager"))
	var health struct {
		Status        string `json:"status"`
		NumberOfNodes int    `json:"number_of_nodes"`
	}
	getJSON(t, base+"/_cluster/health", &health)
	t.Logf("_cluster/health: %+v", health)
	if health.NumberOfNodes != 3 || health.Status != "green" {
		t.Fatalf("want one green cluster of 3 nodes, have %+v", health)
	}

	// The SIMD pool's settings reach the nodes: the node attribute and the JVM options.
	var nodes struct {
		Nodes map[string]struct {
			Name       string            `json:"name"`
			Attributes map[string]string `json:"attributes"`
			JVM        struct {
				InputArguments []string `json:"input_arguments"`
			} `json:"jvm"`
		} `json:"nodes"`
	}
	getJSON(t, base+"/_nodes/jvm", &nodes)
	for _, n := range nodes.Nodes {
		if got := n.Attributes["vectorpilot_simd"]; got != string(v1alpha1.SIMDAVX512) {
			t.Errorf("node %s: attribute vectorpilot_simd=%q, want avx512", n.Name, got)
		}
		for _, opt := range simd.JVMOptions(v1alpha1.SIMDAVX512) {
			for _, part := range strings.Fields(opt) {
				if !slices.Contains(n.JVM.InputArguments, part) && !slices.Contains(n.JVM.InputArguments, strings.Replace(part, " ", "=", 1)) {
					t.Errorf("node %s: JVM runs without %q (has %v)", n.Name, part, n.JVM.InputArguments)
				}
			}
		}
	}

	index := &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: sc.Name},
			IndexName:  "docs-v1",
			Shards:     3,
			Replicas:   1,
			Fields: []v1alpha1.VectorField{{
				Name: "embedding", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "lucene",
				Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfConstruction: ptr.To[int32](128), EfSearch: ptr.To[int32](100)}},
			}},
		},
	}
	if err := k8s.Create(ctx, index); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, index, func() []metav1.Condition { return index.Status.Conditions }, v1alpha1.ConditionReady, 3*time.Minute)

	run := &v1alpha1.BenchmarkRun{
		ObjectMeta: metav1.ObjectMeta{Name: "recall", Namespace: ns},
		Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: index.Name},
			Workload: v1alpha1.BenchmarkWorkload{
				Dataset:  v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: 20000, Queries: 200, Seed: 7}},
				K:        10,
				Warmup:   metav1.Duration{Duration: time.Second},
				Duration: metav1.Duration{Duration: 5 * time.Second},
			},
			SliceCounts: []int32{0},
			Clients:     []int32{1},
			Runner:      v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerLocal},
		},
	}
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			t.Fatal(err)
		}
		if run.Status.Phase == v1alpha1.BenchmarkSucceeded {
			break
		}
		if run.Status.Phase == v1alpha1.BenchmarkFailed || time.Now().After(deadline) {
			t.Fatalf("BenchmarkRun %s: %+v", run.Status.Phase, run.Status.Conditions)
		}
		time.Sleep(2 * time.Second)
	}
	var count struct {
		Count int `json:"count"`
	}
	getJSON(t, base+"/docs-v1/_count", &count)
	if count.Count != 20000 {
		t.Errorf("index holds %d documents, want 20000", count.Count)
	}
	for _, cell := range run.Status.Results {
		t.Logf("cell slices=%d clients=%d p50=%sms p99=%sms qps=%s recall=%s", cell.SliceCount, cell.Clients, cell.P50Ms, cell.P99Ms, cell.QPS, cell.Recall)
		var recall float64
		if _, err := fmt.Sscan(cell.Recall, &recall); err != nil || recall < 0.95 {
			t.Errorf("recall@10 %q, want ≥ 0.95", cell.Recall)
		}
	}
	if len(run.Status.Results) == 0 {
		t.Error("the run reported no results")
	}
}

// clientServiceURL is the client Service's address (routed from the host through the node).
func clientServiceURL(t *testing.T, sc *v1alpha1.SearchCluster) string {
	t.Helper()
	var svc corev1.Service
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: sc.Namespace, Name: managed.ClientServiceName(sc)}, &svc); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, managed.HTTPPort)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d: %s", url, resp.StatusCode, body)
	}
	return string(body)
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url)), into); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// waitCondition waits for condition to be True in what conditions reads from obj.
func waitCondition(t *testing.T, obj client.Object, conditions func() []metav1.Condition, condition string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(conditions(), condition) {
			return
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("%T %s not %s after %s: %+v", obj, obj.GetName(), condition, timeout, conditions())
}

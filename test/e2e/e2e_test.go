package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/simd"
	"github.com/vectorpilot/vectorpilot/test/harness/kubenode"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// searchNamespace holds the sandbox's managed cluster (the kind sandbox uses the same).
const searchNamespace = "search"

// documents is how many vectors the benchmark loads into the sandbox index.
const documents = 20000

func integration(t *testing.T) {
	t.Helper()
	testgate.Integration(t, "the real node")
}

// operatorPod is the operator's one running pod.
func operatorPod(t *testing.T) corev1.Pod {
	t.Helper()
	pod, err := findOperatorPod(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func findOperatorPod(ctx context.Context) (corev1.Pod, error) {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "vectorpilot", "app.kubernetes.io/instance": release}); err != nil {
		return corev1.Pod{}, err
	}
	if len(pods.Items) != 1 {
		return corev1.Pod{}, fmt.Errorf("want 1 operator pod, have %d", len(pods.Items))
	}
	return pods.Items[0], nil
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

// TestManagedClusterServesVectorsFromPods: the sandbox's managed SearchCluster
// (hack/sandbox/searchcluster-managed.yaml, as the kind sandbox applies it, with the image
// the harness built) on a stock node (vm.max_map_count 65530, the default mmap setting):
// three cluster_manager+data nodes, each on a claim of the default StorageClass, form one
// OpenSearch cluster in pods through the headless Service; the operator, in its pod, reaches
// it through the client Service and reports what the nodes run as OpenSearch reports it; the
// disruption controller computes the cluster's budget (one disruption while green); the sandbox's VectorIndex becomes Ready;
// a Local BenchmarkRun loads 20,000 vectors through the client Service and measures
// recall@10 against brute force.
func TestManagedClusterServesVectorsFromPods(t *testing.T) {
	integration(t)
	ctx := context.Background()
	ensureSearchNamespace(t)
	sc := &v1alpha1.SearchCluster{}
	if err := readSandbox("searchcluster-managed.yaml", sc); err != nil {
		t.Fatal(err)
	}
	sc.Namespace = searchNamespace
	// At the older version: e_upgrade_test.go upgrades it under load.
	sc.Spec.Managed.Version = sandbox.UpgradeFromVersion
	box.RunHere(sc)
	applied := time.Now()
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	waitReady(t, sc, func() []metav1.Condition { return sc.Status.Conditions }, 8*time.Minute)
	t.Logf("SearchCluster Ready %s after it was created", time.Since(applied).Round(time.Second))
	pool := sc.Spec.Managed.NodePools[0]

	base := clientServiceURL(t, sc)
	t.Logf("_cat/nodes through the client Service:\n%s", get(t, base+"/_cat/nodes?v&h=name,ip,node.role,cluster_manager"))
	var health struct {
		Status        string `json:"status"`
		NumberOfNodes int    `json:"number_of_nodes"`
	}
	getJSON(t, base+"/_cluster/health", &health)
	t.Logf("_cluster/health: %+v", health)
	if health.NumberOfNodes != int(pool.Replicas) || health.Status != "green" {
		t.Fatalf("want one green cluster of %d nodes, have %+v", pool.Replicas, health)
	}

	// The SIMD pool's settings reach the nodes: the node attribute, the k-NN variant
	// settings and the JVM options, as _nodes reports them.
	var nodes struct {
		Nodes map[string]struct {
			Name       string            `json:"name"`
			Attributes map[string]string `json:"attributes"`
			Settings   struct {
				KNN struct {
					Faiss map[string]struct {
						Disabled string `json:"disabled"`
					} `json:"faiss"`
				} `json:"knn"`
			} `json:"settings"`
			JVM struct {
				InputArguments []string `json:"input_arguments"`
			} `json:"jvm"`
		} `json:"nodes"`
	}
	getJSON(t, base+"/_nodes/settings,jvm", &nodes)
	// What the nodes' init container must find: this machine's CPU, by the same script.
	out, err := exec.Command("sh", "-c", simd.DetectScript()).Output()
	if err != nil {
		t.Fatal(err)
	}
	machineCPU := strings.TrimSpace(string(out))
	for _, n := range nodes.Nodes {
		if got := n.Attributes[managed.CPUAttribute]; got != machineCPU {
			t.Errorf("node %s: attribute %s=%q, want %s (this machine's /proc/cpuinfo)", n.Name, managed.CPUAttribute, got, machineCPU)
		}
		if got := n.Attributes["vectorpilot_simd"]; got != string(pool.SIMD) {
			t.Errorf("node %s: attribute vectorpilot_simd=%q, want %s", n.Name, got, pool.SIMD)
		}
		for setting, want := range simd.KNNSettings(pool.SIMD) {
			variant := strings.TrimSuffix(strings.TrimPrefix(setting, "knn.faiss."), ".disabled")
			if got := n.Settings.KNN.Faiss[variant].Disabled; got != want {
				t.Errorf("node %s: %s=%q, want %q", n.Name, setting, got, want)
			}
		}
		for _, opt := range simd.JVMOptions(pool.SIMD) {
			if !slices.Contains(n.JVM.InputArguments, opt) {
				t.Errorf("node %s: JVM runs without %q (has %v)", n.Name, opt, n.JVM.InputArguments)
			}
		}
	}
	// status.pools says what OpenSearch reports: every node of the pool joined, and the
	// variant their settings leave on this machine's CPU.
	var disabled []string
	for setting, v := range simd.KNNSettings(pool.SIMD) {
		if v == "true" {
			disabled = append(disabled, setting)
		}
	}
	wantSIMD := simd.Loaded(machineCPU, disabled)
	wantVector := simd.LuceneVector(simd.JVMOptions(pool.SIMD), machineCPU)
	labelled := simd.Observe(nodeLabels(t))
	waitFor(t, time.Minute, "status.pools to report the live nodes", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			t.Fatal(err)
		}
		p := sc.Status.Pools[0]
		return p.OpenSearchNodes != nil && *p.OpenSearchNodes == pool.Replicas && p.SIMD == wantSIMD && p.CPUSIMD == machineCPU && p.LuceneVector == wantVector && p.NodeSIMD == labelled,
			fmt.Sprintf("pool status %+v (openSearchNodes %v), want %d nodes running %s and %s on %s CPUs labelled %s", p, ptr.Deref(p.OpenSearchNodes, -1), pool.Replicas, wantSIMD, wantVector, machineCPU, labelled)
	})
	t.Logf("status.pools[0]: simd %s, cpuSIMD %s (labels: %s), luceneVector %s, %d OpenSearch nodes", sc.Status.Pools[0].SIMD, sc.Status.Pools[0].CPUSIMD,
		sc.Status.Pools[0].NodeSIMD, sc.Status.Pools[0].LuceneVector, *sc.Status.Pools[0].OpenSearchNodes)

	// Every node on its own claim of the default class; the disruption controller counts the
	// cluster's pods against the operator's budget.
	var claims corev1.PersistentVolumeClaimList
	if err := k8s.List(ctx, &claims, client.InNamespace(searchNamespace)); err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, c := range claims.Items {
		if c.Status.Phase == corev1.ClaimBound && ptr.Deref(c.Spec.StorageClassName, "") == kubenode.StorageClassName {
			bound++
		}
	}
	if bound != int(pool.Replicas) {
		t.Errorf("%d claims bound in %s, want %d", bound, kubenode.StorageClassName, pool.Replicas)
	}
	waitFor(t, time.Minute, "the cluster's PodDisruptionBudget status", func() (bool, string) {
		var pdb policyv1.PodDisruptionBudget
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: managed.DisruptionBudgetName(sc)}, &pdb); err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == pool.Replicas && pdb.Status.DisruptionsAllowed == 1,
			fmt.Sprintf("PDB status %+v, want %d healthy and 1 disruption allowed", pdb.Status, pool.Replicas)
	})

	index := &v1alpha1.VectorIndex{}
	if err := readSandbox("vectorindex-managed.yaml", index); err != nil {
		t.Fatal(err)
	}
	index.Namespace = searchNamespace
	if err := k8s.Create(ctx, index); err != nil {
		t.Fatal(err)
	}
	waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, 3*time.Minute)

	run := sandbox.RecallRun(searchNamespace, "recall", index.Name, documents, 0)
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := box.WaitSucceeded(ctx, run, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := count(t, base, index.Spec.IndexName); n != documents {
		t.Errorf("index holds %d documents, want %d", n, documents)
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

// TestManagedNodeRestartsOntoItsVolume: a managed node's pod deleted comes back from its
// StatefulSet onto the same claim: the new process (its JVM started after the deletion)
// finds its data folder — it keeps its persistent node ID, which lives there —, the cluster
// returns to green, no document is lost.
func TestManagedNodeRestartsOntoItsVolume(t *testing.T) {
	integration(t)
	ctx := context.Background()
	sc := sandboxCluster(t)
	base := clientServiceURL(t, sc)
	victim := managed.PoolName(sc, sc.Spec.Managed.NodePools[0].Name) + "-1"
	before := nodeIDs(t, base)
	var pod corev1.Pod
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: victim}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, 5*time.Minute, victim+" back in a green cluster", func() (bool, string) {
		var now corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: victim}, &now); err != nil || now.UID == pod.UID {
			return false, "the old pod is still there"
		}
		var health struct {
			Status        string `json:"status"`
			NumberOfNodes int    `json:"number_of_nodes"`
		}
		if err := tryJSON(base+"/_cluster/health", &health); err != nil {
			return false, err.Error()
		}
		if health.Status != "green" || health.NumberOfNodes != len(before) {
			return false, fmt.Sprintf("health %+v", health)
		}
		started, err := jvmStart(base, victim)
		return err == nil && started.After(deleted), fmt.Sprintf("%s's JVM started %s (%v), deleted %s", victim, started, err, deleted)
	})
	t.Logf("%s deleted, back in a new process and the cluster green after %s", victim, time.Since(deleted).Round(time.Second))
	after := nodeIDs(t, base)
	if before[victim] == "" || after[victim] != before[victim] {
		t.Errorf("%s came back as node %q, was %q: it did not find its data folder", victim, after[victim], before[victim])
	}
	if n := count(t, base, "docs-v1"); n != documents {
		t.Errorf("index holds %d documents after the restart, want %d", n, documents)
	}
}

// sandboxCluster is the managed cluster TestManagedClusterServesVectorsFromPods made.
func sandboxCluster(t *testing.T) *v1alpha1.SearchCluster {
	t.Helper()
	sc := &v1alpha1.SearchCluster{}
	if err := readSandbox("searchcluster-managed.yaml", sc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: searchNamespace, Name: sc.Name}, sc); err != nil {
		t.Fatalf("the sandbox cluster: %v", err)
	}
	return sc
}

// nodeIDs are the cluster's persistent node IDs by node name.
func nodeIDs(t *testing.T, base string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(get(t, base+"/_cat/nodes?h=name,id&full_id=true")), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			out[f[0]] = f[1]
		}
	}
	return out
}

// jvmStart is when the JVM of the node named name started.
func jvmStart(base, name string) (time.Time, error) {
	var info struct {
		Nodes map[string]struct {
			Name string `json:"name"`
			JVM  struct {
				StartTimeInMillis int64 `json:"start_time_in_millis"`
			} `json:"jvm"`
		} `json:"nodes"`
	}
	if err := tryJSON(base+"/_nodes/"+name+"/jvm", &info); err != nil {
		return time.Time{}, err
	}
	for _, n := range info.Nodes {
		if n.Name == name {
			return time.UnixMilli(n.JVM.StartTimeInMillis), nil
		}
	}
	return time.Time{}, fmt.Errorf("node %s not in the cluster", name)
}

func count(t *testing.T, base, index string) int {
	t.Helper()
	var c struct {
		Count int `json:"count"`
	}
	getJSON(t, base+"/"+index+"/_count", &c)
	return c.Count
}

// ensureSearchNamespace creates the managed clusters' namespace, under the restricted Pod
// Security level, unless an earlier test did.
func ensureSearchNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: searchNamespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if err := k8s.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// nodeLabels are the real node's labels.
func nodeLabels(t *testing.T) map[string]string {
	t.Helper()
	var node corev1.Node
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: kubenode.NodeName}, &node); err != nil {
		t.Fatal(err)
	}
	return node.Labels
}

// waitFor polls done until it is true or timeout passes; done says what it saw.
func waitFor(t *testing.T, timeout time.Duration, what string, done func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, saw := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s: %s", timeout, what, saw)
		}
		time.Sleep(2 * time.Second)
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
	body, err := sandbox.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	if err := tryJSON(url, into); err != nil {
		t.Fatal(err)
	}
}

func tryJSON(url string, into any) error {
	body, err := sandbox.Get(url)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(body), into); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// waitReady waits for obj's Ready condition to be True.
func waitReady(t *testing.T, obj client.Object, conditions func() []metav1.Condition, timeout time.Duration) {
	t.Helper()
	if err := box.WaitReady(context.Background(), obj, conditions, timeout, nil); err != nil {
		t.Fatal(err)
	}
}

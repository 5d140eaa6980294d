package managed

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

func sample() *v1alpha1.SearchCluster {
	return &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vec", Namespace: "search"},
		Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
			Version: "3.6.0",
			Search:  &v1alpha1.ClusterSearch{ConcurrentSegmentSearch: &v1alpha1.ClusterConcurrentSegmentSearch{Mode: "auto", MaxSliceCount: ptr.To[int32](2)}},
			NodePools: []v1alpha1.NodePool{
				{Name: "cm", Roles: []v1alpha1.NodeRole{"cluster_manager"}, Replicas: 3, SIMD: "auto"},
				{Name: "spr", Roles: []v1alpha1.NodeRole{"data", "ingest"}, Replicas: 2, SIMD: "avx2",
					Storage:          &v1alpha1.PoolStorage{Size: resource.MustParse("50Gi"), StorageClassName: ptr.To("gp3")},
					Resources:        corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}},
					JVM:              &v1alpha1.JVMOptions{ExtraOptions: []string{"-XX:+AlwaysPreTouch"}},
					AdditionalConfig: map[string]string{"knn.memory.circuit_breaker.limit": "60%"}},
			},
		}},
	}
}

func TestConfig(t *testing.T) {
	sc := sample()
	managers := InitialClusterManagerNodes(sc)
	if got := strings.Join(managers, ","); got != "vec-cm-0,vec-cm-1,vec-cm-2" {
		t.Fatalf("initial cluster managers %s", got)
	}
	cfg, err := Config(sc, sc.Spec.Managed.NodePools[1], managers)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"cluster.name":                          "vec",
		"node.roles":                            "[data ingest]",
		"discovery.seed_hosts":                  "[vec-cm.search.svc]",
		"cluster.initial_cluster_manager_nodes": "[vec-cm-0 vec-cm-1 vec-cm-2]",
		"knn.faiss.avx2.disabled":               "false",
		"knn.faiss.avx512.disabled":             "true",
		"knn.faiss.avx512_spr.disabled":         "true",
		"search.concurrent_segment_search.mode": "auto",
		"search.concurrent.max_slice_count":     "2",
		"knn.memory.circuit_breaker.limit":      "60%",
		"node.attr.vectorpilot_simd":            "avx2",
		"node.attr.vectorpilot_node":            "${NODE_NAME}",
	} {
		if s := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(got[k]), "\n", " "), "  ", " ")); s != want {
			t.Errorf("%s = %q, want %q", k, s, want)
		}
	}
}

// TestWarmPoolConfig: a warm pool's file cache size goes to node.search.cache.size in
// bytes (a warm node refuses to start without it); other pools have none.
func TestWarmPoolConfig(t *testing.T) {
	sc := sample()
	pool := sc.Spec.Managed.NodePools[1]
	pool.Roles = append(pool.Roles, v1alpha1.RoleWarm)
	pool.FileCacheSize = ptr.To(resource.MustParse("20Gi"))
	for p, want := range map[*v1alpha1.NodePool]any{&pool: "21474836480b", &sc.Spec.Managed.NodePools[1]: nil} {
		cfg, err := Config(sc, *p, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
			t.Fatal(err)
		}
		if got["node.search.cache.size"] != want {
			t.Errorf("roles %v: node.search.cache.size %v, want %v", p.Roles, got["node.search.cache.size"], want)
		}
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = toString(p)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return x
	default:
		b, _ := yaml.Marshal(x)
		return string(b)
	}
}

func TestHeap(t *testing.T) {
	for _, tc := range []struct {
		pool v1alpha1.NodePool
		want string
	}{
		{v1alpha1.NodePool{}, "1g"},
		{v1alpha1.NodePool{JVM: &v1alpha1.JVMOptions{Heap: "3g"}}, "3g"},
		{v1alpha1.NodePool{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}}, "8192m"},
		{v1alpha1.NodePool{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}}, "1536m"},
		{v1alpha1.NodePool{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Gi")}}}, "31g"},
		{v1alpha1.NodePool{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}, "256m"},
	} {
		if got := Heap(tc.pool); got != tc.want {
			t.Errorf("Heap(%+v) = %s, want %s", tc.pool.Resources, got, tc.want)
		}
	}
}

func TestStatefulSet(t *testing.T) {
	sc := sample()
	pools, client, err := Objects(sc, Live{InitialManagers: InitialClusterManagerNodes(sc)})
	if err != nil {
		t.Fatal(err)
	}
	if client.Name != "vec" || client.Spec.Selector[ClusterLabel] != "vec" {
		t.Errorf("client service %s selects %v", client.Name, client.Spec.Selector)
	}
	cm, data := pools[0].StatefulSet, pools[1].StatefulSet
	if cm.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || cm.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("cluster-manager pool: strategy %s, policy %s", cm.Spec.UpdateStrategy.Type, cm.Spec.PodManagementPolicy)
	}
	if cm.Spec.Template.Spec.Affinity.NodeAffinity != nil {
		t.Error("auto pool without pins has a node affinity")
	}
	if len(cm.Spec.VolumeClaimTemplates) != 0 || cm.Spec.Template.Spec.Volumes[1].EmptyDir == nil {
		t.Error("pool without storage must use an emptyDir")
	}
	if len(data.Spec.VolumeClaimTemplates) != 1 || *data.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "gp3" {
		t.Error("pool with storage has no claim template of class gp3")
	}
	if data.Spec.Template.Spec.Affinity.NodeAffinity == nil {
		t.Error("avx2 pool has no node affinity")
	}
	env := map[string]string{}
	for _, e := range data.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if want := "-Xms8192m -Xmx8192m --add-modules=jdk.incubator.vector -XX:UseAVX=2 -XX:+AlwaysPreTouch"; env["OPENSEARCH_JAVA_OPTS"] != want {
		t.Errorf("java opts %q, want %q", env["OPENSEARCH_JAVA_OPTS"], want)
	}
	if *data.Spec.Replicas != 2 {
		t.Errorf("data pool runs %d replicas, want the spec's 2", *data.Spec.Replicas)
	}
	if pre := data.Spec.Template.Spec.Containers[0].Lifecycle.PreStop; pre == nil || pre.Sleep == nil || pre.Sleep.Seconds < 5 {
		t.Errorf("preStop %+v: a stopping node must stay in the Services until they drop it", pre)
	}

	// The hash moves with anything that needs a restart, and only then.
	hash := data.Spec.Template.Annotations[ConfigHashAnnotation]
	again, _ := BuildPool(sc, sc.Spec.Managed.NodePools[1], Live{InitialManagers: InitialClusterManagerNodes(sc)})
	if again.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] != hash {
		t.Error("config hash is not deterministic")
	}
	for name, edit := range map[string]func(*v1alpha1.SearchCluster){
		"additionalConfig": func(s *v1alpha1.SearchCluster) { s.Spec.Managed.NodePools[1].AdditionalConfig["x"] = "y" },
		"simd":             func(s *v1alpha1.SearchCluster) { s.Spec.Managed.NodePools[1].SIMD = "avx512" },
		"version":          func(s *v1alpha1.SearchCluster) { s.Spec.Managed.Version = "3.7.0" },
		"heap":             func(s *v1alpha1.SearchCluster) { s.Spec.Managed.NodePools[1].JVM.Heap = "2g" },
		"cluster search":   func(s *v1alpha1.SearchCluster) { s.Spec.Managed.Search.ConcurrentSegmentSearch.Mode = "all" },
	} {
		changed := sample()
		edit(changed)
		p, _ := BuildPool(changed, changed.Spec.Managed.NodePools[1], Live{InitialManagers: InitialClusterManagerNodes(sc)})
		if p.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] == hash {
			t.Errorf("changing %s does not change the config hash", name)
		}
	}
	scaled := sample()
	scaled.Spec.Managed.NodePools[1].Replicas = 5
	if p, _ := BuildPool(scaled, scaled.Spec.Managed.NodePools[1], Live{InitialManagers: InitialClusterManagerNodes(sc)}); p.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] != hash {
		t.Error("scaling changes the config hash: it would restart every pod")
	}
	// Once the cluster has formed the bootstrap setting goes from the file without a
	// restart.
	formed, _ := BuildPool(sc, sc.Spec.Managed.NodePools[1], Live{})
	if formed.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation] != hash {
		t.Error("dropping cluster.initial_cluster_manager_nodes changes the config hash: it would restart every pod")
	}
	if strings.Contains(formed.ConfigMap.Data["opensearch.yml"], "initial_cluster_manager_nodes") {
		t.Errorf("a formed cluster's configuration still bootstraps:\n%s", formed.ConfigMap.Data["opensearch.yml"])
	}
	// A pool shrinking keeps its StatefulSet at the nodes not yet drained.
	draining, _ := BuildPool(sc, sc.Spec.Managed.NodePools[1], Live{Replicas: map[string]int32{"spr": 5}})
	grown, _ := BuildPool(sc, sc.Spec.Managed.NodePools[1], Live{Replicas: map[string]int32{"spr": 1}})
	if *draining.StatefulSet.Spec.Replicas != 5 || *grown.StatefulSet.Spec.Replicas != 2 {
		t.Errorf("replicas %d while draining from 5, %d from 1; want 5 and the spec's 2", *draining.StatefulSet.Spec.Replicas, *grown.StatefulSet.Spec.Replicas)
	}
}

func TestDisruptionBudget(t *testing.T) {
	sc := sample()
	for health, want := range map[string]int{"green": 1, "yellow": 0, "red": 0, "": 0} {
		pdb := DisruptionBudget(sc, health)
		if got := pdb.Spec.MaxUnavailable.IntValue(); got != want {
			t.Errorf("health %q: maxUnavailable %d, want %d", health, got, want)
		}
		if pdb.Spec.Selector.MatchLabels[ClusterLabel] != sc.Name || len(pdb.Spec.Selector.MatchLabels) != 1 {
			t.Errorf("the budget selects %v, want every pod of the cluster", pdb.Spec.Selector.MatchLabels)
		}
	}
}

// allows evaluates a NetworkPolicy's ingress rules for a client pod (its labels, its
// namespace and that namespace's labels) connecting to port, as a CNI enforcing it would.
func allows(t *testing.T, np *networkingv1.NetworkPolicy, podLabels map[string]string, ns string, nsLabels map[string]string, port int) bool {
	t.Helper()
	sel := func(ls *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		return s.Matches(k8slabels.Set(set))
	}
	for _, rule := range np.Spec.Ingress {
		portOK := false
		for _, p := range rule.Ports {
			portOK = portOK || p.Port.IntValue() == port
		}
		if !portOK {
			continue
		}
		for _, from := range rule.From {
			nsOK := from.NamespaceSelector == nil && ns == np.Namespace || from.NamespaceSelector != nil && sel(from.NamespaceSelector, nsLabels)
			podOK := from.PodSelector == nil || sel(from.PodSelector, podLabels)
			if nsOK && podOK {
				return true
			}
		}
	}
	return false
}

func TestNetworkPolicyClosesTheClusterToAllButItsClients(t *testing.T) {
	sc := sample()
	sc.Spec.Managed.NetworkPolicy.AllowFrom = []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "search-api"}},
	}}
	np := NetworkPolicy(sc, Operator{Namespace: "vectorpilot-system"})
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, ClusterSelector(sc)) || !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("policy selects %v for %v", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	ns := func(name string) map[string]string { return map[string]string{"kubernetes.io/metadata.name": name} }
	node := ClusterSelector(sc)
	other := map[string]string{ClusterLabel: "another"}
	cases := []struct {
		name      string
		pod       map[string]string
		namespace string
		port      int
		want      bool
	}{
		{"a node of the cluster, transport", node, "search", TransportPort, true},
		{"a node of the cluster, HTTP", node, "search", HTTPPort, true},
		{"another cluster's node, transport", other, "search", TransportPort, false},
		{"another cluster's node, HTTP", other, "search", HTTPPort, false},
		{"the operator, HTTP", OperatorPodLabels, "vectorpilot-system", HTTPPort, true},
		{"the operator, transport", OperatorPodLabels, "vectorpilot-system", TransportPort, false},
		{"another pod in the operator's namespace", map[string]string{"app": "x"}, "vectorpilot-system", HTTPPort, false},
		{"pods labelled like the operator elsewhere", OperatorPodLabels, "search", HTTPPort, false},
		{"a benchmark Workflow's pod", map[string]string{v1alpha1.BenchmarkRunLabel: "sweep"}, "search", HTTPPort, true},
		{"a benchmark pod of another namespace", map[string]string{v1alpha1.BenchmarkRunLabel: "sweep"}, "other", HTTPPort, false},
		{"the allowed application", map[string]string{"app": "search-api"}, "shop", HTTPPort, true},
		{"the allowed application, transport", map[string]string{"app": "search-api"}, "shop", TransportPort, false},
		{"another application in the same namespace", map[string]string{"app": "batch"}, "shop", HTTPPort, false},
		{"any pod anywhere", map[string]string{"app": "curl"}, "default", HTTPPort, false},
	}
	for _, c := range cases {
		if got := allows(t, np, c.pod, c.namespace, ns(c.namespace), c.port); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.name, got, c.want)
		}
	}
	// Outside the cluster the operator cannot be named: no peer for it, the rest unchanged.
	dev := NetworkPolicy(sc, Operator{})
	if allows(t, dev, OperatorPodLabels, "vectorpilot-system", ns("vectorpilot-system"), HTTPPort) || !allows(t, dev, node, "search", nil, HTTPPort) {
		t.Error("without an operator namespace the policy must still admit the cluster and nothing named after the operator")
	}
}

// TestMMapModes: by default nodes do not map index files (a stock node's vm.max_map_count
// fails the bootstrap check otherwise); InitContainer raises the sysctl in a privileged init
// container and keeps mmap; NodeConfigured adds nothing; a pool's own setting wins.
func TestMMapModes(t *testing.T) {
	for _, tc := range []struct {
		mode       v1alpha1.MMapMode
		additional map[string]string
		allowMMap  string // "" = not set
		init       bool
	}{
		{mode: "", allowMMap: "false"},
		{mode: v1alpha1.MMapDisabled, allowMMap: "false"},
		{mode: v1alpha1.MMapInitContainer, init: true},
		{mode: v1alpha1.MMapNodeConfigured},
		{mode: v1alpha1.MMapDisabled, additional: map[string]string{"node.store.allow_mmap": "true"}, allowMMap: "true"},
	} {
		sc := sample()
		sc.Spec.Managed.MMap = tc.mode
		pool := sc.Spec.Managed.NodePools[0]
		pool.AdditionalConfig = tc.additional
		cfg, err := Config(sc, pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
			t.Fatal(err)
		}
		if v, _ := got["node.store.allow_mmap"].(string); v != tc.allowMMap {
			t.Errorf("mmap %q: node.store.allow_mmap = %q, want %q", tc.mode, v, tc.allowMMap)
		}
		sc.Spec.Managed.Image = "attacker.example/anything:latest" // the spec's author chooses this one
		ss := statefulSet(sc, pool, "vec-cm", nil, cfg, SecurityRevision{}, "registry.example/vectorpilot:1.0")
		var inits []corev1.Container
		for _, c := range ss.Spec.Template.Spec.InitContainers {
			if c.Name != SecurityPluginCheck && c.Name != cpuInitName {
				inits = append(inits, c)
			}
		}
		if tc.init != (len(inits) == 1) {
			t.Fatalf("mmap %q: init containers %v", tc.mode, inits)
		}
		if tc.init {
			c := inits[0]
			if c.SecurityContext == nil || !*c.SecurityContext.Privileged || *c.SecurityContext.RunAsUser != 0 ||
				c.Image != "registry.example/vectorpilot:1.0" || len(c.Command) != 0 || !slices.Equal(c.Args, []string{SysctlCommand}) {
				t.Errorf("privileged init container %+v: want the installer's image running only %s", c, SysctlCommand)
			}
		}
		for _, c := range append(ss.Spec.Template.Spec.InitContainers, ss.Spec.Template.Spec.Containers...) {
			if c.SecurityContext != nil && ptr.Deref(c.SecurityContext.Privileged, false) && c.Image == sc.Spec.Managed.Image {
				t.Errorf("mmap %q: container %s runs the spec's image privileged", tc.mode, c.Name)
			}
		}
	}
}

// TestMMapInitContainerNeedsTheInstallersImage: without the image the operator's installer
// chose for the privileged step, an mmap: InitContainer cluster is refused, naming the field.
func TestMMapInitContainerNeedsTheInstallersImage(t *testing.T) {
	sc := sample()
	sc.Spec.Managed.MMap = v1alpha1.MMapInitContainer
	if _, _, err := Objects(sc, Live{}); !errors.Is(err, ErrNoSysctlImage) || !strings.Contains(err.Error(), "spec.managed.mmap") {
		t.Errorf("no sysctl image: %v, want ErrNoSysctlImage naming spec.managed.mmap", err)
	}
	if _, _, err := Objects(sc, Live{SysctlImage: "registry.example/vectorpilot:1.0"}); err != nil {
		t.Errorf("with a sysctl image: %v", err)
	}
}

func TestServedSinceStart(t *testing.T) {
	started := metav1.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	pod := func(ready corev1.ConditionStatus, changed metav1.Time, running bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: changed}}}}
		state := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		if running {
			state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "init-like", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, {Name: ContainerName, State: state}}
		return p
	}
	later, earlier := metav1.NewTime(started.Add(time.Minute)), metav1.NewTime(started.Add(-time.Minute))
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"ready", pod(corev1.ConditionTrue, later, true), true},
		{"ready once since it started, a probe timed out since", pod(corev1.ConditionFalse, later, true), true},
		{"never ready since it started", pod(corev1.ConditionFalse, earlier, true), false},
		{"crash-looping", pod(corev1.ConditionFalse, later, false), false},
	} {
		if got := ServedSinceStart(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKeepRendered(t *testing.T) {
	sc := sample()
	p := sc.Spec.Managed.NodePools[0]
	from, err := RenderedFrom(sc, p, Live{})
	if err != nil {
		t.Fatal(err)
	}
	changed := sc.DeepCopy()
	changed.Spec.Managed.NodePools[0].JVM = &v1alpha1.JVMOptions{ExtraOptions: []string{"-XX:+AlwaysPreTouch"}}
	for _, tc := range []struct {
		name string
		live Live
		sc   *v1alpha1.SearchCluster
		same bool
	}{
		{"the same spec and inputs", Live{}, sc, true},
		{"a scale-down's live replicas and the bootstrap do not count", Live{Replicas: map[string]int32{p.Name: 5}, InitialManagers: []string{"vec-cm-0"}}, sc, true},
		{"a spec change", Live{}, changed, false},
		{"re-issued certificates", Live{Security: map[string]SecurityRevision{p.Name: {Trust: "t", Issued: "2"}}}, sc, false},
		{"another sysctl image", Live{SysctlImage: "vectorpilot:0.2.0"}, sc, false},
	} {
		got, err := RenderedFrom(tc.sc, p, tc.live)
		if err != nil {
			t.Fatal(err)
		}
		if (got == from) != tc.same {
			t.Errorf("%s: rendered-from %s vs %s, want the same: %v", tc.name, got, from, tc.same)
		}
	}
	stamped := func(v string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RenderedFromAnnotation: v}}}
	}
	for _, tc := range []struct {
		name         string
		live         *appsv1.StatefulSet
		specObserved bool
		keep         bool
	}{
		{"none yet", nil, true, false},
		{"rendered from the same inputs, by any operator", stamped(from), false, true},
		{"rendered from other inputs", stamped("other"), true, false},
		{"an older operator's, which applied the current spec", &appsv1.StatefulSet{}, true, true},
		{"an older operator's, before a spec change", &appsv1.StatefulSet{}, false, false},
	} {
		if got := KeepRendered(tc.live, from, tc.specObserved); got != tc.keep {
			t.Errorf("%s: keep %v, want %v", tc.name, got, tc.keep)
		}
	}
}

func TestKeptConfigFollowsTheBootstrap(t *testing.T) {
	kept := map[string]string{configFile: "cluster.initial_cluster_manager_nodes:\n- a\nnode.attr.x: blue\n", "other": "z"}
	formed, err := KeptConfig(kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(formed[configFile], bootstrapSetting) || !strings.Contains(formed[configFile], "node.attr.x: blue") || formed["other"] != "z" {
		t.Errorf("formed: %q", formed)
	}
	forming, err := KeptConfig(formed, []string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(forming[configFile], bootstrapSetting+":\n- b") {
		t.Errorf("forming: %q", forming[configFile])
	}
}

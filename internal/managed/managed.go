// Package managed builds the Kubernetes objects of a managed SearchCluster: per node pool a
// StatefulSet, a headless Service and a ConfigMap with opensearch.yml; one client Service,
// one PodDisruptionBudget and one NetworkPolicy per cluster; the names and
// settings of its security material (internal/security issues it). The builders are pure: the same
// SearchCluster gives the same objects, so applying them again changes nothing.
package managed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// Labels and annotations on the objects.
const (
	ClusterLabel        = "vectorpilot.io/cluster"
	PoolLabel           = "vectorpilot.io/pool"
	ClusterManagerLabel = "vectorpilot.io/cluster-manager"
	DataLabel           = "vectorpilot.io/data"
	// ConfigHashAnnotation on the pod template changes whenever opensearch.yml, the JVM
	// options or the image change, so the StatefulSet gets a new revision to roll to.
	ConfigHashAnnotation = "vectorpilot.io/config-hash"
	// VersionAnnotation is the OpenSearch version of a pod, for upgrade ordering.
	VersionAnnotation = "vectorpilot.io/version"
	// ManagedByLabel marks every object the operator builds; its cache holds only those.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "vectorpilot"
)

// PoolAttribute is the OpenSearch node attribute (node.attr.*) naming a node's pool, so what
// OpenSearch reports about a node can be told apart by pool.
const PoolAttribute = "vectorpilot_pool"

// SIMDAttribute is the node attribute carrying the SIMD level a node's pool asked for.
const SIMDAttribute = "vectorpilot_simd"

// NodeAttribute is the node attribute naming each node by itself (its pod's name): the
// awareness attribute a restart's search weights are set on, which have no other handle on
// one node.
const NodeAttribute = "vectorpilot_node"

// Ports and paths of the OpenSearch container.
const (
	HTTPPort      = 9200
	TransportPort = 9300
	homeDir       = "/usr/share/opensearch"
	dataDir       = homeDir + "/data"
	configFile    = "opensearch.yml"
	// maxCompressedOopsHeapGi keeps the heap under the compressed-oops limit.
	maxCompressedOopsHeapGi = 31
)

// DefaultImage is the image of a version when spec.managed.image is empty.
func DefaultImage(version string) string { return "opensearchproject/opensearch:" + version }

// PoolName is the name of a pool's StatefulSet, headless Service and pods' prefix.
func PoolName(sc *v1alpha1.SearchCluster, pool string) string { return sc.Name + "-" + pool }

// ConfigName is the name of a pool's ConfigMap.
func ConfigName(sc *v1alpha1.SearchCluster, pool string) string {
	return PoolName(sc, pool) + "-config"
}

// ClientServiceName is the name of the Service clients and the operator use.
func ClientServiceName(sc *v1alpha1.SearchCluster) string { return sc.Name }

// Endpoint is the in-cluster URL of the client Service: HTTPS unless security is off.
func Endpoint(sc *v1alpha1.SearchCluster) string {
	scheme := "https"
	if !SecurityEnabled(sc) {
		scheme = "http"
	}
	return fmt.Sprintf("%s://%s.%s.svc:%d", scheme, ClientServiceName(sc), sc.Namespace, HTTPPort)
}

// PodReady says whether the pod's Ready condition is true.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ContainerName is the OpenSearch container of every managed pod.
const ContainerName = "opensearch"

// ServedSinceStart says whether the pod's OpenSearch container, running now, has been ready
// since it last started: a pod that is not ready now but was (a probe that timed out on a
// starved node) rather than one that never came up (a crash loop, a configuration that
// cannot join). The Ready condition turns false at start and last changed after it only
// if the container became ready and then lost it.
func ServedSinceStart(pod *corev1.Pod) bool {
	var started time.Time
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == ContainerName && c.State.Running != nil {
			started = c.State.Running.StartedAt.Time
		}
	}
	if started.IsZero() {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue || c.LastTransitionTime.After(started)
		}
	}
	return false
}

// ClusterSelector selects every pod of the cluster.
func ClusterSelector(sc *v1alpha1.SearchCluster) map[string]string {
	return map[string]string{ClusterLabel: sc.Name}
}

// PoolSelector selects the pods of one pool.
func PoolSelector(sc *v1alpha1.SearchCluster, pool string) map[string]string {
	return map[string]string{ClusterLabel: sc.Name, PoolLabel: pool}
}

func hasRole(p v1alpha1.NodePool, r v1alpha1.NodeRole) bool { return slices.Contains(p.Roles, r) }

// IsClusterManager says whether the pool's nodes are cluster-manager eligible.
func IsClusterManager(p v1alpha1.NodePool) bool { return hasRole(p, v1alpha1.RoleClusterManager) }

// InitialClusterManagerNodes are the pod names of every cluster-manager pool: the voting
// configuration the cluster bootstraps with.
func InitialClusterManagerNodes(sc *v1alpha1.SearchCluster) []string {
	var out []string
	for _, p := range sc.Spec.Managed.NodePools {
		if !IsClusterManager(p) {
			continue
		}
		for i := range p.Replicas {
			out = append(out, fmt.Sprintf("%s-%d", PoolName(sc, p.Name), i))
		}
	}
	return out
}

func labels(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":      "opensearch",
		"app.kubernetes.io/instance":  sc.Name,
		"app.kubernetes.io/component": p.Name,
		ManagedByLabel:                ManagedBy,
		ClusterLabel:                  sc.Name,
		PoolLabel:                     p.Name,
		ClusterManagerLabel:           fmt.Sprint(IsClusterManager(p)),
		DataLabel:                     fmt.Sprint(hasRole(p, v1alpha1.RoleData)),
	}
	return l
}

// Config is a pool's opensearch.yml. initialManagers is the recorded bootstrap
// configuration (status.initialClusterManagerNodes) until the cluster has formed, and
// empty after: a node started later only joins.
func Config(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool, initialManagers []string) (string, error) {
	settings := map[string]any{
		"cluster.name":               sc.Name,
		"node.name":                  "${NODE_NAME}",
		"node.roles":                 p.Roles,
		"network.host":               "0.0.0.0",
		"path.data":                  dataDir,
		"discovery.seed_hosts":       seedHosts(sc),
		"node.attr." + NodeAttribute: "${NODE_NAME}",
	}
	if len(initialManagers) > 0 {
		settings[bootstrapSetting] = initialManagers
	}
	if SecurityEnabled(sc) {
		for k, v := range securitySettings(sc) {
			settings[k] = v
		}
	}
	for k, v := range PoolSettings(sc, p) {
		settings[k] = v
	}
	out, err := yaml.Marshal(settings)
	return string(out), err
}

// PoolSettings are the node settings that make a pool what its spec says, whoever runs
// the nodes (the operator, or the official Helm chart through chart values): its pool and
// SIMD attributes, the k-NN variant settings of its level, memory mapping, concurrent
// search, the remote store, the warm file cache, and its additionalConfig last.
func PoolSettings(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool) map[string]any {
	m := sc.Spec.Managed
	settings := map[string]any{
		"node.attr." + PoolAttribute: p.Name,
		"node.attr." + SIMDAttribute: string(SIMDOf(p)),
	}
	// Without a raised vm.max_map_count the bootstrap checks refuse a node that maps files.
	if MMap(sc) == v1alpha1.MMapDisabled {
		settings["node.store.allow_mmap"] = "false"
	}
	for k, v := range simd.KNNSettings(SIMDOf(p)) {
		settings[k] = v
	}
	if s := m.Search; s != nil && s.ConcurrentSegmentSearch != nil {
		if mode := s.ConcurrentSegmentSearch.Mode; mode != "" {
			settings["search.concurrent_segment_search.mode"] = mode
		}
		if n := s.ConcurrentSegmentSearch.MaxSliceCount; n != nil {
			settings["search.concurrent.max_slice_count"] = fmt.Sprint(*n)
		}
	}
	for k, v := range RemoteStoreSettings(m.RemoteStore) {
		settings[k] = v
	}
	if p.FileCacheSize != nil {
		settings["node.search.cache.size"] = fmt.Sprintf("%db", p.FileCacheSize.Value())
	}
	for k, v := range p.AdditionalConfig {
		settings[k] = v
	}
	return settings
}

// SIMDOf is the pool's SIMD level, auto when unset.
func SIMDOf(p v1alpha1.NodePool) v1alpha1.SIMDLevel {
	if p.SIMD == "" {
		return v1alpha1.SIMDAuto
	}
	return p.SIMD
}

// seedHosts are the headless Services of the cluster-manager pools; they publish
// not-ready addresses so nodes find each other before any is ready.
func seedHosts(sc *v1alpha1.SearchCluster) []string {
	var out []string
	for _, p := range sc.Spec.Managed.NodePools {
		if IsClusterManager(p) {
			out = append(out, fmt.Sprintf("%s.%s.svc", PoolName(sc, p.Name), sc.Namespace))
		}
	}
	return out
}

// JavaOptions is OPENSEARCH_JAVA_OPTS of a pool: heap, the SIMD level's options, then the
// user's.
func JavaOptions(p v1alpha1.NodePool) string {
	heap := Heap(p)
	opts := []string{"-Xms" + heap, "-Xmx" + heap}
	opts = append(opts, simd.JVMOptions(SIMDOf(p))...)
	if p.JVM != nil {
		opts = append(opts, p.JVM.ExtraOptions...)
	}
	return strings.Join(opts, " ")
}

// Heap is the pool's heap size: spec.jvm.heap, else half the container memory (limit, else
// request) capped at 31g, else 1g.
func Heap(p v1alpha1.NodePool) string {
	if p.JVM != nil && p.JVM.Heap != "" {
		return p.JVM.Heap
	}
	mem, ok := p.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		mem, ok = p.Resources.Requests[corev1.ResourceMemory]
	}
	if !ok {
		return "1g"
	}
	mib := mem.Value() / 2 / (1 << 20)
	switch {
	case mib >= maxCompressedOopsHeapGi<<10:
		return fmt.Sprintf("%dg", maxCompressedOopsHeapGi)
	case mib < 256:
		return "256m"
	default:
		return fmt.Sprintf("%dm", mib)
	}
}

// bootstrapSetting names the nodes a new cluster elects its first cluster manager from.
const bootstrapSetting = "cluster.initial_cluster_manager_nodes"

// ConfigHash fingerprints everything a restart is needed for. The configuration is hashed
// without the bootstrap setting: dropping it once the cluster has formed needs no restart
// (running nodes ignore it; the next start reads the file without it).
func ConfigHash(image, config, javaOpts string) string {
	h := sha256.Sum256([]byte(image + "\x00" + config + "\x00" + javaOpts))
	return hex.EncodeToString(h[:8])
}

// Image is the cluster's OpenSearch image.
func Image(sc *v1alpha1.SearchCluster) string {
	if img := sc.Spec.Managed.Image; img != "" {
		return img
	}
	return DefaultImage(sc.Spec.Managed.Version)
}

// Pool is the objects of one node pool.
type Pool struct {
	ConfigMap   *corev1.ConfigMap
	Headless    *corev1.Service
	StatefulSet *appsv1.StatefulSet
}

// Live is what the objects take from the cluster's status and its running objects rather
// than from the spec.
type Live struct {
	// InitialManagers is the recorded bootstrap configuration, empty once the cluster has
	// formed.
	InitialManagers []string
	// Security is each pool's certificates revision (security on).
	Security map[string]SecurityRevision
	// Replicas are the StatefulSet replicas of pools that still run more nodes than the
	// spec wants: their leaving nodes go one at a time, after they are drained.
	Replicas map[string]int32
	// SysctlImage is the image the operator's installer chose for the one privileged step
	// (mmap: InitContainer): never the cluster's own image, which whoever may create a
	// SearchCluster chooses. Empty: that mode is refused (ErrNoSysctlImage).
	SysctlImage string
}

// ErrNoSysctlImage is a cluster asking for mmap InitContainer from an operator installed
// without a sysctl image.
var ErrNoSysctlImage = errors.New("spec.managed.mmap: InitContainer needs the privileged sysctl step's image, which the operator's installer chooses " +
	"(chart value managedClusters.sysctlImage, flag --sysctl-image) and this operator has none: install it with one, or use mmap NodeConfigured or Disabled")

// Objects are every object of a managed cluster, in apply order.
func Objects(sc *v1alpha1.SearchCluster, live Live) ([]Pool, *corev1.Service, error) {
	var pools []Pool
	for _, p := range sc.Spec.Managed.NodePools {
		pool, err := BuildPool(sc, p, live)
		if err != nil {
			return nil, nil, err
		}
		pools = append(pools, pool)
	}
	return pools, ClientService(sc), nil
}

// BuildPool builds the objects of pool p.
func BuildPool(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool, live Live) (Pool, error) {
	if MMap(sc) == v1alpha1.MMapInitContainer && live.SysctlImage == "" {
		return Pool{}, ErrNoSysctlImage
	}
	config, err := Config(sc, p, live.InitialManagers)
	if err != nil {
		return Pool{}, err
	}
	hashed, err := Config(sc, p, nil)
	if err != nil {
		return Pool{}, err
	}
	replicas := p.Replicas
	if n, ok := live.Replicas[p.Name]; ok && n > replicas {
		replicas = n
	}
	name := PoolName(sc, p.Name)
	l := labels(sc, p)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigName(sc, p.Name), Namespace: sc.Namespace, Labels: l},
		Data:       map[string]string{configFile: config},
	}
	headless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sc.Namespace, Labels: l},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 PoolSelector(sc, p.Name),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: HTTPPort, TargetPort: intstr.FromString("http")},
				{Name: "transport", Port: TransportPort, TargetPort: intstr.FromString("transport")},
			},
		},
	}
	sts := statefulSet(sc, p, name, l, hashed, live.Security[p.Name], live.SysctlImage)
	sts.Spec.Replicas = ptr.To(replicas)
	renderedFrom, err := RenderedFrom(sc, p, live)
	if err != nil {
		return Pool{}, err
	}
	sts.Annotations = map[string]string{RenderedFromAnnotation: renderedFrom}
	return Pool{ConfigMap: cm, Headless: headless, StatefulSet: sts}, nil
}

// DisruptionBudgetName is the name of the cluster's PodDisruptionBudget.
func DisruptionBudgetName(sc *v1alpha1.SearchCluster) string { return sc.Name + "-opensearch" }

// DisruptionBudget is the cluster's one PodDisruptionBudget, as ECK builds it: one
// voluntary disruption (a node drain, an eviction) while the cluster is green, none
// otherwise — a yellow cluster may be missing the very copies the next pod holds. One
// budget over every pool, so a node drain cannot take a pod of each pool at once. The
// operator's own restarts delete pods behind its predicates and do not go through it.
func DisruptionBudget(sc *v1alpha1.SearchCluster, health string) *policyv1.PodDisruptionBudget {
	allowed := int32(0)
	if health == "green" {
		allowed = 1
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: DisruptionBudgetName(sc), Namespace: sc.Namespace, Labels: map[string]string{
			"app.kubernetes.io/name": "opensearch", "app.kubernetes.io/instance": sc.Name, ManagedByLabel: ManagedBy, ClusterLabel: sc.Name}},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(allowed)),
			Selector:       &metav1.LabelSelector{MatchLabels: ClusterSelector(sc)},
		},
	}
}

// preStopSeconds is how long a stopping pod keeps serving after it is marked for
// deletion: the endpoints controller and kube-proxy take it out of the Services first, so
// no new query reaches a node that is going down.
const preStopSeconds = 10

// statefulSet builds a pool's StatefulSet; config is its opensearch.yml without the
// bootstrap setting, which the configuration hash covers.
func statefulSet(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool, name string, l map[string]string, config string, rev SecurityRevision, sysctlImage string) *appsv1.StatefulSet {
	image := Image(sc)
	javaOpts := JavaOptions(p)
	podLabels := map[string]string{}
	for k, v := range l {
		podLabels[k] = v
	}
	volumes := []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ConfigName(sc, p.Name)}}}}}
	var claims []corev1.PersistentVolumeClaim
	if s := p.Storage; s != nil {
		claims = append(claims, corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: l},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: s.StorageClassName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: s.Size}},
			},
		})
	} else {
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	container := corev1.Container{
		Name:  ContainerName,
		Image: image,
		Env: []corev1.EnvVar{
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "OPENSEARCH_JAVA_OPTS", Value: javaOpts},
			// The image installs demo certificates and users unless told not to; the
			// operator brings its own.
			{Name: "DISABLE_INSTALL_DEMO_CONFIG", Value: "true"},
		},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP},
			{Name: "transport", ContainerPort: TransportPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: p.Resources,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: dataDir},
		},
		// Started: the HTTP port answers. Ready: the node has joined a cluster with an
		// elected cluster manager (local=true asks this node only).
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds:    5,
			FailureThreshold: 120,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/_cluster/health?local=true", Port: intstr.FromString("http")}},
			PeriodSeconds:    5,
			TimeoutSeconds:   3,
			FailureThreshold: 3,
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: preStopSeconds}}},
		// A node that fails to start says why in its last log lines (a JVM option, a
		// setting): the kubelet keeps them in the pod's status, where Failing reads them.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			RunAsNonRoot:             ptr.To(true),
		},
	}
	affinity := &corev1.Affinity{
		NodeAffinity: simd.NodeAffinity(SIMDOf(p), simd.Pins{InstanceTypes: p.InstanceTypes, InstanceFamilies: p.InstanceFamilies}),
		// Spread a pool's nodes over hosts where possible: two copies of a shard on one
		// host are one failure.
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: PoolSelector(sc, p.Name)},
			},
		}}},
	}
	var initContainers []corev1.Container
	if MMap(sc) == v1alpha1.MMapInitContainer {
		initContainers = append(initContainers, maxMapCountInit(sysctlImage))
	}
	nodeConfig, cpuInit := cpuDetectPod(image, &container)
	volumes = append(volumes, nodeConfig)
	initContainers = append(initContainers, cpuInit)
	annotations := map[string]string{
		ConfigHashAnnotation: ConfigHash(image, config, javaOpts),
		VersionAnnotation:    sc.Spec.Managed.Version,
	}
	if ksVolumes, ksInit := keystorePod(sc, image, &container); ksInit != nil {
		volumes = append(volumes, ksVolumes...)
		initContainers = append(initContainers, *ksInit)
	}
	if SecurityEnabled(sc) {
		secVolumes, check := securePod(sc, p, image, &container)
		volumes = append(volumes, secVolumes...)
		initContainers = append(initContainers, check)
		annotations[TrustAnnotation], annotations[CertificatesAnnotation] = rev.Trust, rev.Issued
	} else {
		container.Env = append(container.Env, corev1.EnvVar{Name: "DISABLE_SECURITY_PLUGIN", Value: "true"})
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sc.Namespace, Labels: l},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: PoolSelector(sc, p.Name)},
			// All cluster-manager nodes must start together to elect; ordered start-up
			// would wait forever for pod 0 to be ready.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			// The operator restarts pods itself, one at a time behind its predicates.
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			// Data volumes outlive the cluster object unless the user deletes them.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			VolumeClaimTemplates: claims,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec: corev1.PodSpec{
					InitContainers:                initContainers,
					Containers:                    []corev1.Container{container},
					Volumes:                       volumes,
					Affinity:                      affinity,
					NodeSelector:                  p.NodeSelector,
					Tolerations:                   p.Tolerations,
					TopologySpreadConstraints:     p.TopologySpreadConstraints,
					TerminationGracePeriodSeconds: ptr.To[int64](120),
					EnableServiceLinks:            ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser:      ptr.To[int64](1000),
						RunAsGroup:     ptr.To[int64](1000),
						FSGroup:        ptr.To[int64](1000),
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				},
			},
		},
	}
}

// MinMaxMapCount is the vm.max_map_count OpenSearch's bootstrap check wants for mmap.
const MinMaxMapCount = 262144

// SysctlCommand is the operator's subcommand that raises vm.max_map_count to
// MinMaxMapCount (never lowers it); the privileged init container runs it.
const SysctlCommand = "sysctl-max-map-count"

// maxMapCountInit raises the node's vm.max_map_count: privileged, as root, the one thing in
// the pod that is, so it runs image — the operator's installer's choice — doing only that,
// never the cluster's image or a command a spec could change.
func maxMapCountInit(image string) corev1.Container {
	return corev1.Container{
		Name:  "sysctl-max-map-count",
		Image: image,
		Args:  []string{SysctlCommand},
		SecurityContext: &corev1.SecurityContext{
			Privileged:   ptr.To(true),
			RunAsUser:    ptr.To[int64](0),
			RunAsNonRoot: ptr.To(false),
		},
	}
}

// ClientService is the cluster's one Service for HTTP clients and the operator.
func ClientService(sc *v1alpha1.SearchCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: ClientServiceName(sc), Namespace: sc.Namespace, Labels: map[string]string{
			"app.kubernetes.io/name": "opensearch", "app.kubernetes.io/instance": sc.Name,
			ManagedByLabel: ManagedBy, ClusterLabel: sc.Name}},
		Spec: corev1.ServiceSpec{
			Selector: ClusterSelector(sc),
			Ports:    []corev1.ServicePort{{Name: "http", Port: HTTPPort, TargetPort: intstr.FromString("http")}},
		},
	}
}

// Content is a built object as the operator applies it: unstructured, without status and
// without null fields (unset timestamps and the like), so a server-side apply claims only
// the fields the builder sets.
func Content(obj runtime.Object) (map[string]any, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(content, "status")
	pruneNulls(content)
	return content, nil
}

func pruneNulls(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			pruneNulls(e)
		}
	case []any:
		for _, e := range x {
			pruneNulls(e)
		}
	}
}

// Operator says where the operator's pods are, for the clusters' NetworkPolicies.
type Operator struct {
	// Namespace of the operator's pods; empty when the operator runs outside the cluster
	// (development), where no policy can name it.
	Namespace string
}

// OperatorPodLabels are the labels the chart and the kustomize install give the
// operator's pods.
var OperatorPodLabels = map[string]string{"app.kubernetes.io/name": "vectorpilot", "app.kubernetes.io/component": "operator"}

// NetworkPolicyName is the name of a cluster's NetworkPolicy.
func NetworkPolicyName(sc *v1alpha1.SearchCluster) string { return sc.Name + "-opensearch" }

// NetworkPolicy closes the cluster's pods: transport (9300) from the cluster's own pods
// only; HTTP (9200) from them, the operator, the namespace's benchmark Workflow pods and
// the spec's allowFrom. Everything else is refused by a CNI that enforces policies.
func NetworkPolicy(sc *v1alpha1.SearchCluster, op Operator) *networkingv1.NetworkPolicy {
	own := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: ClusterSelector(sc)}}
	port := func(p int) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(int32(p)))}}
	}
	httpFrom := []networkingv1.NetworkPolicyPeer{own,
		{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: v1alpha1.BenchmarkRunLabel, Operator: metav1.LabelSelectorOpExists}}}}}
	if op.Namespace != "" {
		httpFrom = append(httpFrom, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: op.Namespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: OperatorPodLabels},
		})
	}
	httpFrom = append(httpFrom, sc.Spec.Managed.NetworkPolicy.AllowFrom...)
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(sc), Namespace: sc.Namespace, Labels: map[string]string{
			ManagedByLabel: ManagedBy, ClusterLabel: sc.Name}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: ClusterSelector(sc)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port(TransportPort), From: []networkingv1.NetworkPolicyPeer{own}},
				{Ports: port(HTTPPort), From: httpFrom},
			},
		},
	}
}

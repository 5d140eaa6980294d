package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SearchClusterSpec declares an OpenSearch cluster with the k-NN plugin that indexes are
// placed on.
// +kubebuilder:validation:XValidation:rule="has(self.external) != has(self.managed)",message="exactly one of spec.external and spec.managed must be set"
// +kubebuilder:validation:XValidation:rule="has(self.managed) == has(oldSelf.managed)",message="a SearchCluster cannot switch between spec.managed and spec.external"
type SearchClusterSpec struct {
	// external is an OpenSearch endpoint the operator only talks to: a managed service, a
	// cluster from the OpenSearch Helm chart or another operator.
	// +optional
	External *ExternalCluster `json:"external,omitempty"`

	// managed is an OpenSearch cluster the operator runs: node pools as StatefulSets.
	// +optional
	Managed *ManagedCluster `json:"managed,omitempty"`
}

// ManagedCluster is an OpenSearch cluster with k-NN that the operator runs and rolls.
// +kubebuilder:validation:XValidation:rule="self.nodePools.exists(p, 'cluster_manager' in p.roles)",message="spec.managed.nodePools: at least one pool must have the cluster_manager role",fieldPath=".nodePools"
// +kubebuilder:validation:XValidation:rule="self.nodePools.exists(p, 'data' in p.roles)",message="spec.managed.nodePools: at least one pool must have the data role",fieldPath=".nodePools"
// +kubebuilder:validation:XValidation:rule="has(self.remoteStore) == has(oldSelf.remoteStore) && (!has(self.remoteStore) || self.remoteStore == oldSelf.remoteStore)",message="spec.managed.remoteStore is immutable: a node reads it when it first starts and keeps its data where it said; a remote-backed cluster needs a new SearchCluster (restore into it)",fieldPath=".remoteStore"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.mmap) || has(self.mmap)",message="spec.managed.mmap cannot be removed once set (the operator records what a cluster was created with): set Disabled, InitContainer or NodeConfigured",fieldPath=".mmap"
type ManagedCluster struct {
	// version is the OpenSearch version, e.g. 3.6.0. It is also the image tag unless image
	// is set. Upgrades roll data nodes before cluster managers and pause while the cluster is
	// not green; a jump over a major version is refused (OpenSearch reads indexes of the
	// previous major only), and so is a version below one a node has run
	// (status.newestNodeVersion): an upgrade can be set back only while no node has run it.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.split('.').map(x, int(x))[0] <= oldSelf.split('.').map(x, int(x))[0] + 1",message="spec.managed.version cannot skip a major version: upgrade to the next major first"
	Version string `json:"version"`

	// image is the OpenSearch image with the k-NN plugin; default
	// opensearchproject/opensearch:<version>.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// nodePools are groups of nodes with the same roles, hardware and settings.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// A pool removed from the list is drained one node at a time (its shards moved to
	// other nodes, its cluster-manager votes moved), then its objects are deleted; its
	// volume claims stay.
	NodePools []NodePool `json:"nodePools"`

	// keystore are Secrets whose keys become OpenSearch keystore entries on every node, as
	// in the official Helm chart: e.g. a Secret with s3.client.default.access_key and
	// s3.client.default.secret_key for snapshots and the remote store. Nodes read the
	// keystore when they start: a changed Secret takes effect at their next restart.
	// +optional
	// +listType=map
	// +listMapKey=secretName
	// +kubebuilder:validation:MaxItems=16
	Keystore []KeystoreSecret `json:"keystore,omitempty"`

	// remoteStore makes the cluster remote-backed: every index's segments and translog
	// (every acknowledged write) go to an S3 repository, and the cluster state to another
	// when clusterState is set; indexes use segment replication. Rendered as the node
	// attributes OpenSearch reads when a node first starts, so it is immutable. The S3
	// client's endpoint and region are pool additionalConfig (s3.client.*), its
	// credentials a keystore Secret (or the nodes' IAM role).
	// +optional
	RemoteStore *ManagedRemoteStore `json:"remoteStore,omitempty"`

	// search holds cluster-wide search defaults that indexes inherit.
	// +optional
	Search *ClusterSearch `json:"search,omitempty"`

	// updateStrategy bounds rolling restarts.
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`

	// security is TLS and authentication: on by default, as in ECK. The operator issues a
	// CA and per-node transport and HTTP certificates, bootstraps the security plugin's
	// configuration with an admin user and its own least-privilege user, and connects over
	// TLS with its own user.
	// +optional
	// +kubebuilder:default={}
	Security ClusterSecurity `json:"security,omitempty"`

	// networkPolicy closes the cluster's pods to everyone but their own cluster, the
	// operator and the clients allowFrom names. On by default for clusters created since
	// the field exists (see enabled).
	// +optional
	// +kubebuilder:default={}
	NetworkPolicy ClusterNetworkPolicy `json:"networkPolicy,omitempty"`

	// mmap says whether nodes memory-map index files, which needs vm.max_map_count ≥ 262144
	// on the Kubernetes node (OpenSearch's bootstrap check; stock nodes have 65530).
	// Disabled (default): node.store.allow_mmap is false, so pods start on any node; index
	// files are read with read calls through the page cache instead, which costs search
	// latency on large vector indexes. InitContainer: a privileged init container raises
	// the node's vm.max_map_count before OpenSearch starts (the namespace's Pod Security
	// level must allow privileged pods). NodeConfigured: the node's admin has raised it
	// (machine image, DaemonSet); nothing is added. A pool's additionalConfig
	// node.store.allow_mmap wins over all three. Written by the operator when it first sees
	// the cluster: Disabled for a new cluster, NodeConfigured (what nodes did before the
	// field existed) for one an older operator already ran; then it cannot be removed.
	// +optional
	// +kubebuilder:validation:Enum=Disabled;InitContainer;NodeConfigured
	MMap MMapMode `json:"mmap,omitempty"`
}

// MMapMode is how a managed cluster's nodes get to memory-map index files.
type MMapMode string

// MMap modes.
const (
	MMapDisabled       MMapMode = "Disabled"
	MMapInitContainer  MMapMode = "InitContainer"
	MMapNodeConfigured MMapMode = "NodeConfigured"
)

// NodeRole is an OpenSearch node role.
// +kubebuilder:validation:Enum=cluster_manager;data;ingest;search;warm
type NodeRole string

// Node roles.
const (
	RoleClusterManager NodeRole = "cluster_manager"
	RoleData           NodeRole = "data"
	RoleIngest         NodeRole = "ingest"
	RoleSearch         NodeRole = "search"
	RoleWarm           NodeRole = "warm"
)

// SIMDLevel is the CPU instruction set a pool's vector code runs with.
// +kubebuilder:validation:Enum=auto;avx2;avx512;avx512_spr;neon
type SIMDLevel string

// SIMD levels; auto lets the k-NN plugin pick the best the CPU has.
const (
	SIMDAuto      SIMDLevel = "auto"
	SIMDAVX2      SIMDLevel = "avx2"
	SIMDAVX512    SIMDLevel = "avx512"
	SIMDAVX512SPR SIMDLevel = "avx512_spr"
	SIMDNEON      SIMDLevel = "neon"
)

// ClusterSecurity is TLS and authentication of a managed cluster.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.enabled) || (has(self.enabled) && self.enabled == oldSelf.enabled)",message="spec.managed.security.enabled cannot change or be removed: nodes with and without TLS cannot form one cluster, so switching needs a new cluster (restore a snapshot into it)",fieldPath=".enabled"
type ClusterSecurity struct {
	// enabled: false runs the nodes without the security plugin: plain HTTP, no users, any
	// client that reaches port 9200 may read, write and delete every index. For development
	// only; the cluster's Secured condition says so with a Warning. Fixed at creation: the
	// operator writes it when it first sees the cluster — true for a new cluster, false for
	// one an older operator already ran without security (a newer operator never changes
	// what an existing cluster means).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// tls sets who signs the certificates and how long they live.
	// +optional
	TLS ClusterTLS `json:"tls,omitempty"`
}

// ClusterTLS is the certificate authority and lifetimes of a managed cluster's certificates.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateValidity) || !has(self.rotateBefore) || duration(self.rotateBefore) < duration(self.certificateValidity)",message="spec.managed.security.tls.rotateBefore must be shorter than certificateValidity",fieldPath=".rotateBefore"
type ClusterTLS struct {
	// caSecretRef names a Secret with tls.crt and tls.key of a CA that signs the nodes'
	// certificates instead of the operator's own CA: the Secret a cert-manager Certificate
	// with isCA: true writes. Its owner renews it; the operator re-issues the nodes'
	// certificates when it changes.
	// +optional
	CASecretRef *LocalObjectReference `json:"caSecretRef,omitempty"`

	// certificateValidity is how long the node and admin certificates the operator issues
	// are valid (default 8760h, one year). The operator's own CA lives five times as long.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('2m')",message="spec.managed.security.tls.certificateValidity must be at least 2m"
	CertificateValidity *metav1.Duration `json:"certificateValidity,omitempty"`

	// rotateBefore is how long before expiry a certificate is re-issued and its nodes
	// restarted onto it (default 720h, 30 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="spec.managed.security.tls.rotateBefore must be at least 1m"
	RotateBefore *metav1.Duration `json:"rotateBefore,omitempty"`
}

// ClusterRemoteStore is where a remote-backed cluster's nodes store their data.
type ClusterRemoteStore struct {
	SegmentRepository  string `json:"segmentRepository,omitempty"`
	TranslogRepository string `json:"translogRepository,omitempty"`
	StateRepository    string `json:"stateRepository,omitempty"`
}

// FileCacheStatus is the file cache of the nodes serving searchable snapshots.
type FileCacheStatus struct {
	// nodes is the number of nodes with a file cache.
	Nodes      int32 `json:"nodes"`
	UsedBytes  int64 `json:"usedBytes"`
	TotalBytes int64 `json:"totalBytes"`
}

// CertificatesStatus is the validity of a managed cluster's node and admin certificates.
type CertificatesStatus struct {
	// issuer is the subject of the CA that signs them.
	Issuer string `json:"issuer"`
	// notAfter is when the earliest of them expires.
	NotAfter metav1.Time `json:"notAfter"`
	// renewAt is when the operator re-issues them and restarts the nodes onto them.
	RenewAt metav1.Time `json:"renewAt"`
	// servedNotAfter is when the earliest of the certificates the running nodes serve
	// ends: a node reads them at start-up, so one not yet restarted onto re-issued
	// certificates serves the ones they replaced. Absent while no pod runs.
	// +optional
	ServedNotAfter *metav1.Time `json:"servedNotAfter,omitempty"`
}

// ClusterNetworkPolicy is the NetworkPolicy the operator keeps for a managed cluster: the
// transport port (9300) from the cluster's own pods only; the HTTP port (9200) from them,
// from the operator's pods, from the cluster namespace's benchmark Workflow pods and from
// allowFrom.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.enabled) || has(self.enabled)",message="spec.managed.networkPolicy.enabled cannot be removed once set (the operator records what a cluster was created with): set true or false",fieldPath=".enabled"
type ClusterNetworkPolicy struct {
	// enabled: false removes the policy (development, or a CNI that enforces none). The
	// operator writes it when it first sees the cluster: true for a new cluster, false for
	// one an older operator already ran without a policy; set true to opt in.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// allowFrom are further clients of the HTTP port, as NetworkPolicy peers (pods,
	// namespaces or IP blocks): your applications.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	AllowFrom []networkingv1.NetworkPolicyPeer `json:"allowFrom,omitempty"`
}

// KeystoreSecret is a Secret whose every key is added to the nodes' keystore.
type KeystoreSecret struct {
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	SecretName string `json:"secretName"`
}

// ManagedRemoteStore is where a remote-backed managed cluster keeps its data.
type ManagedRemoteStore struct {
	// repository holds the indexes' segments and translog.
	Repository S3Repository `json:"repository"`
	// clusterState, when set, holds the cluster state (cluster.remote_store.state), so a
	// cluster that lost every cluster-manager node comes back with its indexes.
	// +optional
	ClusterState *S3Repository `json:"clusterState,omitempty"`
}

// NodePool is a StatefulSet of OpenSearch nodes.
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage)",message="spec.managed.nodePools[].storage cannot be added to or removed from an existing pool: a StatefulSet cannot change its volume claims; add a new pool instead",fieldPath=".storage"
// +kubebuilder:validation:XValidation:rule="!('search' in self.roles) || self.roles.all(r, r == 'search')",message="spec.managed.nodePools[].roles: the search role cannot be combined with other roles",fieldPath=".roles"
// +kubebuilder:validation:XValidation:rule="('warm' in self.roles) == has(self.fileCacheSize)",message="spec.managed.nodePools[].fileCacheSize is required with the warm role (OpenSearch refuses to start a warm node without node.search.cache.size) and only with it",fieldPath=".fileCacheSize"
// +kubebuilder:validation:XValidation:rule="!has(self.fileCacheSize) || !has(self.additionalConfig) || !('node.search.cache.size' in self.additionalConfig)",message="spec.managed.nodePools[].additionalConfig must not set node.search.cache.size when fileCacheSize does",fieldPath=".additionalConfig"
type NodePool struct {
	// name of the pool; pods are named <cluster>-<pool>-<ordinal>.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=24
	Name string `json:"name"`

	// roles of the pool's nodes. Roles can be added, not removed: a node that leaves the
	// data or cluster_manager role leaves with its shards or its vote (and OpenSearch
	// refuses to start a node whose data folder holds shards of a role it no longer has).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:XValidation:rule="oldSelf.all(r, r in self)",message="spec.managed.nodePools[].roles: a role cannot be removed from an existing pool: its nodes would leave it with their shards or votes; add a new pool instead"
	Roles []NodeRole `json:"roles"`

	// replicas is the number of nodes. A decrease removes the highest ordinals one at a
	// time, each after its shards have moved to other nodes and, for a cluster manager,
	// after its vote has moved (status.scaleDown says how far); the volume claims of removed
	// nodes stay.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// resources of the OpenSearch container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// storage is the data volume claimed per node. Without it data lives in an emptyDir and
	// is lost when a pod is replaced: for benchmarks and development only.
	// +optional
	Storage *PoolStorage `json:"storage,omitempty"`

	// fileCacheSize is the disk a warm node gives its file cache, which holds what queries
	// read of searchable snapshots (RemoteSnapshot indexes); it lives on the data volume
	// (node.search.cache.size). Required with the warm role.
	// +optional
	FileCacheSize *resource.Quantity `json:"fileCacheSize,omitempty"`

	// jvm sets the heap and extra JVM options.
	// +optional
	JVM *JVMOptions `json:"jvm,omitempty"`

	// simd pins the pool to nodes whose CPUs have this instruction set and makes the k-NN
	// plugin load exactly that library variant.
	// +kubebuilder:default=auto
	// +optional
	SIMD SIMDLevel `json:"simd,omitempty"`

	// instanceTypes restricts the pool to these node.kubernetes.io/instance-type values.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	InstanceTypes []string `json:"instanceTypes,omitempty"`

	// instanceFamilies restricts the pool to these karpenter.k8s.aws/instance-family values.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	InstanceFamilies []string `json:"instanceFamilies,omitempty"`

	// nodeSelector is added to the pods' node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// topologySpreadConstraints of the pods; their labelSelector should match the pool's
	// labels vectorpilot.io/cluster and vectorpilot.io/pool.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// additionalConfig are opensearch.yml settings, from an allowlist: indices.*, search.*,
	// thread_pool.*, knn.* (not knn.faiss.*: the pool's simd level decides), action.*,
	// logger.*, script.*, plugins.query.*, node.attr.* (not vectorpilot's or remote_store's),
	// s3.client.* (not credentials: those go to the keystore), the disk, awareness and
	// balance settings of cluster.routing.allocation, cluster.max_shards_per_node,
	// node.processors, node.store.allow_mmap, node.search.cache.size, path.repo, http.max_content_length,
	// http.compression and http.cors.*. How a node binds, listens, discovers its peers,
	// forms the cluster and secures itself is the operator's, and refused here.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^((indices|search|thread_pool|action|logger|script|plugins[.]query|knn|node[.]attr|s3[.]client|http[.]cors)[.]|cluster[.]routing[.]allocation[.](disk|awareness|balance)[.]|(cluster[.]max_shards_per_node|node[.]processors|node[.]store[.]allow_mmap|node[.]search[.]cache[.]size|path[.]repo|http[.]max_content_length|http[.]compression)$)') && !k.matches('^(knn[.]faiss[.]|node[.]attr[.](vectorpilot|remote_store)|s3[.]client[.].*(_key|session_token)$)'))",message="spec.managed.nodePools[].additionalConfig may set only allowlisted settings (see the field description): binding, listening, discovery, cluster formation, security, credentials and the k-NN library variant are set by the operator"
	// +optional
	AdditionalConfig map[string]string `json:"additionalConfig,omitempty"`
}

// PoolStorage is the PersistentVolumeClaim template of a pool.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.managed.nodePools[].storage is immutable: a StatefulSet cannot change its volume claims"
type PoolStorage struct {
	// size of each node's volume.
	Size resource.Quantity `json:"size"`
	// storageClassName of the claims; the cluster default when empty.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// JVMOptions of a pool.
type JVMOptions struct {
	// heap is -Xms and -Xmx, e.g. 4g. Default: half the container memory limit (or request),
	// at most 31g so compressed object pointers stay on; 1g without either.
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*[mg]$`
	// +optional
	Heap string `json:"heap,omitempty"`
	// extraOptions are appended to the JVM options.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	ExtraOptions []string `json:"extraOptions,omitempty"`
}

// ClusterSearch holds cluster-wide search defaults.
type ClusterSearch struct {
	// concurrentSegmentSearch sets the cluster default of concurrent segment search.
	// +optional
	ConcurrentSegmentSearch *ClusterConcurrentSegmentSearch `json:"concurrentSegmentSearch,omitempty"`
}

// ClusterConcurrentSegmentSearch is search.concurrent_segment_search.mode and
// search.concurrent.max_slice_count for the whole cluster.
type ClusterConcurrentSegmentSearch struct {
	// mode: auto (k-NN and aggregation queries go concurrent), all or none.
	// +kubebuilder:validation:Enum=auto;all;none
	// +optional
	Mode string `json:"mode,omitempty"`
	// maxSliceCount is the default slice count; 0 lets Lucene slice.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	MaxSliceCount *int32 `json:"maxSliceCount,omitempty"`
}

// UpdateStrategy bounds rolling restarts.
type UpdateStrategy struct {
	// maxUnavailable is how many nodes may be down at once during a rolling restart.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
}

// ExternalCluster is how the operator reaches a cluster it does not run.
// +kubebuilder:validation:XValidation:rule="has(self.endpoint) != has(self.openSearchClusterRef)",message="exactly one of spec.external.endpoint and spec.external.openSearchClusterRef must be set"
type ExternalCluster struct {
	// endpoint is the cluster's HTTP(S) URL, e.g. https://opensearch.search.svc:9200.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('http://') || self.startsWith('https://'))",message="spec.external.endpoint must be an http:// or https:// URL"
	Endpoint string `json:"endpoint,omitempty"`

	// openSearchClusterRef names an OpenSearchCluster of the OpenSearch operator
	// (opensearch-project/opensearch-k8s-operator, API group opensearch.org or
	// opensearch.opster.io) in this namespace, instead of an endpoint: the operator reads
	// the endpoint from its service and HTTP port, the CA from its HTTP certificate's
	// Secret and, unless credentialsSecretRef names others, the credentials from its admin
	// credentials Secret — which, as any credentials, it uses only with that Secret's
	// consent (the vectorpilot.io/searchclusters annotation). A user of its own, with the
	// actions of docs/security/operator-role.yml, is the least-privilege choice.
	// +optional
	OpenSearchClusterRef *LocalObjectReference `json:"openSearchClusterRef,omitempty"`

	// credentialsSecretRef names a Secret with keys username and password for HTTP basic auth.
	// +optional
	CredentialsSecretRef *LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// caSecretRef names a Secret whose key ca.crt holds the PEM CA bundle that signs the
	// endpoint's certificate (with openSearchClusterRef: instead of the one its HTTP
	// certificate's Secret holds).
	// +optional
	CASecretRef *LocalObjectReference `json:"caSecretRef,omitempty"`

	// insecureSkipVerify turns off TLS certificate verification. For development only.
	// +optional
	// +kubebuilder:default=false
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// SearchClusterStatus is what the operator last observed of the cluster.
type SearchClusterStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// version is the OpenSearch version the cluster reports.
	// +optional
	Version string `json:"version,omitempty"`
	// health is the cluster health: green, yellow or red.
	// +optional
	Health string `json:"health,omitempty"`
	// nodes is the number of nodes in the cluster.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// knnPluginVersion is the version of the k-NN plugin found on the nodes, empty when absent.
	// +optional
	KNNPluginVersion string `json:"knnPluginVersion,omitempty"`
	// newestNodeVersion is the newest OpenSearch version a node of the cluster has run since
	// the operator first saw it; spec.managed.version cannot go below it.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	NewestNodeVersion string `json:"newestNodeVersion,omitempty"`
	// endpoint is the URL the operator reaches a managed cluster at.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// initialClusterManagerNodes is the bootstrap voting configuration of a managed cluster,
	// fixed on first reconcile so later scaling does not change the nodes' configuration.
	// +optional
	InitialClusterManagerNodes []string `json:"initialClusterManagerNodes,omitempty"`
	// pools is what each node pool of a managed cluster runs.
	// +listType=map
	// +listMapKey=name
	// +optional
	Pools []NodePoolStatus `json:"pools,omitempty"`
	// rollout is the state of a rolling restart of a managed cluster.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// certificates is the validity of a secured managed cluster's certificates.
	// +optional
	Certificates *CertificatesStatus `json:"certificates,omitempty"`
	// remoteStore names the repositories the cluster's nodes store segments, translog and
	// cluster state in, from their node attributes; absent on a cluster that is not
	// remote-backed (the attributes are fixed when a node starts).
	// +optional
	RemoteStore *ClusterRemoteStore `json:"remoteStore,omitempty"`
	// fileCache is the file cache of the nodes that serve searchable snapshots (warm
	// role), summed; absent when no node has one.
	// +optional
	FileCache *FileCacheStatus `json:"fileCache,omitempty"`
	// clusterUUID is the UUID of the managed cluster once it has formed. From then on new
	// and restarted nodes start without cluster.initial_cluster_manager_nodes, so they can
	// only join this cluster, never bootstrap another.
	// +optional
	ClusterUUID string `json:"clusterUUID,omitempty"`
	// drainingNodes are the nodes the operator has excluded from shard allocation
	// (cluster.routing.allocation.exclude._name) to move their shards off: nodes leaving
	// the cluster, and nodes holding the only copy of a shard before they restart. Each is
	// lifted once the node is gone, or back on the current revision.
	// +optional
	DrainingNodes []string `json:"drainingNodes,omitempty"`
	// scaleDown is the removal of a node a shrinking or removed pool no longer wants.
	// +optional
	ScaleDown *ScaleDownStatus `json:"scaleDown,omitempty"`
	// allocationRestricted: a rolling restart restricts cluster.routing.allocation.enable
	// to primaries (and sets search weights) and has not lifted them yet. It is written
	// before the first change reaches OpenSearch, so a change whose status write is lost
	// (an operator killed between the two) is still lifted; the lift is retried until it
	// succeeds once every node is back.
	// +optional
	AllocationRestricted bool `json:"allocationRestricted,omitempty"`
	// settingsBeforeRestart are the persistent cluster settings a rolling restart changes
	// (shard allocation, allocation awareness), as they were before it changed them,
	// recorded with allocationRestricted and put back by the lift; a setting that was
	// unset is absent.
	// +optional
	SettingsBeforeRestart map[string]string `json:"settingsBeforeRestart,omitempty"`
	// handedOver is the cluster-manager node a rolling restart took out of the voting
	// configuration so that another node was elected before it stopped. Written before the
	// exclusion reaches OpenSearch; the exclusion is cleared once every node is back.
	// +optional
	HandedOver string `json:"handedOver,omitempty"`
	// conditions: Ready, Progressing, Degraded, and Scheduled for managed clusters.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePoolStatus is what a node pool runs, as observed.
type NodePoolStatus struct {
	// name of the pool.
	Name string `json:"name"`
	// replicas is the number of pods that exist.
	Replicas int32 `json:"replicas"`
	// readyReplicas is the number of pods that are ready.
	ReadyReplicas int32 `json:"readyReplicas"`
	// updatedReplicas is the number of pods on the current configuration.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// nodeSIMD is the best instruction set all the pool's Kubernetes nodes have, read from
	// their labels (node-feature-discovery CPU labels, instance family, architecture);
	// unknown when the labels do not tell.
	// +optional
	NodeSIMD string `json:"nodeSIMD,omitempty"`
	// simd is the k-NN library variant the pool's OpenSearch nodes load, from what they
	// report in _nodes (the knn.faiss.*.disabled settings they started with) capped by the
	// CPU level of their Kubernetes nodes; the lowest when nodes differ, generic when none
	// is left. Absent while OpenSearch has not been read.
	// +optional
	SIMD string `json:"simd,omitempty"`
	// cpuSIMD is the best instruction set the CPUs of the pool's OpenSearch nodes have, as
	// each node found it in /proc/cpuinfo where it started (node attribute
	// vectorpilot_cpu, read from _nodes); the lowest when nodes differ. A level below the
	// pool's simd makes the cluster Degraded (reason SIMDUnavailable). Absent while
	// OpenSearch has not been read.
	// +optional
	CPUSIMD string `json:"cpuSIMD,omitempty"`
	// faissLibrary is the faiss library variant the pool's OpenSearch nodes loaded, as each
	// node's log says it (the k-NN plugin logs it when a faiss index is first used): generic,
	// avx2, avx512 or avx512_spr; the lowest when nodes differ. Absent until a node of the
	// pool has loaded one. Another variant than simd selects, or a library that failed to
	// load, makes the cluster Degraded (reason FaissLibraryMismatch).
	// +optional
	FaissLibrary string `json:"faissLibrary,omitempty"`
	// luceneVector is the vector code Lucene runs on the pool's nodes, from the JVM
	// arguments they report (_nodes) and their CPU: panama-512, panama-256 or panama-128
	// (the Panama vector API at that width), panama (width unknown) or scalar (the vector
	// module is off); mixed when nodes differ.
	// +optional
	LuceneVector string `json:"luceneVector,omitempty"`
	// openSearchNodes is the number of the pool's nodes in the OpenSearch cluster, as
	// OpenSearch lists them. Absent while OpenSearch has not been read.
	// +optional
	OpenSearchNodes *int32 `json:"openSearchNodes,omitempty"`
	// unschedulable is the scheduler's message for a pod of the pool it cannot place.
	// +optional
	Unschedulable string `json:"unschedulable,omitempty"`
}

// RolloutStatus says how far a rolling restart is and what holds it.
type RolloutStatus struct {
	// pendingPods is the number of pods still on an old configuration.
	PendingPods int32 `json:"pendingPods"`
	// blockedBy names the predicate that holds the next restart, empty when none does.
	// +optional
	BlockedBy string `json:"blockedBy,omitempty"`
	// message explains the hold.
	// +optional
	Message string `json:"message,omitempty"`
}

// ScaleDownStatus says which node is leaving and what it waits for.
type ScaleDownStatus struct {
	// node is the pod leaving the cluster.
	Node string `json:"node"`
	// phase is Wait (for the cluster to settle), Drain (its shards moving off),
	// ExcludeVote (its cluster-manager vote moving) or Remove (its pod going).
	Phase string `json:"phase"`
	// message says what it waits for.
	// +optional
	Message string `json:"message,omitempty"`
}

// SearchCluster is an OpenSearch cluster with the k-NN plugin.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="!has(self.spec.managed) || !has(oldSelf.spec.managed) || self.spec.managed.version == oldSelf.spec.managed.version || (has(oldSelf.status.newestNodeVersion) ? (self.spec.managed.version.split('.').map(x, int(x))[0] > oldSelf.status.newestNodeVersion.split('.').map(x, int(x))[0] || (self.spec.managed.version.split('.').map(x, int(x))[0] == oldSelf.status.newestNodeVersion.split('.').map(x, int(x))[0] && (self.spec.managed.version.split('.').map(x, int(x))[1] > oldSelf.status.newestNodeVersion.split('.').map(x, int(x))[1] || (self.spec.managed.version.split('.').map(x, int(x))[1] == oldSelf.status.newestNodeVersion.split('.').map(x, int(x))[1] && self.spec.managed.version.split('.').map(x, int(x))[2] >= oldSelf.status.newestNodeVersion.split('.').map(x, int(x))[2])))) : (self.spec.managed.version.split('.').map(x, int(x))[0] > oldSelf.spec.managed.version.split('.').map(x, int(x))[0] || (self.spec.managed.version.split('.').map(x, int(x))[0] == oldSelf.spec.managed.version.split('.').map(x, int(x))[0] && (self.spec.managed.version.split('.').map(x, int(x))[1] > oldSelf.spec.managed.version.split('.').map(x, int(x))[1] || (self.spec.managed.version.split('.').map(x, int(x))[1] == oldSelf.spec.managed.version.split('.').map(x, int(x))[1] && self.spec.managed.version.split('.').map(x, int(x))[2] >= oldSelf.spec.managed.version.split('.').map(x, int(x))[2])))))",message="spec.managed.version cannot go below a version a node of the cluster has run (status.newestNodeVersion): OpenSearch nodes cannot downgrade their data; an upgrade can be set back only while no node has run it",fieldPath=".spec.managed.version"
// +kubebuilder:resource:shortName=vpsc,categories=vectorpilot
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SearchCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SearchClusterSpec `json:"spec,omitempty"`
	// The default makes a new object's status say generation 0 is observed, so kstatus
	// (Flux) reads it as InProgress until the operator has looked at it, never Current.
	// +kubebuilder:default={observedGeneration: 0}
	Status SearchClusterStatus `json:"status,omitempty"`
}

// SearchClusterList is a list of SearchCluster.
// +kubebuilder:object:root=true
type SearchClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SearchCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SearchCluster{}, &SearchClusterList{})
}

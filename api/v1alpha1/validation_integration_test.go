package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.Kube|testsupport.OpenSearch)) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	cp := testsupport.ControlPlane(t)
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

var nameSeq int

func validIndex() *v1alpha1.VectorIndex {
	nameSeq++
	return &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vi-%d", nameSeq), Namespace: "default"},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"},
			Shards:     2,
			Replicas:   1,
			Fields: []v1alpha1.VectorField{{
				Name: "embedding", Dimension: 64, DataType: "float", SpaceType: "innerproduct", Engine: "faiss",
				Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfConstruction: ptr.To[int32](100), EfSearch: ptr.To[int32](100)}},
			}},
		},
	}
}

func TestRoundTripAppliesDefaults(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	sc := &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "default"},
		Spec:       v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "https://opensearch.search.svc:9200", CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "os-creds"}}},
	}
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	// Applied as a user applies it, from YAML that leaves every optional field out.
	manifest := `
apiVersion: vectorpilot.io/v1alpha1
kind: VectorIndex
metadata: {name: products, namespace: default}
spec:
  clusterRef: {name: vectors}
  fields:
  - {name: embedding, dimension: 768}
`
	vi := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &vi.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, vi); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.VectorIndex
	if err := c.Get(ctx, client.ObjectKeyFromObject(vi), &got); err != nil {
		t.Fatal(err)
	}
	f := got.Spec.Fields[0]
	if got.Spec.Shards != 1 || got.Spec.Replicas != 1 || got.Spec.RefreshInterval != "1s" || got.Spec.DeletionPolicy != "Retain" ||
		f.DataType != "float" || f.SpaceType != "l2" || f.Engine != "faiss" || f.Method.Name != "hnsw" || f.Mode != "in_memory" || f.CompressionLevel != "1x" ||
		got.Spec.Search.ConcurrentSegmentSearch.Mode != "auto" {
		t.Fatalf("defaults not applied: %+v", got.Spec)
	}
	var gotSC v1alpha1.SearchCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(sc), &gotSC); err != nil {
		t.Fatal(err)
	}
	if gotSC.Spec.External.Endpoint != sc.Spec.External.Endpoint || gotSC.Spec.External.CredentialsSecretRef.Name != "os-creds" {
		t.Fatalf("SearchCluster did not round-trip: %+v", gotSC.Spec)
	}
}

func field(name string, dim int32, dataType, space, engine, method string) v1alpha1.VectorField {
	return v1alpha1.VectorField{Name: name, Dimension: dim, DataType: dataType, SpaceType: space, Engine: engine, Method: v1alpha1.VectorMethod{Name: method}}
}

// TestInvalidSpecsAreRefusedAtAdmission is the corpus of bad specs: each must be refused
// by the apiserver with a message that names the field.
func TestInvalidSpecsAreRefusedAtAdmission(t *testing.T) {
	c := newClient(t)
	cases := []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
		want   []string
	}{
		{"dimension zero", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Dimension = 0 }, []string{"spec.fields[0].dimension"}},
		{"dimension too large", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Dimension = 16001 }, []string{"spec.fields[0].dimension"}},
		{"shards negative", func(v *v1alpha1.VectorIndex) { v.Spec.Shards = -1 }, []string{"spec.shards"}},
		{"shards too many", func(v *v1alpha1.VectorIndex) { v.Spec.Shards = 1025 }, []string{"spec.shards"}},
		{"replicas too many", func(v *v1alpha1.VectorIndex) { v.Spec.Replicas = 16 }, []string{"spec.replicas"}},
		{"replicas negative", func(v *v1alpha1.VectorIndex) { v.Spec.Replicas = -1 }, []string{"spec.replicas"}},
		{"index name upper case", func(v *v1alpha1.VectorIndex) { v.Spec.IndexName = "Products" }, []string{"spec.indexName"}},
		{"index name leading underscore", func(v *v1alpha1.VectorIndex) { v.Spec.IndexName = "_products" }, []string{"spec.indexName"}},
		{"refresh interval words", func(v *v1alpha1.VectorIndex) { v.Spec.RefreshInterval = "soon" }, []string{"spec.refreshInterval"}},
		{"no fields", func(v *v1alpha1.VectorIndex) { v.Spec.Fields = nil }, []string{"spec.fields"}},
		{"seventeen fields", func(v *v1alpha1.VectorIndex) {
			for i := 1; i <= 16; i++ {
				v.Spec.Fields = append(v.Spec.Fields, field(fmt.Sprintf("f%d", i), 8, "float", "l2", "faiss", "hnsw"))
			}
		}, []string{"spec.fields"}},
		{"duplicate field names", func(v *v1alpha1.VectorIndex) { v.Spec.Fields = append(v.Spec.Fields, v.Spec.Fields[0]) }, []string{"spec.fields[1]", "Duplicate value"}},
		{"field name with space", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Name = "my field" }, []string{"spec.fields[0].name"}},
		{"unknown data type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].DataType = "half" }, []string{"spec.fields[0].dataType"}},
		{"unknown space type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].SpaceType = "cosine" }, []string{"spec.fields[0].spaceType"}},
		{"unknown engine", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Engine = "annoy" }, []string{"spec.fields[0].engine"}},
		{"binary with l2", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("bits", 64, "binary", "l2", "faiss", "hnsw") }, []string{"spec.fields[0]", "dataType binary requires spaceType hamming"}},
		{"binary on disk", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("bits", 64, "binary", "hamming", "lucene", "hnsw")
			v.Spec.Fields[0].Mode = "on_disk"
		}, []string{"spec.fields[0]", "dataType binary requires", "mode in_memory"}},
		{"binary dimension not multiple of 8", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("bits", 12, "binary", "hamming", "faiss", "hnsw")
		}, []string{"spec.fields[0]", "multiple of 8"}},
		{"hamming on float", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("v", 64, "float", "hamming", "faiss", "hnsw") }, []string{"spec.fields[0].spaceType", "requires dataType binary"}},
		{"ivf without training", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("v", 64, "float", "l2", "faiss", "ivf") }, []string{"spec.fields[0].method.name", "method ivf needs training"}},
		{"ivf on lucene", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "float", "l2", "lucene", "ivf")
			v.Spec.Fields[0].Training = &v1alpha1.FieldTraining{ModelID: "m", Index: "sample"}
		}, []string{"spec.fields[0].method.name", "engine faiss"}},
		{"ivf compressed", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "float", "l2", "faiss", "ivf")
			v.Spec.Fields[0].Training = &v1alpha1.FieldTraining{ModelID: "m", Index: "sample"}
			v.Spec.Fields[0].CompressionLevel = "8x"
		}, []string{"spec.fields[0].method.name", "compressionLevel 1x"}},
		{"training on hnsw", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Training = &v1alpha1.FieldTraining{ModelID: "m", Index: "sample"}
		}, []string{"spec.fields[0].training", "training is for method ivf"}},
		{"training without a model name", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "float", "l2", "faiss", "ivf")
			v.Spec.Fields[0].Training = &v1alpha1.FieldTraining{Index: "sample"}
		}, []string{"spec.fields[0].training.modelId"}},
		{"model name upper case", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "float", "l2", "faiss", "ivf")
			v.Spec.Fields[0].Training = &v1alpha1.FieldTraining{ModelID: "Products", Index: "sample"}
		}, []string{"spec.fields[0].training.modelId"}},
		{"lucene with l1", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("v", 64, "float", "l1", "lucene", "hnsw") }, []string{"spec.fields[0].spaceType", "spaceType l1 and linf are engine nmslib's only"}},
		{"faiss with linf", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("v", 64, "float", "linf", "faiss", "hnsw") }, []string{"spec.fields[0].spaceType", "spaceType l1 and linf"}},
		{"faiss bytes with cosine", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "byte", "cosinesimil", "faiss", "hnsw")
		}, []string{"spec.fields[0].spaceType", "engine faiss does not support spaceType cosinesimil with dataType byte"}},
		{"nmslib with bytes", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0] = field("v", 64, "byte", "l2", "nmslib", "hnsw") }, []string{"spec.fields[0].engine", "engine nmslib requires dataType float"}},
		{"on_disk on lucene at 1x", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "float", "l2", "lucene", "hnsw")
			v.Spec.Fields[0].Mode, v.Spec.Fields[0].CompressionLevel = "on_disk", "1x"
		}, []string{"spec.fields[0].mode", "engine lucene with compressionLevel 4x or 32x"}},
		{"faiss at 4x", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].CompressionLevel = "4x" }, []string{"spec.fields[0].compressionLevel", "2x, 8x, 16x or 32x on engine faiss"}},
		{"compression on bytes", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0] = field("v", 64, "byte", "l2", "faiss", "hnsw")
			v.Spec.Fields[0].CompressionLevel = "8x"
		}, []string{"spec.fields[0].compressionLevel", "compressionLevel above 1x requires dataType float"}},
		{"unknown compression", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].CompressionLevel = "3x" }, []string{"spec.fields[0].compressionLevel"}},
		{"m too small", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](1) }, []string{"spec.fields[0].method.parameters.m"}},
		{"efConstruction too large", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.EfConstruction = ptr.To[int32](5000) }, []string{"spec.fields[0].method.parameters.efConstruction"}},
		{"hnsw with nlist", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.Nlist = ptr.To[int32](16) }, []string{"spec.fields[0].method.parameters", "method hnsw takes parameters m"}},
		{"ivf with m", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Method = v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16)}}
		}, []string{"spec.fields[0].method.parameters", "method ivf takes parameters nlist"}},
		{"nprobes above nlist", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Method = v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](4), Nprobes: ptr.To[int32](8)}}
		}, []string{"spec.fields[0].method.parameters.nprobes", "must not exceed nlist"}},
		{"efSearch differs across fields", func(v *v1alpha1.VectorIndex) {
			f := field("other", 8, "float", "l2", "faiss", "hnsw")
			f.Method.Parameters = &v1alpha1.MethodParameters{EfSearch: ptr.To[int32](50)}
			v.Spec.Fields = append(v.Spec.Fields, f)
		}, []string{"spec.fields", "efSearch must be equal on every field"}},
		{"recall target above 1", func(v *v1alpha1.VectorIndex) { v.Spec.Recall = &v1alpha1.RecallSpec{Target: "1.5"} }, []string{"spec.recall.target"}},
		{"recall target not a decimal", func(v *v1alpha1.VectorIndex) { v.Spec.Recall = &v1alpha1.RecallSpec{Target: "95%"} }, []string{"spec.recall.target"}},
		{"recall of an undeclared field", func(v *v1alpha1.VectorIndex) { v.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9", Field: "nope"} }, []string{"spec.recall.field", "must name one of spec.fields"}},
		{"recall interval under a second", func(v *v1alpha1.VectorIndex) {
			v.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9", Interval: &metav1.Duration{Duration: 100 * time.Millisecond}}
		}, []string{"spec.recall.interval", "at least 1s"}},
		{"recall k above 100", func(v *v1alpha1.VectorIndex) { v.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9", K: 1000} }, []string{"spec.recall.k"}},
		{"recall sample of 0", func(v *v1alpha1.VectorIndex) { v.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9", SampleSize: -1} }, []string{"spec.recall.sampleSize"}},
		{"extra mapping redefines a vector field", func(v *v1alpha1.VectorIndex) {
			v.Spec.ExtraMappings = map[string]v1alpha1.MappingProperty{"embedding": {JSON: apiextensionsv1.JSON{Raw: []byte(`{"type": "text"}`)}}}
		}, []string{"spec.extraMappings", "must not define a field"}},
		{"additional setting not an index setting", func(v *v1alpha1.VectorIndex) { v.Spec.AdditionalSettings = map[string]string{"codec": "best"} }, []string{"spec.additionalSettings", "must be flat index settings"}},
		{"additional setting with its own field", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.number_of_shards": "3"}
		}, []string{"spec.additionalSettings", "must not set a setting that has its own field"}},
		{"negative slice count", func(v *v1alpha1.VectorIndex) { v.Spec.Search.ConcurrentSegmentSearch.MaxSliceCount = -1 }, []string{"spec.search.concurrentSegmentSearch.maxSliceCount"}},
		{"unknown concurrent search mode", func(v *v1alpha1.VectorIndex) { v.Spec.Search.ConcurrentSegmentSearch.Mode = "sometimes" }, []string{"spec.search.concurrentSegmentSearch.mode"}},
		{"unknown deletion policy", func(v *v1alpha1.VectorIndex) { v.Spec.DeletionPolicy = "Forget" }, []string{"spec.deletionPolicy"}},
		{"benchmark results without a ConfigMap name", func(v *v1alpha1.VectorIndex) {
			v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: "Auto", CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", BenchmarkRef: &v1alpha1.BenchmarkReference{}}
		}, []string{"spec.tuning.benchmarkRef.configMap.name"}},
		{"tuning gain not a number", func(v *v1alpha1.VectorIndex) {
			v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: "Off", MinGainPerCPUPercent: "lots"}
		}, []string{"spec.tuning.minGainPerCpuPercent"}},
		{"tuning headroom above 90", func(v *v1alpha1.VectorIndex) {
			v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: "Off", CPUHeadroomPercent: 95, MinGainPerCPUPercent: "1"}
		}, []string{"spec.tuning.cpuHeadroomPercent"}},
		{"negative tuning dwell", func(v *v1alpha1.VectorIndex) {
			v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: "Auto", MinGainPerCPUPercent: "1", MinDwell: &metav1.Duration{Duration: -time.Minute}}
		}, []string{"spec.tuning.minDwell"}},
		{"tuning CPU window under a second", func(v *v1alpha1.VectorIndex) {
			v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: "Auto", MinGainPerCPUPercent: "1", CPUWindow: &metav1.Duration{Duration: time.Millisecond}}
		}, []string{"spec.tuning.cpuWindow"}},
		{"cluster reference without name", func(v *v1alpha1.VectorIndex) { v.Spec.ClusterRef.Name = "" }, []string{"spec.clusterRef.name"}},
		{"additional setting blocks writes", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.blocks.write": "true"}
		}, []string{"spec.additionalSettings", "must not block the index"}},
		{"additional setting read-only", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.read_only_allow_delete": "true"}
		}, []string{"spec.additionalSettings", "must not block the index"}},
		{"additional setting pins shards to a node", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.routing.allocation.require._name": "node-1"}
		}, []string{"spec.additionalSettings", "pin or stop its shard allocation"}},
		{"additional setting stops allocation", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.routing.allocation.enable": "none"}
		}, []string{"spec.additionalSettings", "pin or stop its shard allocation"}},
		{"additional setting expands replicas", func(v *v1alpha1.VectorIndex) {
			v.Spec.AdditionalSettings = map[string]string{"index.auto_expand_replicas": "0-all"}
		}, []string{"spec.additionalSettings", "auto_expand_replicas"}},
		{"restore of a wildcard", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Index: "products-*"}
		}, []string{"spec.restoreFrom.index"}},
		{"restore of a list", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Index: "a,b"}
		}, []string{"spec.restoreFrom.index"}},
		{"restore of _all", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Index: "_all"}
		}, []string{"spec.restoreFrom.index"}},
		{"restore of an exclusion", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Index: "-logs"}
		}, []string{"spec.restoreFrom.index"}},
		{"restore from a wildcard snapshot", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly-*"}
		}, []string{"spec.restoreFrom.snapshot"}},
		{"restore from a repository list", func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "a,b", Snapshot: "nightly"}
		}, []string{"spec.restoreFrom.repository"}},
	}
	if len(cases) < 25 {
		t.Fatalf("the corpus must hold at least 25 invalid specs, has %d", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vi := validIndex()
			tc.mutate(vi)
			expectRefused(t, c.Create(context.Background(), vi), tc.want)
		})
	}
}

// validManaged is a managed cluster every invalid case below breaks in one way.
func validManaged() *v1alpha1.ManagedCluster {
	return &v1alpha1.ManagedCluster{
		Version: "3.6.0",
		NodePools: []v1alpha1.NodePool{
			{Name: "managers", Roles: []v1alpha1.NodeRole{"cluster_manager"}, Replicas: 3},
			{Name: "vectors", Roles: []v1alpha1.NodeRole{"data", "ingest"}, Replicas: 2, SIMD: "avx512_spr",
				Storage: &v1alpha1.PoolStorage{Size: resource.MustParse("10Gi")}},
		},
	}
}

func TestInvalidSearchClustersAreRefused(t *testing.T) {
	c := newClient(t)
	ext := &v1alpha1.ExternalCluster{Endpoint: "https://opensearch.search.svc:9200"}
	managed := func(edit func(*v1alpha1.ManagedCluster)) v1alpha1.SearchClusterSpec {
		m := validManaged()
		edit(m)
		return v1alpha1.SearchClusterSpec{Managed: m}
	}
	cases := []struct {
		name string
		spec v1alpha1.SearchClusterSpec
		want []string
	}{
		{"neither external nor managed", v1alpha1.SearchClusterSpec{}, []string{"spec", "exactly one of spec.external and spec.managed"}},
		{"both external and managed", v1alpha1.SearchClusterSpec{External: ext, Managed: validManaged()}, []string{"spec", "exactly one of spec.external and spec.managed"}},
		{"ftp endpoint", v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "ftp://opensearch:9200"}}, []string{"spec.external.endpoint", "http:// or https:// URL"}},
		{"empty endpoint", v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{}}, []string{"spec.external.endpoint"}},
		{"an endpoint and an OpenSearchCluster", v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "https://os:9200",
			OpenSearchClusterRef: &v1alpha1.LocalObjectReference{Name: "my-cluster"}}},
			[]string{"spec.external", "exactly one of spec.external.endpoint and spec.external.openSearchClusterRef"}},
		{"an OpenSearchCluster without a name", v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{OpenSearchClusterRef: &v1alpha1.LocalObjectReference{}}},
			[]string{"spec.external.openSearchClusterRef.name"}},
		{"bad version", managed(func(m *v1alpha1.ManagedCluster) { m.Version = "latest" }), []string{"spec.managed.version"}},
		{"no pools", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools = nil }), []string{"spec.managed.nodePools"}},
		{"no cluster manager", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools = m.NodePools[1:] }), []string{"spec.managed.nodePools", "cluster_manager role"}},
		{"no data pool", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools = m.NodePools[:1] }), []string{"spec.managed.nodePools", "data role"}},
		{"duplicate pool", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].Name = "managers" }), []string{"spec.managed.nodePools[1]", "Duplicate value"}},
		{"bad pool name", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[0].Name = "Managers_1" }), []string{"spec.managed.nodePools[0].name"}},
		{"unknown role", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].Roles = []v1alpha1.NodeRole{"data", "ml"} }), []string{"spec.managed.nodePools[1].roles[1]", "Unsupported value"}},
		{"search role mixed", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].Roles = []v1alpha1.NodeRole{"data", "search"} }), []string{"spec.managed.nodePools[1].roles", "search role cannot be combined"}},
		{"unknown simd", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].SIMD = "sse4" }), []string{"spec.managed.nodePools[1].simd", "Unsupported value"}},
		{"warm without a file cache", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].Roles = append(m.NodePools[1].Roles, "warm") }),
			[]string{"spec.managed.nodePools[1].fileCacheSize", "required with the warm role"}},
		{"a file cache without warm", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].FileCacheSize = ptr.To(resource.MustParse("5Gi")) }),
			[]string{"spec.managed.nodePools[1].fileCacheSize", "only with it"}},
		{"file cache set twice", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].Roles = append(m.NodePools[1].Roles, "warm")
			m.NodePools[1].FileCacheSize = ptr.To(resource.MustParse("5Gi"))
			m.NodePools[1].AdditionalConfig = map[string]string{"node.search.cache.size": "1gb"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "node.search.cache.size"}},
		{"zero replicas", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].Replicas = -1 }), []string{"spec.managed.nodePools[1].replicas"}},
		{"bad heap", managed(func(m *v1alpha1.ManagedCluster) { m.NodePools[1].JVM = &v1alpha1.JVMOptions{Heap: "4GB"} }), []string{"spec.managed.nodePools[1].jvm.heap"}},
		{"owned setting knn.faiss.avx512.disabled", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "knn.faiss.avx512.disabled": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting network.bind_host", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "network.bind_host": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting network.publish_host", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "network.publish_host": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting http.port", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "http.port": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting http.host", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "http.host": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting transport.port", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "transport.port": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting transport.host", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "transport.host": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting discovery.zen.ping.unicast.hosts", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "discovery.zen.ping.unicast.hosts": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting discovery.type", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "discovery.type": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting cluster.initial_master_nodes", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "cluster.initial_master_nodes": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting node.master", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "node.master": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting node.data", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "node.data": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting plugins.security.ssl.http.enabled", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "plugins.security.ssl.http.enabled": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting plugins.security.disabled", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "plugins.security.disabled": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting node.attr.remote_store.segment.repository", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "node.attr.remote_store.segment.repository": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting node.attr.vectorpilot.pool", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "node.attr.vectorpilot.pool": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting s3.client.default.access_key", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "s3.client.default.access_key": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting s3.client.default.secret_key", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "s3.client.default.secret_key": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting bootstrap.memory_lock", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "bootstrap.memory_lock": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting path.data", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "path.data": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting cluster.name", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "cluster.name": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"owned setting cluster.routing.allocation.enable", managed(func(m *v1alpha1.ManagedCluster) {
			m.NodePools[1].AdditionalConfig = map[string]string{"indices.memory.index_buffer_size": "20%", "cluster.routing.allocation.enable": "x"}
		}), []string{"spec.managed.nodePools[1].additionalConfig", "may set only allowlisted settings"}},
		{"max unavailable zero", managed(func(m *v1alpha1.ManagedCluster) { m.UpdateStrategy.MaxUnavailable = -1 }), []string{"spec.managed.updateStrategy.maxUnavailable"}},
		{"rotation not before expiry", managed(func(m *v1alpha1.ManagedCluster) {
			m.Security.TLS = v1alpha1.ClusterTLS{CertificateValidity: &metav1.Duration{Duration: 24 * time.Hour}, RotateBefore: &metav1.Duration{Duration: 24 * time.Hour}}
		}), []string{"spec.managed.security.tls.rotateBefore", "shorter than certificateValidity"}},
		{"certificates too short-lived", managed(func(m *v1alpha1.ManagedCluster) {
			m.Security.TLS.CertificateValidity = &metav1.Duration{Duration: time.Minute}
		}), []string{"spec.managed.security.tls.certificateValidity", "at least 2m"}},
		{"rotation too close", managed(func(m *v1alpha1.ManagedCluster) {
			m.Security.TLS.RotateBefore = &metav1.Duration{Duration: time.Second}
		}), []string{"spec.managed.security.tls.rotateBefore", "at least 1m"}},
		{"empty CA Secret name", managed(func(m *v1alpha1.ManagedCluster) {
			m.Security.TLS.CASecretRef = &v1alpha1.LocalObjectReference{}
		}), []string{"spec.managed.security.tls.caSecretRef.name"}},
		{"bad segment search mode", managed(func(m *v1alpha1.ManagedCluster) {
			m.Search = &v1alpha1.ClusterSearch{ConcurrentSegmentSearch: &v1alpha1.ClusterConcurrentSegmentSearch{Mode: "sometimes"}}
		}), []string{"spec.managed.search.concurrentSegmentSearch.mode"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bad-%d", i), Namespace: "default"}, Spec: tc.spec}
			expectRefused(t, c.Create(context.Background(), sc), tc.want)
		})
	}
}

// TestSearchClusterTransitions: storage and the managed/external choice are fixed; pools,
// versions and settings change by rolling.
func TestSearchClusterTransitions(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	create := func(name string) *v1alpha1.SearchCluster {
		sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1alpha1.SearchClusterSpec{Managed: validManaged()}}
		if err := c.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sc := create("storage-fixed")
	sc.Spec.Managed.NodePools[1].Storage.Size = resource.MustParse("20Gi")
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.nodePools[1].storage", "immutable"})

	// Security is fixed once set — by its owner or by the operator recording the default
	// when it first sees the cluster: neither changed nor removed.
	sc = create("security-fixed")
	sc.Spec.Managed.Security.Enabled = ptr.To(true)
	if err := c.Update(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.Security.Enabled = ptr.To(false)
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.security.enabled", "cannot change"})
	sc.Spec.Managed.Security.Enabled = nil
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.security.enabled", "cannot change or be removed"})

	// The other recorded defaults may change, but not go back to absent: absent means the
	// operator has not decided yet, which it must never do twice.
	sc = create("recorded-defaults-stay")
	sc.Spec.Managed.NetworkPolicy.Enabled, sc.Spec.Managed.MMap = ptr.To(true), v1alpha1.MMapDisabled
	if err := c.Update(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.NetworkPolicy.Enabled, sc.Spec.Managed.MMap = ptr.To(false), v1alpha1.MMapNodeConfigured
	if err := c.Update(ctx, sc); err != nil {
		t.Fatalf("opting out of the policy and into node-configured mmap: %v", err)
	}
	sc.Spec.Managed.NetworkPolicy.Enabled = nil
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.networkPolicy.enabled", "cannot be removed"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.MMap = ""
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.mmap", "cannot be removed"})

	// The remote store is node configuration read at first start: not added, changed or
	// removed; keystore Secrets may change (they reach the nodes at their next restart).
	remote := v1alpha1.ManagedRemoteStore{Repository: v1alpha1.S3Repository{Bucket: "vectors-remote", Client: "default"}}
	sc = create("remote-store-added")
	sc.Spec.Managed.RemoteStore = remote.DeepCopy()
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.remoteStore", "immutable"})
	sc = &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "remote-store-fixed", Namespace: "default"}, Spec: v1alpha1.SearchClusterSpec{Managed: validManaged()}}
	sc.Spec.Managed.RemoteStore = remote.DeepCopy()
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.RemoteStore.Repository.BasePath = "elsewhere"
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.remoteStore", "immutable"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.RemoteStore = nil
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.remoteStore", "immutable"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.Keystore = []v1alpha1.KeystoreSecret{{SecretName: "s3-credentials"}}
	if err := c.Update(ctx, sc); err != nil {
		t.Errorf("adding a keystore Secret refused: %v", err)
	}

	sc = create("mode-fixed")
	sc.Spec = v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "http://opensearch:9200"}}
	expectRefused(t, c.Update(ctx, sc), []string{"spec", "cannot switch between spec.managed and spec.external"})

	// Scale-down and pool removal are drained by the operator: allowed.
	sc = create("scale-down")
	sc.Spec.Managed.NodePools[1].Replicas = 1
	sc.Spec.Managed.NodePools[0].Replicas = 1
	if err := c.Update(ctx, sc); err != nil {
		t.Errorf("scaling down refused: %v", err)
	}
	sc = create("pool-removal")
	sc.Spec.Managed.NodePools = append(sc.Spec.Managed.NodePools, v1alpha1.NodePool{Name: "more", Roles: []v1alpha1.NodeRole{"data"}, Replicas: 1})
	if err := c.Update(ctx, sc); err != nil {
		t.Fatalf("adding a pool refused: %v", err)
	}
	sc.Spec.Managed.NodePools = sc.Spec.Managed.NodePools[:2]
	if err := c.Update(ctx, sc); err != nil {
		t.Errorf("removing a pool refused: %v", err)
	}
	// The last cluster-manager or data pool cannot go.
	sc = create("last-manager-pool")
	sc.Spec.Managed.NodePools = sc.Spec.Managed.NodePools[1:]
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.nodePools", "cluster_manager role"})

	// Versions: upgrades within a major and to the next; no downgrade, no skipped major.
	sc = create("versions")
	for _, v := range []string{"3.6.1", "3.10.0", "4.0.0"} {
		sc.Spec.Managed.Version = v
		if err := c.Update(ctx, sc); err != nil {
			t.Fatalf("upgrade to %s refused: %v", v, err)
		}
	}
	for _, tc := range []struct{ version, want string }{
		{"3.10.0", "cannot go below a version"},
		{"6.0.0", "cannot skip a major version"},
	} {
		sc.Spec.Managed.Version = tc.version
		expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.version", tc.want})
		sc.Spec.Managed.Version = "4.0.0"
	}
	sc = create("no-downgrade")
	for _, v := range []string{"3.5.9", "3.6.0-rc1"} {
		sc.Spec.Managed.Version = v
		want := "cannot go below a version"
		if v == "3.6.0-rc1" {
			want = "should match"
		}
		expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.version", want})
	}
	sc.Spec.Managed.Version = "3.5.10"
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.version", "cannot go below a version"})

	// An upgrade no node has run yet can be set back (its pre-flight refused, its first node
	// failed to start); once a node has run it, not.
	sc = create("set-back")
	sc.Status.NewestNodeVersion = "3.6.0"
	if err := c.Status().Update(ctx, sc); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"3.7.0", "3.6.0"} {
		sc.Spec.Managed.Version = v
		if err := c.Update(ctx, sc); err != nil {
			t.Fatalf("setting the version to %s with every node on 3.6.0 refused: %v", v, err)
		}
	}
	sc.Spec.Managed.Version = "3.5.0"
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.version", "cannot go below a version a node of the cluster has run"})
	sc.Spec.Managed.Version = "3.7.0"
	if err := c.Update(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.Status.NewestNodeVersion = "3.7.0"
	if err := c.Status().Update(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Managed.Version = "3.6.0"
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.version", "cannot go below a version a node of the cluster has run"})
	// The rule binds a change of the version only: nodes running a newer version than the
	// spec says (an image of the owner's) do not block the status, nor other spec changes.
	if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
		t.Fatal(err)
	}
	sc.Status.NewestNodeVersion = "3.8.0"
	if err := c.Status().Update(ctx, sc); err != nil {
		t.Fatalf("status with a node newer than the spec refused: %v", err)
	}
	sc.Status.NewestNodeVersion = "3.8.1"
	if err := c.Status().Update(ctx, sc); err != nil {
		t.Fatalf("a second status update with a node newer than the spec refused: %v", err)
	}
	sc.Spec.Managed.UpdateStrategy.MaxUnavailable = 2
	if err := c.Update(ctx, sc); err != nil {
		t.Fatalf("a spec change besides the version, nodes newer than the spec, refused: %v", err)
	}
	sc = create("no-role-removed")
	sc.Spec.Managed.NodePools[1].Roles = []v1alpha1.NodeRole{"ingest"}
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.nodePools[1].roles", "cannot be removed"})
	sc = create("role-added")
	sc.Spec.Managed.NodePools[0].Roles = append(sc.Spec.Managed.NodePools[0].Roles, "ingest")
	if err := c.Update(ctx, sc); err != nil {
		t.Errorf("adding a role refused: %v", err)
	}
	sc = create("no-storage-added")
	sc.Spec.Managed.NodePools[0].Storage = &v1alpha1.PoolStorage{Size: resource.MustParse("5Gi")}
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.nodePools[0].storage", "cannot be added to or removed"})
	sc = create("no-storage-removed")
	sc.Spec.Managed.NodePools[1].Storage = nil
	expectRefused(t, c.Update(ctx, sc), []string{"spec.managed.nodePools[1].storage", "cannot be added to or removed"})

	sc = create("rolls")
	sc.Spec.Managed.Version = "3.7.0"
	sc.Spec.Managed.NodePools[1].SIMD = "avx2"
	sc.Spec.Managed.NodePools[1].Replicas = 4
	sc.Spec.Managed.NodePools[1].AdditionalConfig = map[string]string{"knn.algo_param.index_thread_qty": "2", "indices.memory.index_buffer_size": "20%",
		"s3.client.default.endpoint": "s3.local:9000", "node.attr.zone": "a", "path.repo": "/snapshots", "thread_pool.search.size": "8",
		"cluster.routing.allocation.disk.watermark.low": "90%", "search.concurrent_segment_search.mode": "auto", "http.max_content_length": "200mb",
		"node.store.allow_mmap": "false"}
	if err := c.Update(ctx, sc); err != nil {
		t.Fatalf("allowed change refused: %v", err)
	}
	if sc.Spec.Managed.UpdateStrategy.MaxUnavailable != 1 || sc.Spec.Managed.NodePools[0].SIMD != "auto" {
		t.Errorf("defaults not applied: maxUnavailable %d, simd %q", sc.Spec.Managed.UpdateStrategy.MaxUnavailable, sc.Spec.Managed.NodePools[0].SIMD)
	}
}

// TestImmutableFieldsAreGuardedByTransitionRules creates a valid index, then tries each
// forbidden change; the allowed ones must pass.
func TestImmutableFieldsAreGuardedByTransitionRules(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	refused := []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
		want   []string
	}{
		{"shards", func(v *v1alpha1.VectorIndex) { v.Spec.Shards = 3 }, []string{"spec.shards", "spec.shards is immutable unless spec.rebuild.strategy is BlueGreen"}},
		{"index name", func(v *v1alpha1.VectorIndex) { v.Spec.IndexName = "renamed" }, []string{"spec.indexName", "immutable"}},
		{"dimension", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Dimension = 128 }, []string{"spec.fields[0].dimension", "immutable"}},
		{"data type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].DataType = "byte" }, []string{"spec.fields[0].dataType", "immutable"}},
		{"space type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].SpaceType = "l2" }, []string{"spec.fields", "spec.fields[*].spaceType is immutable unless spec.rebuild.strategy is BlueGreen"}},
		{"engine", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Engine = "lucene" }, []string{"spec.fields", "spec.fields[*].engine is immutable unless spec.rebuild.strategy is BlueGreen"}},
		{"method", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Method = v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](4)}}
		}, []string{"spec.fields[0].method.name", "immutable"}},
		{"m", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](32) }, []string{"spec.fields", "spec.fields[*].method.parameters.m is immutable unless"}},
		{"m removed", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.M = nil }, []string{"spec.fields", "spec.fields[*].method.parameters.m is immutable unless"}},
		{"efConstruction", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.EfConstruction = ptr.To[int32](200) }, []string{"spec.fields", "spec.fields[*].method.parameters.efConstruction is immutable unless"}},
		{"efSearch of a faiss field", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.EfSearch = ptr.To[int32](256) },
			[]string{"spec.fields", "efSearch of a faiss field is immutable"}},
		{"mode", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Mode = "on_disk" }, []string{"spec.fields", "spec.fields[*].mode is immutable unless"}},
		{"compression", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].CompressionLevel = "2x" }, []string{"spec.fields", "spec.fields[*].compressionLevel is immutable unless"}},
		{"field removed", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields = []v1alpha1.VectorField{field("other", 8, "float", "l2", "faiss", "hnsw")}
		}, []string{"spec.fields", "vector fields cannot be removed"}},
		{"additional settings", func(v *v1alpha1.VectorIndex) { v.Spec.AdditionalSettings = map[string]string{"index.codec": "zstd"} }, []string{"spec.additionalSettings", "immutable"}},
		{"cluster", func(v *v1alpha1.VectorIndex) { v.Spec.ClusterRef.Name = "other" }, []string{"spec.clusterRef", "immutable"}},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			vi := validIndex()
			vi.Spec.AdditionalSettings = map[string]string{"index.codec": "best_compression"}
			if err := c.Create(ctx, vi); err != nil {
				t.Fatal(err)
			}
			tc.mutate(vi)
			expectRefused(t, c.Update(ctx, vi), tc.want)
		})
	}
	allowed := []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
	}{
		{"replicas", func(v *v1alpha1.VectorIndex) { v.Spec.Replicas = 2 }},
		{"efSearch of a lucene field", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[1].Method.Parameters.EfSearch = ptr.To[int32](256) }},
		{"slices", func(v *v1alpha1.VectorIndex) {
			v.Spec.Search.ConcurrentSegmentSearch = v1alpha1.ConcurrentSegmentSearch{Mode: "all", MaxSliceCount: 4}
		}},
		{"refresh", func(v *v1alpha1.VectorIndex) { v.Spec.RefreshInterval = "30s" }},
		{"field added", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields = append(v.Spec.Fields, field("title_vec", 32, "float", "l2", "lucene", "hnsw"))
		}},
		{"deletion policy", func(v *v1alpha1.VectorIndex) { v.Spec.DeletionPolicy = "Delete" }},
		{"recall set", func(v *v1alpha1.VectorIndex) {
			v.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.95", Field: "embedding", Interval: &metav1.Duration{Duration: time.Minute}}
		}},
	}
	for _, tc := range allowed {
		t.Run("allowed/"+tc.name, func(t *testing.T) {
			vi := validIndex()
			// A lucene field beside the faiss one, both without efSearch, so they agree.
			vi.Spec.Fields[0].Method.Parameters.EfSearch = nil
			lucene := field("title_lucene", 16, "float", "l2", "lucene", "hnsw")
			lucene.Method.Parameters = &v1alpha1.MethodParameters{}
			vi.Spec.Fields = append(vi.Spec.Fields, lucene)
			if err := c.Create(ctx, vi); err != nil {
				t.Fatal(err)
			}
			tc.mutate(vi)
			if err := c.Update(ctx, vi); err != nil {
				t.Fatalf("allowed change refused: %v", err)
			}
		})
	}
}

func expectRefused(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want refusal mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not mention %q", err.Error(), w)
		}
	}
}

func TestInvalidSnapshotSpecsAreRefused(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	policy := func(mutate func(*v1alpha1.SnapshotPolicySpec)) *v1alpha1.SnapshotPolicy {
		nameSeq++
		p := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sp-%d", nameSeq), Namespace: "default"},
			Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "0 2 * * *",
				Repository: v1alpha1.SnapshotRepository{Name: "backups", S3: &v1alpha1.S3Repository{Bucket: "vectors", Client: "default"}}}}
		mutate(&p.Spec)
		return p
	}
	zero := int32(0)
	cases := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"cron in words", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Schedule = "every night" }), []string{"spec.schedule"}},
		{"cron with three fields", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Schedule = "0 2 *" }), []string{"spec.schedule"}},
		{"both s3 and fs", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Repository.FS = &v1alpha1.FSRepository{Location: "/snapshots"} }), []string{"spec.repository", "exactly one of repository.s3 and repository.fs"}},
		{"no repository kind", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Repository.S3 = nil }), []string{"spec.repository", "exactly one"}},
		{"bucket with capitals", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Repository.S3.Bucket = "Vectors" }), []string{"spec.repository.s3.bucket"}},
		{"keep zero", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Retention.MaxCount = &zero }), []string{"spec.retention.maxCount"}},
		{"age in words", policy(func(s *v1alpha1.SnapshotPolicySpec) { s.Retention.MaxAge = "2 days" }), []string{"spec.retention.maxAge"}},
		{"restore from two sources", func() client.Object {
			vi := validIndex()
			vi.Spec.RestoreFrom = &v1alpha1.RestoreSource{SnapshotRef: &v1alpha1.LocalObjectReference{Name: "s"}, Repository: "r", Snapshot: "x"}
			return vi
		}(), []string{"spec.restoreFrom", "either snapshotRef or repository with snapshot"}},
		{"snapshot of nothing", &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"},
			Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "r"}}, []string{"spec.indices"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, c.Create(ctx, tc.obj), tc.want) })
	}
	vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default"},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "r", Indices: []string{"a"}}}
	if err := c.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	if vs.Spec.DeletionPolicy != v1alpha1.SnapshotDeletionRetain {
		t.Errorf("a VectorSnapshot must keep its backup by default, deletionPolicy is %q", vs.Spec.DeletionPolicy)
	}
	vs.Spec.Indices = []string{"a", "b"}
	expectRefused(t, c.Update(ctx, vs), []string{"spec", "immutable"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
		t.Fatal(err)
	}
	vs.Spec.Repository = "elsewhere"
	expectRefused(t, c.Update(ctx, vs), []string{"spec", "immutable"})
	if err := c.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
		t.Fatal(err)
	}
	vs.Spec.DeletionPolicy = "Forget"
	expectRefused(t, c.Update(ctx, vs), []string{"spec.deletionPolicy", "Unsupported value"})
	vs.Spec.DeletionPolicy = v1alpha1.SnapshotDeletionDelete
	if err := c.Update(ctx, vs); err != nil {
		t.Errorf("asking to delete the backup with the object refused: %v", err)
	}
}

func TestInvalidBenchmarkRunsAreRefused(t *testing.T) {
	c := newClient(t)
	valid := func() *v1alpha1.BenchmarkRun {
		return &v1alpha1.BenchmarkRun{Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: "products"},
			Workload: v1alpha1.BenchmarkWorkload{Dataset: v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: 1000}}},
		}}
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha1.BenchmarkRun)
		want   []string
	}{
		{"no dataset", func(r *v1alpha1.BenchmarkRun) { r.Spec.Workload.Dataset = v1alpha1.BenchmarkDataset{} }, []string{"spec.workload.dataset", "exactly one of generated and hdf5"}},
		{"both datasets", func(r *v1alpha1.BenchmarkRun) {
			r.Spec.Workload.Dataset.HDF5 = &v1alpha1.HDF5Dataset{Path: "/data/sift.hdf5"}
		}, []string{"spec.workload.dataset", "exactly one of generated and hdf5"}},
		{"argo without template", func(r *v1alpha1.BenchmarkRun) { r.Spec.Runner.Type = "Argo" }, []string{"spec.runner.workflowTemplateRef", "required when spec.runner.type is Argo"}},
		{"local with an image", func(r *v1alpha1.BenchmarkRun) { r.Spec.Runner.Image = "x" }, []string{"spec.runner", "Argo runner only"}},
		{"unknown runner", func(r *v1alpha1.BenchmarkRun) { r.Spec.Runner.Type = "Jenkins" }, []string{"spec.runner.type", "Unsupported value"}},
		{"zero clients", func(r *v1alpha1.BenchmarkRun) { r.Spec.Clients = []int32{0} }, []string{"spec.clients[0]"}},
		{"tiny dataset", func(r *v1alpha1.BenchmarkRun) { r.Spec.Workload.Dataset.Generated.Count = 10 }, []string{"spec.workload.dataset.generated.count"}},
		{"unknown load", func(r *v1alpha1.BenchmarkRun) { r.Spec.Workload.Load = "Always" }, []string{"spec.workload.load", "Unsupported value"}},
		{"local dataset too large for the operator", func(r *v1alpha1.BenchmarkRun) { r.Spec.Workload.Dataset.Generated.Count = 200001 },
			[]string{"spec.workload.dataset.generated", "at most 200000 vectors"}},
		{"local runner named, dataset too large", func(r *v1alpha1.BenchmarkRun) {
			r.Spec.Runner.Type = "Local"
			r.Spec.Workload.Dataset.Generated.Count = 1000000
		}, []string{"spec.workload.dataset.generated", "use the Argo runner"}},
		{"local queries too many", func(r *v1alpha1.BenchmarkRun) { r.Spec.Workload.Dataset.Generated.Queries = 2001 },
			[]string{"spec.workload.dataset.generated", "2000 queries"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			r.Name, r.Namespace = fmt.Sprintf("bad-run-%d", i), "default"
			tc.mutate(r)
			expectRefused(t, c.Create(context.Background(), r), tc.want)
		})
	}
	big := valid()
	big.Name, big.Namespace = "argo-large", "default"
	big.Spec.Runner = v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"}}
	big.Spec.Workload.Dataset.Generated.Count = 1000000
	big.Spec.Workload.Load = "IntoNonEmpty"
	if err := c.Create(context.Background(), big); err != nil {
		t.Errorf("an Argo run of a million vectors into a non-empty index refused: %v", err)
	}
	r := valid()
	r.Name, r.Namespace = "fixed-run", "default"
	if err := c.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(r.Spec.SliceCounts) != 4 || len(r.Spec.Clients) != 3 || r.Spec.Workload.Load != "IfIncomplete" {
		t.Errorf("defaults not applied: %+v", r.Spec)
	}
	r.Spec.Clients = []int32{8}
	expectRefused(t, c.Update(context.Background(), r), []string{"spec", "immutable"})
}

// TestRemoteSnapshotIndexAdmission: a searchable snapshot is read-only and is its snapshot:
// what would need a write to the index, or would turn it into another kind of index, is
// refused with a message naming the field; what OpenSearch lets it change is allowed.
func TestRemoteSnapshotIndexAdmission(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	remote := func() *v1alpha1.VectorIndex {
		vi := validIndex()
		vi.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Storage: v1alpha1.StorageRemoteSnapshot}
		return vi
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
		want   []string
	}{
		{"autotuned", func(v *v1alpha1.VectorIndex) { v.Spec.Tuning = &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto} }, []string{"spec.tuning", "RemoteSnapshot"}},
		{"final snapshot", func(v *v1alpha1.VectorIndex) {
			v.Spec.DeletionPolicy, v.Spec.SnapshotRepository = v1alpha1.DeletionPolicySnapshot, "backups"
		}, []string{"spec.deletionPolicy", "already is a snapshot"}},
		{"unknown storage", func(v *v1alpha1.VectorIndex) { v.Spec.RestoreFrom.Storage = "Frozen" }, []string{"spec.restoreFrom.storage"}},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			vi := remote()
			tc.mutate(vi)
			expectRefused(t, c.Create(ctx, vi), tc.want)
		})
	}
	for _, tc := range []struct {
		name   string
		start  func() *v1alpha1.VectorIndex
		mutate func(*v1alpha1.VectorIndex)
		want   []string
	}{
		{"field added", remote, func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields = append(v.Spec.Fields, field("title_vec", 32, "float", "l2", "lucene", "hnsw"))
		}, []string{"spec.fields", "read-only"}},
		{"extra mapping added", remote, func(v *v1alpha1.VectorIndex) {
			v.Spec.ExtraMappings = map[string]v1alpha1.MappingProperty{"title": {JSON: apiextensionsv1.JSON{Raw: []byte(`{"type":"text"}`)}}}
		}, []string{"spec.fields", "extraMappings", "read-only"}},
		{"another snapshot", remote, func(v *v1alpha1.VectorIndex) { v.Spec.RestoreFrom.Snapshot = "weekly" }, []string{"spec.restoreFrom", "is that snapshot"}},
		{"made local", remote, func(v *v1alpha1.VectorIndex) { v.Spec.RestoreFrom.Storage = v1alpha1.StorageLocal }, []string{"spec.restoreFrom", "storage is immutable"}},
		{"restoreFrom removed", remote, func(v *v1alpha1.VectorIndex) { v.Spec.RestoreFrom = nil }, []string{"spec.restoreFrom", "immutable"}},
		{"a local index made remote", validIndex, func(v *v1alpha1.VectorIndex) {
			v.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Storage: v1alpha1.StorageRemoteSnapshot}
		}, []string{"spec.restoreFrom", "storage is immutable"}},
	} {
		t.Run("update/"+tc.name, func(t *testing.T) {
			vi := tc.start()
			if err := c.Create(ctx, vi); err != nil {
				t.Fatal(err)
			}
			tc.mutate(vi)
			expectRefused(t, c.Update(ctx, vi), tc.want)
		})
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
	}{
		{"replicas", func(v *v1alpha1.VectorIndex) { v.Spec.Replicas = 2 }},
		{"refresh (reported as kept from the snapshot)", func(v *v1alpha1.VectorIndex) { v.Spec.RefreshInterval = "30s" }},
		{"deletion policy", func(v *v1alpha1.VectorIndex) { v.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete }},
	} {
		t.Run("allowed/"+tc.name, func(t *testing.T) {
			vi := remote()
			if err := c.Create(ctx, vi); err != nil {
				t.Fatal(err)
			}
			tc.mutate(vi)
			if err := c.Update(ctx, vi); err != nil {
				t.Fatalf("allowed change refused: %v", err)
			}
		})
	}
	local := validIndex()
	local.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly"}
	if err := c.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	if local.Spec.RestoreFrom.Storage != v1alpha1.StorageLocal {
		t.Errorf("restoreFrom.storage defaults to %q, want %s", local.Spec.RestoreFrom.Storage, v1alpha1.StorageLocal)
	}
}

// TestTrainingIsImmutable: the model an ivf field's index was created from cannot change
// or go away.
func TestTrainingIsImmutable(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	vi := validIndex()
	vi.Spec.Fields[0] = field("embedding", 64, "float", "l2", "faiss", "ivf")
	vi.Spec.Fields[0].Training = &v1alpha1.FieldTraining{ModelID: "products", Index: "sample"}
	if err := c.Create(ctx, vi); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.FieldTraining) *v1alpha1.FieldTraining
	}{
		{"model renamed", func(tr *v1alpha1.FieldTraining) *v1alpha1.FieldTraining { tr.ModelID = "other"; return tr }},
		{"other sample", func(tr *v1alpha1.FieldTraining) *v1alpha1.FieldTraining { tr.Index = "sample-2"; return tr }},
		{"removed", func(*v1alpha1.FieldTraining) *v1alpha1.FieldTraining { return nil }},
	} {
		changed := vi.DeepCopy()
		changed.Spec.Fields[0].Training = tc.mutate(changed.Spec.Fields[0].Training.DeepCopy())
		err := c.Update(ctx, changed)
		if err == nil || !strings.Contains(err.Error(), "spec.fields[0].training") || !strings.Contains(err.Error(), "training is immutable") {
			t.Errorf("%s: %v, want refused as immutable", tc.name, err)
		}
	}
}

// TestBlueGreenLetsBuildParametersChange: under spec.rebuild.strategy BlueGreen the build
// parameters a rebuild can carry out change; what a rebuild cannot (new embeddings, the
// alias's name, the model) stays refused, naming the field; a bad rebuild spec is refused.
func TestBlueGreenLetsBuildParametersChange(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	blueGreen := func() *v1alpha1.VectorIndex {
		vi := validIndex()
		vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen}
		if err := c.Create(ctx, vi); err != nil {
			t.Fatal(err)
		}
		return vi
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
	}{
		{"shards", func(v *v1alpha1.VectorIndex) { v.Spec.Shards = 3 }},
		{"m", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](32) }},
		{"efConstruction", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.EfConstruction = ptr.To[int32](200) }},
		{"efSearch of a faiss field", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Method.Parameters.EfSearch = ptr.To[int32](256) }},
		{"engine", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Engine = "lucene" }},
		{"space type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].SpaceType = "l2" }},
		{"on_disk 8x", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Mode, v.Spec.Fields[0].CompressionLevel = "on_disk", "8x"
		}},
	} {
		t.Run("allowed/"+tc.name, func(t *testing.T) {
			vi := blueGreen()
			tc.mutate(vi)
			if err := c.Update(ctx, vi); err != nil {
				t.Fatalf("refused under BlueGreen: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.VectorIndex)
		want   []string
	}{
		{"dimension", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].Dimension = 128 }, []string{"spec.fields[0].dimension", "dimension is immutable"}},
		{"data type", func(v *v1alpha1.VectorIndex) { v.Spec.Fields[0].DataType = "byte" }, []string{"spec.fields[0].dataType", "immutable"}},
		{"index name", func(v *v1alpha1.VectorIndex) { v.Spec.IndexName = "renamed" }, []string{"spec.indexName", "immutable"}},
		{"method", func(v *v1alpha1.VectorIndex) {
			v.Spec.Fields[0].Method = v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](4)}}
		}, []string{"spec.fields[0].method.name", "immutable"}},
		{"strategy back to Refuse with a change", func(v *v1alpha1.VectorIndex) {
			v.Spec.Rebuild.Strategy = v1alpha1.RebuildRefuse
			v.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](32)
		}, []string{"spec.fields", "method.parameters.m is immutable unless"}},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			vi := blueGreen()
			tc.mutate(vi)
			expectRefused(t, c.Update(ctx, vi), tc.want)
		})
	}
	for _, tc := range []struct {
		name string
		spec v1alpha1.RebuildSpec
		want []string
	}{
		{"strategy", v1alpha1.RebuildSpec{Strategy: "Rolling"}, []string{"spec.rebuild.strategy", "Unsupported value"}},
		{"min recall", v1alpha1.RebuildSpec{Gate: v1alpha1.RebuildGate{MinRecall: "1.5"}}, []string{"spec.rebuild.gate.minRecall"}},
		{"sample", v1alpha1.RebuildSpec{Gate: v1alpha1.RebuildGate{SampleSize: 5}}, []string{"spec.rebuild.gate.sampleSize"}},
		{"retain", v1alpha1.RebuildSpec{RetainPrevious: &metav1.Duration{Duration: -time.Hour}}, []string{"spec.rebuild.retainPrevious", "must not be negative"}},
		{"gate failure", v1alpha1.RebuildSpec{OnGateFailure: "Swap"}, []string{"spec.rebuild.onGateFailure", "Unsupported value"}},
	} {
		t.Run("bad spec/"+tc.name, func(t *testing.T) {
			vi := validIndex()
			vi.Spec.Rebuild = &tc.spec
			expectRefused(t, c.Create(ctx, vi), tc.want)
		})
	}
}

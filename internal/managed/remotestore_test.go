package managed

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// remoteBacked is sample() with a remote store (cluster state included) and a keystore.
func remoteBacked() *v1alpha1.SearchCluster {
	sc := sample()
	sc.Spec.Managed.RemoteStore = &v1alpha1.ManagedRemoteStore{
		Repository:   v1alpha1.S3Repository{Bucket: "vectors-remote", BasePath: "vec/data", Client: "default"},
		ClusterState: &v1alpha1.S3Repository{Bucket: "vectors-remote", BasePath: "vec/state", Client: "default"},
	}
	sc.Spec.Managed.Keystore = []v1alpha1.KeystoreSecret{{SecretName: "s3-credentials"}, {SecretName: "more"}}
	return sc
}

// TestRemoteStoreConfig: the remote store as the node attributes OpenSearch reads at start
// (the names and layout measured on the local node), on every pool; none without it.
func TestRemoteStoreConfig(t *testing.T) {
	want := map[string]any{
		"cluster.remote_store.state.enabled":                                true,
		"node.attr.remote_store.segment.repository":                         "remote-data",
		"node.attr.remote_store.translog.repository":                        "remote-data",
		"node.attr.remote_store.state.repository":                           "remote-state",
		"node.attr.remote_store.repository.remote-data.type":                "s3",
		"node.attr.remote_store.repository.remote-data.settings.bucket":     "vectors-remote",
		"node.attr.remote_store.repository.remote-data.settings.base_path":  "vec/data",
		"node.attr.remote_store.repository.remote-data.settings.client":     "default",
		"node.attr.remote_store.repository.remote-state.type":               "s3",
		"node.attr.remote_store.repository.remote-state.settings.bucket":    "vectors-remote",
		"node.attr.remote_store.repository.remote-state.settings.base_path": "vec/state",
		"node.attr.remote_store.repository.remote-state.settings.client":    "default",
	}
	for _, tc := range []struct {
		sc       *v1alpha1.SearchCluster
		attached bool
	}{{remoteBacked(), true}, {sample(), false}} {
		for _, p := range tc.sc.Spec.Managed.NodePools {
			cfg, err := Config(tc.sc, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if tc.attached && got[k] != v {
					t.Errorf("pool %s: %s = %v, want %v", p.Name, k, got[k], v)
				}
				if !tc.attached && got[k] != nil {
					t.Errorf("pool %s of a cluster without remote store: %s = %v", p.Name, k, got[k])
				}
			}
		}
	}
}

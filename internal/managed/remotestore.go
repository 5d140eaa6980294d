package managed

import (
	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// The remote store repositories as every node of a remote-backed cluster declares them.
const (
	remoteDataRepository  = "remote-data"
	remoteStateRepository = "remote-state"
)

// RemoteStoreSettings are the opensearch.yml settings that make a node remote-backed: the
// repositories as node attributes, segments and translog in one, the cluster state in the
// other when asked. Nil when the cluster is not remote-backed.
func RemoteStoreSettings(rs *v1alpha1.ManagedRemoteStore) map[string]any {
	if rs == nil {
		return nil
	}
	s := map[string]any{
		"node.attr.remote_store.segment.repository":  remoteDataRepository,
		"node.attr.remote_store.translog.repository": remoteDataRepository,
	}
	declare := func(name string, repo v1alpha1.S3Repository) {
		prefix := "node.attr.remote_store.repository." + name
		s[prefix+".type"] = "s3"
		s[prefix+".settings.bucket"] = repo.Bucket
		s[prefix+".settings.client"] = repo.Client
		if repo.BasePath != "" {
			s[prefix+".settings.base_path"] = repo.BasePath
		}
	}
	declare(remoteDataRepository, rs.Repository)
	if rs.ClusterState != nil {
		s["cluster.remote_store.state.enabled"] = true
		s["node.attr.remote_store.state.repository"] = remoteStateRepository
		declare(remoteStateRepository, *rs.ClusterState)
	}
	return s
}

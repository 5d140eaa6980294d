package managed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// RenderedFromAnnotation is, on a pool's StatefulSet, a hash of what its pod template and
// ConfigMap were rendered from: the cluster's spec, the pool, and the live inputs that
// change pods (the certificates' revision, the sysctl image). See KeepRendered.
const RenderedFromAnnotation = "vectorpilot.io/rendered-from"

// RenderedFrom is the RenderedFromAnnotation of pool p's objects. The spec is hashed as
// canonical JSON (object keys sorted), so that neither a new operator's field order nor an
// optional field it added and the object lacks changes it.
func RenderedFrom(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool, live Live) (string, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&sc.Spec)
	if err != nil {
		return "", err
	}
	rev := live.Security[p.Name]
	raw, err := json.Marshal(map[string]any{"spec": spec, "pool": p.Name, "trust": rev.Trust, "issued": rev.Issued, "sysctlImage": live.SysctlImage})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), nil
}

// KeepRendered says whether a pool keeps the pod template and configuration it runs rather
// than take those this operator renders: a new operator must not change what an existing
// cluster runs (restarting every pod) when nothing the cluster's owner controls changed.
// So a StatefulSet rendered from the same inputs (renderedFrom) keeps its template, whoever
// rendered it; one from an operator before the annotation keeps it while the cluster's
// status has observed its current spec (specObserved: that operator applied it). A change
// of the spec, the certificates or the sysctl image renders the pool anew, the new
// operator's way. live is nil when the StatefulSet does not exist.
func KeepRendered(live *appsv1.StatefulSet, renderedFrom string, specObserved bool) bool {
	if live == nil {
		return false
	}
	have, ok := live.Annotations[RenderedFromAnnotation]
	if !ok {
		return specObserved
	}
	return have == renderedFrom
}

// KeptConfig is a kept ConfigMap's data with the bootstrap setting as it must be now:
// initialManagers while the cluster has not formed, none after — a node that restarts
// empty must not bootstrap a cluster of its own. It needs no restart (ConfigHash leaves it
// out).
func KeptConfig(data map[string]string, initialManagers []string) (map[string]string, error) {
	settings := map[string]any{}
	if err := yaml.Unmarshal([]byte(data[configFile]), &settings); err != nil {
		return nil, fmt.Errorf("reading the kept %s: %w", configFile, err)
	}
	delete(settings, bootstrapSetting)
	if len(initialManagers) > 0 {
		settings[bootstrapSetting] = initialManagers
	}
	out, err := yaml.Marshal(settings)
	if err != nil {
		return nil, err
	}
	kept := maps.Clone(data)
	kept[configFile] = string(out)
	return kept, nil
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/crds"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// legacyCommit is the vectorpilot the operator upgrade starts from: the last commit before
// managed clusters were secured by default (2933c4e). Its managed clusters ran plain HTTP
// without the security plugin and had no spec.managed.security; its CRDs lack every field
// added since, safety state in status among them (newestNodeVersion, allocationRestricted,
// drainingNodes, restoreSettings).
const legacyCommit = "b6ed3df579f8477c2d553c728650c85aa1c51a4e"

const (
	legacyNamespace         = "legacy"
	legacyOperatorNamespace = "vectorpilot-legacy"
	legacyRelease           = "vectorpilot"
	legacyImageTag          = "legacy"
)

// legacyObjects is what a user of that release applied, in the fields it knew: a managed
// cluster of one node whose snapshots go to a folder on its volume, the same cluster again
// as an external one, an index, and a snapshot policy taking a snapshot every ten seconds
// (a cron schedule's minute boundary left the test idle for up to a minute twice).
const legacyObjects = `
apiVersion: vectorpilot.io/v1alpha1
kind: SearchCluster
metadata: {name: old}
spec:
  managed:
    version: %[1]s
    image: %[2]s
    nodePools:
    - name: nodes
      roles: [cluster_manager, data, ingest]
      replicas: 1
      resources:
        requests: {cpu: 100m, memory: 1Gi}
        limits: {memory: 1Gi}
      storage: {size: 1Gi}
      additionalConfig:
        path.repo: /usr/share/opensearch/data/snapshots
        cluster.routing.allocation.disk.watermark.low: 2gb
        cluster.routing.allocation.disk.watermark.high: 1gb
        cluster.routing.allocation.disk.watermark.flood_stage: 500mb
---
apiVersion: vectorpilot.io/v1alpha1
kind: SearchCluster
metadata: {name: outside}
spec:
  external: {endpoint: "http://old.%[3]s.svc:9200"}
---
apiVersion: vectorpilot.io/v1alpha1
kind: VectorIndex
metadata: {name: docs}
spec:
  clusterRef: {name: old}
  indexName: docs-v1
  shards: 1
  replicas: 0
  fields:
  - name: embedding
    dimension: 16
    dataType: float
    spaceType: l2
    engine: lucene
    method: {name: hnsw, parameters: {m: 16, efConstruction: 128}}
---
apiVersion: vectorpilot.io/v1alpha1
kind: SnapshotPolicy
metadata: {name: every-10s}
spec:
  clusterRef: {name: old}
  repository:
    name: local
    fs: {location: /usr/share/opensearch/data/snapshots/docs}
  schedule: "@every 10s"
  retention: {maxCount: 3}
`

// TestOperatorUpgradeKeepsOldClusters: vectorpilot as of legacyCommit, its image built from
// git history and installed with its own chart by Helm, runs a managed cluster, an external
// cluster, an index and a snapshot policy; then Helm upgrades the release to this chart
// and image. The chart's pre-upgrade hook Job brings the CRDs up to date on the real node,
// the new operator takes over, and nothing the objects meant changes: no pod restarted, the
// pod template, configuration, Services and NetworkPolicy as they were, no Secret added
// (the cluster keeps plain HTTP: spec.managed.security.enabled is recorded false), the
// endpoint unchanged, documents all there, snapshots going on. The owner can still opt out
// of the NetworkPolicy (the pods then roll onto the new operator's rendering and rejoin
// their data) and cannot switch security on (admission says why). The sandbox's operator
// is scaled to zero meanwhile: two operators must not act on one object; the legacy
// release watches only its namespace.
func TestOperatorUpgradeKeepsOldClusters(t *testing.T) {
	integration(t)
	ctx := context.Background()
	src := legacyTree(t)
	importLegacyOperator(t, src)
	stopSandboxOperator(t)
	installLegacyCRDs(t, filepath.Join(src, "charts", "vectorpilot", "crds"))
	for _, ns := range []string{legacyNamespace, legacyOperatorNamespace} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	helm, err := box.Helm(legacyOperatorNamespace, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	// The user's values file, as it would be kept in Git: the same for both releases but
	// for the image tag.
	values := func(tag string) map[string]any {
		return map[string]any{
			"image":          map[string]any{"repository": strings.Split(images.OperatorRef, ":")[0], "tag": tag, "pullPolicy": "Never"},
			"watchNamespace": legacyNamespace,
		}
	}
	oldChart, err := loader.Load(filepath.Join(src, "charts", "vectorpilot"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.Wait, install.Timeout = legacyRelease, legacyOperatorNamespace, true, 3*time.Minute
	if _, err := install.RunWithContext(ctx, oldChart, values(legacyImageTag)); err != nil {
		t.Fatalf("helm install of the %s chart: %v", legacyCommit[:7], err)
	}
	t.Cleanup(func() {
		uninstall := action.NewUninstall(helm)
		uninstall.Wait, uninstall.Timeout = true, 2*time.Minute
		if _, err := uninstall.Run(legacyRelease); err != nil {
			t.Logf("helm uninstall: %v", err)
		}
	})

	createLegacyObjects(t)
	old := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNamespace, Name: "old"}}
	outside := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNamespace, Name: "outside"}}
	index := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNamespace, Name: "docs"}}
	policy := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNamespace, Name: "every-10s"}}
	waitReady(t, old, func() []metav1.Condition { return old.Status.Conditions }, 6*time.Minute)
	waitReady(t, outside, func() []metav1.Condition { return outside.Status.Conditions }, 2*time.Minute)
	waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, 2*time.Minute)
	base := clientServiceURL(t, old)
	const documents = 200
	indexVectors(t, base, "docs-v1", documents, 16)
	waitFor(t, 3*time.Minute, "a snapshot by the legacy operator", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(policy), policy)
		return err == nil && policy.Status.LastSuccessfulTime != nil, fmt.Sprintf("status %+v (%v)", policy.Status, err)
	})
	before := legacyStateOf(t, base)
	t.Logf("under %s: %s", legacyCommit[:7], before)

	// helm upgrade, as the user runs it: the current chart, the new image tag, their values.
	newChart, err := loader.Load(filepath.Join(testsupport.Root(t), "charts", "vectorpilot"))
	if err != nil {
		t.Fatal(err)
	}
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace, upgrade.Wait, upgrade.Timeout = legacyOperatorNamespace, true, 5*time.Minute
	started := time.Now()
	if _, err := upgrade.RunWithContext(ctx, legacyRelease, newChart, values(strings.Split(images.OperatorRef, ":")[1])); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	upgraded := time.Now()
	t.Logf("helm upgrade (pre-upgrade hook Job, then the new operator's Deployment available) took %s", upgraded.Sub(started).Round(time.Second))
	wanted, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	if outdated, err := crds.Outdated(ctx, k8s, wanted); err != nil || len(outdated) > 0 {
		t.Errorf("after helm upgrade the CRDs lack %v (%v): the pre-upgrade hook did not apply them", outdated, err)
	}
	var jobs batchv1.JobList // the hook's Job ran; Helm deletes it once it succeeded
	if err := k8s.List(ctx, &jobs, client.InNamespace(legacyOperatorNamespace)); err != nil || len(jobs.Items) > 0 {
		t.Errorf("after helm upgrade %d Jobs are left in %s (%v)", len(jobs.Items), legacyOperatorNamespace, err)
	}

	// The new operator records what the cluster ran with, then keeps it.
	waitFor(t, 3*time.Minute, "the new operator to record the cluster's defaults and observe it", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
			return false, err.Error()
		}
		return old.Spec.Managed.Security.Enabled != nil && old.Status.ObservedGeneration == old.Generation && conditions.IsReady(old.Status.Conditions),
			fmt.Sprintf("security %v, networkPolicy %v, mmap %q, generation %d observed %d, conditions %v", old.Spec.Managed.Security.Enabled,
				old.Spec.Managed.NetworkPolicy.Enabled, old.Spec.Managed.MMap, old.Generation, old.Status.ObservedGeneration, old.Status.Conditions)
	})
	if !ptr.Equal(old.Spec.Managed.Security.Enabled, ptr.To(false)) || !ptr.Equal(old.Spec.Managed.NetworkPolicy.Enabled, ptr.To(true)) || old.Spec.Managed.MMap != v1alpha1.MMapDisabled {
		t.Errorf("recorded security.enabled %v, networkPolicy.enabled %v, mmap %q; the cluster ran with false, true (the old CRD's default), Disabled",
			ptr.Deref(old.Spec.Managed.Security.Enabled, true), old.Spec.Managed.NetworkPolicy.Enabled, old.Spec.Managed.MMap)
	}
	waitFor(t, 3*time.Minute, "a snapshot by the new operator", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(policy), policy)
		return err == nil && policy.Status.LastSuccessfulTime != nil && policy.Status.LastSuccessfulTime.After(upgraded),
			fmt.Sprintf("last success %v, conditions %v (%v)", policy.Status.LastSuccessfulTime, policy.Status.Conditions, err)
	})
	waitReady(t, outside, func() []metav1.Condition { return outside.Status.Conditions }, time.Minute)
	waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, time.Minute)
	after := legacyStateOf(t, base)
	t.Logf("%s after the upgrade: %s", time.Since(upgraded).Round(time.Second), after)
	for _, d := range before.diff(after) {
		t.Errorf("the operator upgrade changed %s", d)
	}

	// Opting out of the NetworkPolicy still works: the policy goes, and the pod rolls onto
	// the new operator's rendering (the spec changed) and rejoins its data.
	var pod corev1.Pod
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: legacyNamespace, Name: "old-nodes-0"}, &pod); err != nil {
		t.Fatal(err)
	}
	patch(t, old, `{"spec":{"managed":{"networkPolicy":{"enabled":false}}}}`)
	changed := time.Now()
	waitFor(t, 5*time.Minute, "the NetworkPolicy removed and the pod rolled onto the new rendering, Ready and green", func() (bool, string) {
		var policies networkingv1.NetworkPolicyList
		var set appsv1.StatefulSet
		var now corev1.Pod
		for _, err := range []error{
			k8s.List(ctx, &policies, client.InNamespace(legacyNamespace)),
			k8s.Get(ctx, client.ObjectKey{Namespace: legacyNamespace, Name: "old-nodes"}, &set),
			k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &now),
			k8s.Get(ctx, client.ObjectKeyFromObject(old), old),
		} {
			if err != nil {
				return false, err.Error()
			}
		}
		rendered := set.Annotations[managed.RenderedFromAnnotation] != ""
		rolled := now.UID != pod.UID && managed.PodReady(&now)
		return len(policies.Items) == 0 && rendered && rolled && old.Status.ObservedGeneration == old.Generation && conditions.IsReady(old.Status.Conditions) && old.Status.Health == "green",
			fmt.Sprintf("%d NetworkPolicies, StatefulSet rendered by this operator %t, pod rolled and ready %t, observed %d of %d, health %s, conditions %v",
				len(policies.Items), rendered, rolled, old.Status.ObservedGeneration, old.Generation, old.Status.Health, old.Status.Conditions)
	})
	t.Logf("networkPolicy.enabled=false: policy gone, the pod rolled onto the new rendering and the cluster green again after %s", time.Since(changed).Round(time.Second))
	if n := count(t, base, "docs-v1"); n != documents {
		t.Errorf("after the pod rolled onto the new rendering, docs-v1 holds %d documents, want %d", n, documents)
	}
	err = k8s.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"managed":{"security":{"enabled":true}}}}`)))
	if err == nil || !strings.Contains(err.Error(), "spec.managed.security.enabled cannot change") {
		t.Errorf("switching security on for a plain-HTTP cluster: %v, want admission's refusal naming spec.managed.security.enabled", err)
	}
}

// legacyTree is legacyCommit's source, from the repository's history.
func legacyTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", fmt.Sprintf("git archive --format=tar %s | tar -x -C %s", legacyCommit, dir))
	cmd.Dir = testsupport.Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s (a clone with history is needed): %v\n%s", legacyCommit, err, out)
	}
	return dir
}

// importLegacyOperator builds legacyCommit's operator image as its Dockerfile says (cached
// in bin/images by commit) and imports it into the node's containerd.
func importLegacyOperator(t *testing.T, src string) {
	t.Helper()
	root := testsupport.Root(t)
	archive, err := images.Archive(root, "legacy-operator", nil, []string{legacyCommit}, func(work string) (images.Image, error) {
		img, err := images.Operator(src, work)
		img.Ref = strings.Split(images.OperatorRef, ":")[0] + ":" + legacyImageTag
		return img, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.ImportImage(archive); err != nil {
		t.Fatal(err)
	}
}

// stopSandboxOperator scales the sandbox's operator to zero until the test ends.
func stopSandboxOperator(t *testing.T) {
	t.Helper()
	scale := func(replicas int32) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: sandbox.OperatorDeployment()}}
		return k8s.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)))
	}
	if err := scale(0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := scale(1); err != nil {
			t.Errorf("scaling the sandbox's operator back: %v", err)
			return
		}
		waitFor(t, 3*time.Minute, "the sandbox's operator back", func() (bool, string) {
			pod, err := findOperatorPod(context.Background())
			return err == nil && pod.Status.Phase == corev1.PodRunning, fmt.Sprint(err)
		})
	})
	waitFor(t, 2*time.Minute, "the sandbox's operator pod gone", func() (bool, string) {
		_, err := findOperatorPod(context.Background())
		return err != nil, "still running"
	})
}

// installLegacyCRDs puts the legacy chart's CRDs in place of the current ones, as a cluster
// that installed that release has them (Helm's install creates crds/ only when absent); the
// current ones are applied back when the test ends, whatever the upgrade did.
func installLegacyCRDs(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		wanted, err := crd.All()
		if err == nil {
			err = crds.Apply(context.Background(), k8s, wanted)
		}
		if err != nil {
			t.Errorf("applying the current CRDs back: %v", err)
		}
	})
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v)", dir, err)
	}
	for _, f := range files {
		var legacy apiextensionsv1.CustomResourceDefinition
		b, err := os.ReadFile(f)
		if err == nil {
			err = utilyaml.Unmarshal(b, &legacy)
		}
		if err != nil {
			t.Fatal(err)
		}
		var live apiextensionsv1.CustomResourceDefinition
		if err := k8s.Get(ctx, client.ObjectKey{Name: legacy.Name}, &live); err != nil {
			t.Fatal(err)
		}
		live.Spec = legacy.Spec
		if err := k8s.Update(ctx, &live); err != nil {
			t.Fatalf("CRD %s back to %s: %v", legacy.Name, legacyCommit[:7], err)
		}
	}
}

// createLegacyObjects creates legacyObjects in legacyNamespace, as unstructured objects:
// exactly the fields written, nothing the current Go types would add. They are deleted
// when the test ends, while an operator still runs to let them go.
func createLegacyObjects(t *testing.T) {
	t.Helper()
	text := fmt.Sprintf(legacyObjects, sandbox.OpenSearchVersion, box.OpenSearchImage, legacyNamespace)
	var objs []*unstructured.Unstructured
	for doc := range strings.SplitSeq(text, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(legacyNamespace)
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Fatalf("creating %s %s under the %s CRDs: %v", u.GetKind(), u.GetName(), legacyCommit[:7], err)
		}
		objs = append(objs, u)
	}
	t.Cleanup(func() { deleteLegacyObjects(t, objs) })
}

// deleteLegacyObjects deletes objs, the policy and indexes before the clusters, and waits
// until the operator has let them go.
func deleteLegacyObjects(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range slices.Backward(objs) {
		if err := k8s.Delete(context.Background(), u); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}
	waitFor(t, 3*time.Minute, "the legacy objects deleted", func() (bool, string) {
		var left []string
		for _, u := range objs {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u.DeepCopy()); !apierrors.IsNotFound(err) {
				left = append(left, u.GetKind()+"/"+u.GetName())
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}

func patch(t *testing.T, obj client.Object, merge string) {
	t.Helper()
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(merge))); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// legacyState is what an operator upgrade must leave as it was in legacyNamespace.
type legacyState map[string]string

// legacyStateOf reads the pods (UID and restarts), StatefulSets' pod templates,
// ConfigMaps, Services, NetworkPolicies and Secrets of legacyNamespace, the managed
// cluster's endpoint and the index's document count.
func legacyStateOf(t *testing.T, base string) legacyState {
	t.Helper()
	ctx := context.Background()
	in := client.InNamespace(legacyNamespace)
	s := legacyState{}
	var pods corev1.PodList
	var sets appsv1.StatefulSetList
	var configMaps corev1.ConfigMapList
	var services corev1.ServiceList
	var policies networkingv1.NetworkPolicyList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&pods, &sets, &configMaps, &services, &policies, &secrets} {
		if err := k8s.List(ctx, l, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods.Items {
		restarts := 0
		for _, c := range p.Status.ContainerStatuses {
			restarts += int(c.RestartCount)
		}
		s["Pod/"+p.Name] = fmt.Sprintf("uid %s, %d restarts", p.UID, restarts)
	}
	for _, x := range sets.Items {
		s["StatefulSet/"+x.Name] = mustJSON(t, x.Spec.Template)
	}
	for _, x := range configMaps.Items {
		// Once a cluster has formed, any operator drops the bootstrap setting from
		// opensearch.yml (read only when a node starts, so no restart): compared without it.
		data := x.Data
		if _, ok := data["opensearch.yml"]; ok {
			var err error
			if data, err = managed.KeptConfig(x.Data, nil); err != nil {
				t.Fatal(err)
			}
		}
		s["ConfigMap/"+x.Name] = mustJSON(t, data)
	}
	for _, x := range services.Items {
		s["Service/"+x.Name] = mustJSON(t, x.Spec.Ports) + " " + x.Spec.ClusterIP
	}
	for _, x := range policies.Items {
		s["NetworkPolicy/"+x.Name] = mustJSON(t, x.Spec)
	}
	for _, x := range secrets.Items {
		s["Secret/"+x.Name] = string(x.Type)
	}
	var old v1alpha1.SearchCluster
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: legacyNamespace, Name: "old"}, &old); err != nil {
		t.Fatal(err)
	}
	s["endpoint"] = old.Status.Endpoint
	s["documents"] = fmt.Sprint(count(t, base, "docs-v1"))
	return s
}

// diff names what differs from s in now.
func (s legacyState) diff(now legacyState) []string {
	var out []string
	for k, v := range s {
		if w, ok := now[k]; !ok {
			out = append(out, k+": gone (was "+v+")")
		} else if w != v {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, v, w))
		}
	}
	for k, w := range now {
		if _, ok := s[k]; !ok {
			out = append(out, k+": added ("+w+")")
		}
	}
	slices.Sort(out)
	return out
}

func (s legacyState) String() string {
	var kinds []string
	for k, v := range s {
		if strings.HasPrefix(k, "Pod/") || k == "endpoint" || k == "documents" {
			kinds = append(kinds, k+" "+v)
		} else {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, "; ")
}

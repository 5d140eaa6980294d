// Package install checks what users install: it renders the Helm chart with Helm's own engine and validates every rendered
// object: core and vectorpilot kinds by a server-side dry run on the real apiserver,
// Prometheus Operator kinds by strict decoding into their Go types.
package install

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/config/crd"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	vptest "github.com/vectorpilot/vectorpilot/test"
	"github.com/vectorpilot/vectorpilot/test/conform"
	"github.com/vectorpilot/vectorpilot/test/helmchart"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.Kube)) }

func chartDir(t *testing.T) string {
	return filepath.Join(testsupport.Root(t), "charts", "vectorpilot")
}

// render renders the chart as `helm install vp <chart> -n namespace` would.
func render(t *testing.T, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return helmchart.Render(chartDir(t), "vp", namespace, values)
}

func TestHelmLintIsClean(t *testing.T) {
	for _, values := range []map[string]any{nil, allSwitchesOn(), {"watchNamespace": "search"}} {
		linter := lint.AllWithKubeVersion(chartDir(t), values, "vectorpilot-system", helmchart.KubeVersion)
		for _, msg := range linter.Messages {
			if msg.Severity > support.InfoSev {
				t.Errorf("helm lint (values %v): %s", values, msg)
			}
		}
	}
}

func allSwitchesOn() map[string]any {
	return map[string]any{
		"metrics":    map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
		"dashboards": map[string]any{"enabled": true},
	}
}

// usersValues are the values users of operator charts expect to set.
func usersValues() map[string]any {
	return map[string]any{
		"fullnameOverride":  "search-operator",
		"podLabels":         map[string]any{"team": "search"},
		"priorityClassName": "system-cluster-critical",
		"extraEnv":          []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}},
		"extraVolumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "corporate-ca"}}},
		"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": true}},
		"serviceAccount":    map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/search"}},
	}
}

// TestUsersValuesReachTheOperator: each of usersValues lands where it means something.
func TestUsersValuesReachTheOperator(t *testing.T) {
	objs, err := render(t, "vp-user", usersValues())
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	var sa corev1.ServiceAccount
	for _, obj := range objs {
		raw, _ := json.Marshal(obj.Object)
		switch obj.GetKind() {
		case "Deployment":
			strict(t, raw, &dep)
		case "ServiceAccount":
			strict(t, raw, &sa)
		}
	}
	pod := dep.Spec.Template
	c := pod.Spec.Containers[0]
	for what, ok := range map[string]bool{
		"fullnameOverride names the Deployment and the ServiceAccount": dep.Name == "search-operator" && sa.Name == "search-operator" && pod.Spec.ServiceAccountName == "search-operator",
		"podLabels on the pod":                      pod.Labels["team"] == "search",
		"priorityClassName on the pod":              pod.Spec.PriorityClassName == "system-cluster-critical",
		"extraEnv after the chart's own":            len(c.Env) > 1 && c.Env[len(c.Env)-1].Name == "HTTPS_PROXY",
		"extraVolumes and mounts beside /tmp":       len(pod.Spec.Volumes) == 2 && pod.Spec.Volumes[1].ConfigMap != nil && len(c.VolumeMounts) == 2 && c.VolumeMounts[1].MountPath == "/etc/ssl/corporate",
		"serviceAccount.annotations on the account": sa.Annotations["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/search",
	} {
		if !ok {
			t.Errorf("%s: deployment %s %+v, service account %+v", what, dep.Name, pod, sa.ObjectMeta)
		}
	}
}

// TestEveryRenderingValidates renders the default values, every switch on, and the
// namespaced mode, and validates every object.
func TestEveryRenderingValidates(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		values map[string]any
		kinds  []string
	}{
		"default":      {nil, []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "CustomResourceDefinition"}},
		"all switches": {allSwitchesOn(), []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"}},
		"namespaced":   {map[string]any{"watchNamespace": "search"}, []string{"Role", "RoleBinding"}},
		"user values":  {usersValues(), []string{"Deployment", "ServiceAccount"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := "vp-" + strings.ReplaceAll(name, " ", "-")
			for _, n := range []string{ns, "search"} {
				if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			objs, err := render(t, ns, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, obj := range objs {
				seen[obj.GetKind()] = true
				validate(t, k8s, obj)
				raw, _ := json.Marshal(obj.Object)
				if name == "namespaced" && obj.GetKind() == "Role" && (strings.Contains(string(raw), `"nodes"`) || strings.Contains(string(raw), `"customresourcedefinitions"`)) {
					t.Error("namespaced Role grants cluster-scoped resources, which a Role cannot")
				}
				if name == "namespaced" && obj.GetKind() == "ClusterRole" {
					// The one cluster-wide grant of a namespaced install: reading the
					// operator's own CRDs by name, to refuse to run against older ones.
					var role rbacv1.ClusterRole
					strict(t, raw, &role)
					if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"customresourcedefinitions"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get"}) || len(role.Rules[0].ResourceNames) != 5 {
						t.Errorf("namespaced mode's ClusterRole %s grants more than get on the operator's five CRDs: %+v", role.Name, role.Rules)
					}
				}
			}
			for _, k := range tc.kinds {
				if !seen[k] {
					t.Errorf("rendering %q has no %s", name, k)
				}
			}
		})
	}
}

// validate checks one rendered object: kubeconform against the shipped strict schemas,
// then the kind's own checks and a server-side dry run.
func validate(t *testing.T, k8s client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	if err := conform.Validate(obj.Object); err != nil {
		t.Errorf("%s %s: kubeconform: %v", obj.GetKind(), obj.GetName(), err)
	}
	raw, _ := json.Marshal(obj.Object)
	switch obj.GetKind() {
	case "ServiceMonitor":
		var sm monitoringv1.ServiceMonitor
		strict(t, raw, &sm)
		vptest.CheckHonorsLabels(t, sm)
	case "PrometheusRule":
		var rule monitoringv1.PrometheusRule
		strict(t, raw, &rule)
		if len(rule.Spec.Groups) == 0 {
			t.Error("PrometheusRule has no groups")
		}
	case "CustomResourceDefinition":
		// Installed by envtest already; the dry run would only say it exists.
		return
	default:
		if obj.GetKind() == "Deployment" {
			checkDeploymentHardening(t, raw)
		}
		if obj.GetKind() == "ClusterRole" || obj.GetKind() == "Role" {
			checkNoWildcards(t, raw)
		}
		if obj.GetKind() == "ConfigMap" {
			checkDashboardConfigMap(t, obj)
		}
		if err := k8s.Create(context.Background(), obj, client.DryRunAll); err != nil {
			t.Errorf("%s %s refused by the apiserver: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

func strict(t *testing.T, raw []byte, into runtime.Object) {
	t.Helper()
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Errorf("%T does not decode strictly: %v", into, err)
	}
}

func checkDeploymentHardening(t *testing.T, raw []byte) {
	var d appsv1.Deployment
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v, want non-root with seccomp RuntimeDefault", pod.SecurityContext)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context = %+v", sc)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.Resources.Requests == nil {
		t.Error("manager container lacks probes or resource requests")
	}
}

func checkNoWildcards(t *testing.T, raw []byte) {
	var role rbacv1.ClusterRole
	if err := json.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			for _, v := range list {
				if v == "*" {
					t.Errorf("role %s has a wildcard rule %+v", role.Name, r)
				}
			}
		}
	}
}

func checkDashboardConfigMap(t *testing.T, obj *unstructured.Unstructured) {
	if obj.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap %s lacks the grafana_dashboard label", obj.GetName())
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	for name, body := range data {
		var d dashboard.Dashboard
		if err := json.Unmarshal([]byte(body), &d); err != nil || d.Uid == nil {
			t.Errorf("dashboard %s in ConfigMap %s is not a dashboard: %v", name, obj.GetName(), err)
		}
	}
}

// TestPrivilegedSysctlRunsTheInstallersImage: the operator is told the image of the one
// privileged step it makes (mmap InitContainer): its own by default, the installer's
// override, none when the installer turns it off.
func TestPrivilegedSysctlRunsTheInstallersImage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"default: the operator's image", map[string]any{"image": map[string]any{"repository": "registry.example/vectorpilot", "tag": "1.2.3"}},
			"--sysctl-image=registry.example/vectorpilot:1.2.3"},
		{"the installer's image", map[string]any{"managedClusters": map[string]any{"privilegedSysctl": map[string]any{"image": "registry.example/sysctl:1"}}},
			"--sysctl-image=registry.example/sysctl:1"},
		{"turned off", map[string]any{"managedClusters": map[string]any{"privilegedSysctl": map[string]any{"enabled": false}}}, ""},
	} {
		objs, err := render(t, "vp", tc.values)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			for _, a := range args {
				if strings.HasPrefix(a, "--sysctl-image") {
					got = append(got, a)
				}
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}

func TestValuesOutsideTheSchemaAreRefused(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"zero replicas":       {"replicaCount": 0},
		"unknown key":         {"replicas": 2},
		"bad pull policy":     {"image": map[string]any{"repository": "x", "pullPolicy": "Sometimes"}},
		"bad namespace":       {"watchNamespace": "Not_A_Namespace"},
		"port out of range":   {"metrics": map[string]any{"port": 70000}},
		"interval not a time": {"metrics": map[string]any{"serviceMonitor": map[string]any{"interval": "often"}}},
	} {
		if _, err := render(t, "vp", values); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: rendered (err %v), want a values schema error", name, err)
		}
	}
}

// TestChartCopiesAreCurrent: the chart's copies of CRDs, RBAC rules, alert rules and
// dashboards equal their sources (run make manifests).
func TestChartCopiesAreCurrent(t *testing.T) {
	root := testsupport.Root(t)
	pairs := map[string]string{
		"config/rbac/role.yaml":        "charts/vectorpilot/files/manager-role.yaml",
		"config/prometheus/rules.yaml": "charts/vectorpilot/files/prometheus-rules.yaml",
	}
	for _, glob := range []struct{ src, dst string }{{"config/crd/bases/*.yaml", "charts/vectorpilot/crds"}, {"dashboards/*.json", "charts/vectorpilot/files/dashboards"}} {
		files, _ := filepath.Glob(filepath.Join(root, glob.src))
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			pairs[rel] = filepath.Join(glob.dst, filepath.Base(f))
		}
	}
	for src, dst := range pairs {
		a, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, dst))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run make manifests", dst, src)
		}
	}
}

// TestUpgradeHookAppliesTheCRDs: Helm never upgrades crds/, so helm upgrade runs a
// pre-upgrade hook: a Job in the operator's image running `vectorpilot crds apply` under a
// service account that may get and patch the chart's CRDs by name and nothing else. Every
// hook object validates; crds.upgrade=false renders none.
func TestUpgradeHookAppliesTheCRDs(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "vp-upgrade"
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	hooks, err := helmchart.Hooks(chartDir(t), "vp", ns, nil, release.HookPreUpgrade)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, obj := range hooks {
		kinds = append(kinds, obj.GetKind())
		validate(t, k8s, obj)
		raw, _ := json.Marshal(obj.Object)
		switch obj.GetKind() {
		case "ClusterRole":
			var role rbacv1.ClusterRole
			strict(t, raw, &role)
			var names []string
			for _, c := range crdsOf(t) {
				names = append(names, c.Name)
			}
			if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"get", "patch"}) || !slices.Equal(role.Rules[0].ResourceNames, names) {
				t.Errorf("the hook's ClusterRole grants %+v, want get and patch on %v only", role.Rules, names)
			}
		case "Job":
			var job batchv1.Job
			strict(t, raw, &job)
			c := job.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Args, []string{"crds", "apply"}) || !strings.HasPrefix(c.Image, "ghcr.io/vectorpilot/vectorpilot:") {
				t.Errorf("the hook Job runs %s %v, want the operator's image with crds apply", c.Image, c.Args)
			}
		}
	}
	if want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"}; !slices.Equal(slices.Sorted(slices.Values(kinds)), slices.Sorted(slices.Values(want))) || kinds[len(kinds)-1] != "Job" {
		t.Errorf("pre-upgrade hooks %v, want %v with the Job last", kinds, want)
	}
	if hooks, err := helmchart.Hooks(chartDir(t), "vp", ns, map[string]any{"crds": map[string]any{"upgrade": false}}, release.HookPreUpgrade); err != nil || len(hooks) > 0 {
		t.Errorf("crds.upgrade=false still renders %d hooks (%v)", len(hooks), err)
	}
}

// crdsOf is the CRDs the chart ships in crds/.
func crdsOf(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// wellKnownShortNames are short names of widely installed CRDs a cluster may serve beside
// vectorpilot's: kubectl resolves a short name to one resource, so a clash makes ours
// unreachable by it.
var wellKnownShortNames = map[string]string{
	"vs": "Istio VirtualService, CSI VolumeSnapshot", "vsc": "CSI VolumeSnapshotContent", "vsclass": "CSI VolumeSnapshotClass",
	"gw": "Istio Gateway", "dr": "Istio DestinationRule", "se": "Istio ServiceEntry", "pa": "Istio PeerAuthentication", "ra": "Istio RequestAuthentication", "ap": "Istio AuthorizationPolicy",
	"cert": "cert-manager Certificate", "certs": "cert-manager Certificate", "cr": "cert-manager CertificateRequest", "crs": "cert-manager CertificateRequest",
	"es": "ECK Elasticsearch", "kb": "ECK Kibana", "ent": "ECK EnterpriseSearch", "beat": "ECK Beat", "agent": "ECK Agent", "ems": "ECK ElasticMapsServer", "lms": "ECK Logstash",
	"wf": "Argo Workflow", "cwf": "Argo ClusterWorkflowTemplate", "wftmpl": "Argo WorkflowTemplate", "cwft": "Argo ClusterWorkflowTemplate", "app": "Argo CD Application", "appproj": "Argo CD AppProject",
	"vm": "KubeVirt VirtualMachine", "vmi": "KubeVirt VirtualMachineInstance",
	"prom": "Prometheus Operator Prometheus", "smon": "Prometheus Operator ServiceMonitor", "pmon": "Prometheus Operator PodMonitor", "promrule": "Prometheus Operator PrometheusRule", "am": "Prometheus Operator Alertmanager",
}

// TestShortNamesAreOurs: no short name of a vectorpilot kind is one the API server already
// serves for another resource (StorageClass is `sc`) or one of a widely installed CRD.
func TestShortNamesAreOurs(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	disco, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := disco.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, l := range lists {
		if strings.HasSuffix(strings.Split(l.GroupVersion, "/")[0], "vectorpilot.io") {
			continue
		}
		for _, r := range l.APIResources {
			for _, s := range r.ShortNames {
				served[s] = l.GroupVersion + " " + r.Kind
			}
		}
	}
	if served["sc"] == "" {
		t.Fatalf("the API server serves no short name sc (StorageClass): discovery read nothing? %d groups", len(lists))
	}
	for _, c := range crdsOf(t) {
		for _, s := range c.Spec.Names.ShortNames {
			if other, ok := served[s]; ok {
				t.Errorf("%s's short name %q is the API server's for %s", c.Spec.Names.Kind, s, other)
			}
			if other, ok := wellKnownShortNames[s]; ok {
				t.Errorf("%s's short name %q is %s's", c.Spec.Names.Kind, s, other)
			}
		}
	}
}

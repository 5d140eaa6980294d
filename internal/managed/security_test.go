package managed

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// pluginSettings are the security plugin's own setting keys (see the file's header).
func pluginSettings(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("testdata/security-plugin-settings.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	for s := bufio.NewScanner(f); s.Scan(); {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			keys[line] = true
		}
	}
	return keys
}

// A secured pool's opensearch.yml sets only settings the plugin declares, points each node
// at its own certificates under the mounted folder, and admits this cluster's nodes and
// admin by subject.
func TestSecuredConfigUsesThePluginsSettings(t *testing.T) {
	sc := sample()
	cfg, err := Config(sc, sc.Spec.Managed.NodePools[1], InitialClusterManagerNodes(sc))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
		t.Fatal(err)
	}
	known := pluginSettings(t)
	if len(known) < 100 {
		t.Fatalf("only %d plugin settings read", len(known))
	}
	secured := 0
	for k := range got {
		if strings.HasPrefix(k, "plugins.security.") {
			secured++
			if !known[k] {
				t.Errorf("%s is not a setting of the security plugin", k)
			}
		}
	}
	if secured < 10 {
		t.Errorf("%d security settings rendered", secured)
	}
	for k, want := range map[string]any{
		"plugins.security.ssl.transport.pemcert_filepath":       "certs/${NODE_NAME}.transport.crt",
		"plugins.security.ssl.transport.pemkey_filepath":        "certs/${NODE_NAME}.transport.key",
		"plugins.security.ssl.transport.pemtrustedcas_filepath": "certs/ca.crt",
		"plugins.security.ssl.http.enabled":                     true,
		"plugins.security.ssl.http.pemcert_filepath":            "certs/${NODE_NAME}.http.crt",
		"plugins.security.nodes_dn":                             []any{"CN=*,OU=nodes.vec.search,O=vectorpilot"},
		"plugins.security.authcz.admin_dn":                      []any{"CN=admin,OU=admin.vec.search,O=vectorpilot"},
		"plugins.security.allow_default_init_securityindex":     true,
	} {
		if !equalYAML(got[k], want) {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	// The certificate files the settings name are the keys the certificates Secret holds.
	if TransportKey("${NODE_NAME}")+".crt" != "${NODE_NAME}.transport.crt" || HTTPKey("p")+".key" != "p.http.key" {
		t.Error("Secret keys and settings disagree")
	}
	sc.Spec.Managed.Security.Enabled = ptr.To(false)
	off, _ := Config(sc, sc.Spec.Managed.NodePools[1], InitialClusterManagerNodes(sc))
	if strings.Contains(off, "plugins.security") {
		t.Error("security settings with security off")
	}
}

func equalYAML(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

// A secured pod mounts its pool's certificates and the security configuration, probes
// readiness over TLS as the probe user, carries the revision annotations and refuses an
// image without the plugin; with security off it tells the image to disable the plugin.
func TestSecuredPod(t *testing.T) {
	sc := sample()
	pool := sc.Spec.Managed.NodePools[1]
	p, err := BuildPool(sc, pool, Live{InitialManagers: InitialClusterManagerNodes(sc), Security: map[string]SecurityRevision{pool.Name: {Trust: "t1", Issued: "2026-11-23T00:00:00Z"}}})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := p.StatefulSet.Spec.Template
	secrets := map[string]string{}
	for _, v := range tmpl.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if secrets["certs"] != "vec-spr-certs" || secrets["security-config"] != "vec-security-config" {
		t.Errorf("secret volumes %v", secrets)
	}
	c := tmpl.Spec.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["certs"] != "/usr/share/opensearch/config/certs" || mounts["security-config"] != "/usr/share/opensearch/config/opensearch-security" {
		t.Errorf("mounts %v", mounts)
	}
	probe := strings.Join(c.ReadinessProbe.Exec.Command, " ")
	for _, want := range []string{"https://${NODE_NAME}:9200/_cluster/health?local=true", "--cacert /usr/share/opensearch/config/certs/ca.crt", "vectorpilot-probe:${PROBE_PASSWORD}"} {
		if !strings.Contains(probe, want) {
			t.Errorf("readiness probe %q lacks %q", probe, want)
		}
	}
	if strings.Contains(probe, "--insecure") || strings.Contains(probe, " -k ") {
		t.Error("the probe skips verification")
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
		if e.Name == "PROBE_PASSWORD" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "vec-vectorpilot-probe-credentials") {
			t.Errorf("probe password from %+v", e.ValueFrom)
		}
	}
	if slices.Contains(env, "DISABLE_SECURITY_PLUGIN") || !slices.Contains(env, "PROBE_PASSWORD") {
		t.Errorf("env %v", env)
	}
	if tmpl.Annotations[TrustAnnotation] != "t1" || tmpl.Annotations[CertificatesAnnotation] != "2026-11-23T00:00:00Z" {
		t.Errorf("annotations %v", tmpl.Annotations)
	}
	inits := slices.DeleteFunc(slices.Clone(tmpl.Spec.InitContainers), func(c corev1.Container) bool { return c.Name == cpuInitName })
	if len(inits) != 1 || inits[0].Name != SecurityPluginCheck || !strings.Contains(strings.Join(inits[0].Command, " "), "/usr/share/opensearch/plugins/opensearch-security") {
		t.Fatalf("init containers %+v", inits)
	}
	if inits[0].SecurityContext == nil || ptr.Deref(inits[0].SecurityContext.AllowPrivilegeEscalation, true) {
		t.Error("the plugin check runs with more privileges than OpenSearch")
	}
	if Endpoint(sc) != "https://vec.search.svc:9200" {
		t.Errorf("endpoint %s", Endpoint(sc))
	}

	sc.Spec.Managed.Security.Enabled = ptr.To(false)
	off, _ := BuildPool(sc, pool, Live{InitialManagers: InitialClusterManagerNodes(sc)})
	oc := off.StatefulSet.Spec.Template.Spec.Containers[0]
	disabled := slices.ContainsFunc(oc.Env, func(e corev1.EnvVar) bool { return e.Name == "DISABLE_SECURITY_PLUGIN" && e.Value == "true" })
	if !disabled || oc.ReadinessProbe.HTTPGet == nil || len(off.StatefulSet.Spec.Template.Spec.InitContainers) != 1 || len(off.StatefulSet.Spec.Template.Spec.Volumes) != 2 {
		t.Errorf("security off: env %v probe %+v; want no security init container or volume (the CPU check and the node's configuration only)", oc.Env, oc.ReadinessProbe)
	}
	if Endpoint(sc) != "http://vec.search.svc:9200" {
		t.Errorf("endpoint %s", Endpoint(sc))
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// TestKubeFlagsMeanWhatKubectlMeans: the context's namespace unless -n, --context picks
// another context, --kubeconfig another file, KUBECONFIG otherwise.
func TestKubeFlagsMeanWhatKubectlMeans(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: team-a, context: {cluster: a, user: u, namespace: search}}
- {name: team-b, context: {cluster: b, user: u}}
current-context: team-a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	for _, tc := range []struct {
		args            []string
		host, namespace string
	}{
		{nil, "https://a.example:6443", "search"},
		{[]string{"-n", "other"}, "https://a.example:6443", "other"},
		{[]string{"--context", "team-b"}, "https://b.example:6443", "default"},
		{[]string{"--kubeconfig", kubeconfig, "--context", "team-b", "-n", "x"}, "https://b.example:6443", "x"},
	} {
		k := newKubeFlags()
		f := pflag.NewFlagSet("test", pflag.ContinueOnError)
		k.register(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, ns, err := k.config()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.Host != tc.host || ns != tc.namespace {
			t.Errorf("%v: host %s, namespace %s; want %s, %s", tc.args, cfg.Host, ns, tc.host, tc.namespace)
		}
	}
}

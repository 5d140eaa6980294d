package sandbox

import (
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Helm is Helm's own release machinery (what `helm install`, `helm upgrade` and `helm
// uninstall` run: hooks, three-way merges, the release history in Secrets) against the
// node's apiserver, for releases in namespace; log receives Helm's debug lines.
func (s *Sandbox) Helm(namespace string, log func(format string, v ...any)) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &s.Cluster.Kubeconfig, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", log); err != nil {
		return nil, err
	}
	return cfg, nil
}

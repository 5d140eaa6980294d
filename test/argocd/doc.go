// Package argocd runs vectorpilot's Argo CD health checks (docs/gitops/argocd-cm-health.yaml)
// with Argo CD's own Lua health code. It is a module of its own: Argo CD pins Kubernetes
// libraries older than the operator's, and the operator must not build against them.
package argocd

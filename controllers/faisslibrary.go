package controllers

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// PodLogs streams a container's log from since (nil: the whole of it).
type PodLogs func(ctx context.Context, namespace, pod, container string, since *metav1.Time) (io.ReadCloser, error)

// PodLogsFrom reads pod logs through the API server (the kubelet's log endpoint).
func PodLogsFrom(cfg *rest.Config) (PodLogs, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, namespace, pod, container string, since *metav1.Time) (io.ReadCloser, error) {
		return cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, SinceTime: since}).Stream(ctx)
	}, nil
}

// faissReading is what a pod's log said of the faiss library, and up to when it was read.
type faissReading struct {
	variant, failed string
	readUntil       *metav1.Time
}

// variantFinding is why the cluster is Degraded over the library variants its pools run,
// with the reason; empty when they run what they asked for.
type variantFinding struct{ reason, message string }

// logClockSlack is how far before the last read the next one starts: the kubelet filters
// by its own clock, which may lag the operator's.
const logClockSlack = 10 * time.Second

// observeFaissLibraries records in status.pools the faiss library the pools' ready nodes
// loaded, from their logs — the plugin names it there, and nowhere else, when a faiss index
// is first used. A pod's log is read from where the last read ended until it names one, and
// not again after. It says why the cluster is Degraded when a pool loaded another variant
// than its simd level and CPUs select (status.pools[].simd), or failed to load one.
func (r *SearchClusterReconciler) observeFaissLibraries(ctx context.Context, sc *v1alpha1.SearchCluster, obs poolObservation) variantFinding {
	if r.PodLogs == nil {
		return variantFinding{}
	}
	r.faissMu.Lock()
	defer r.faissMu.Unlock()
	if r.faiss == nil {
		r.faiss = map[types.UID]map[types.UID]faissReading{}
	}
	known := r.faiss[sc.UID]
	read := map[types.UID]faissReading{}
	var problems []string
	for i := range sc.Status.Pools {
		pool := &sc.Status.Pools[i]
		var loaded []string
		for _, p := range obs.pods {
			uid, ok := obs.podUIDs[p.Name]
			if p.Pool != pool.Name || !p.Ready || !ok {
				continue
			}
			reading := r.readFaissLibrary(ctx, sc.Namespace, p.Name, known[uid])
			read[uid] = reading
			if reading.failed != "" {
				problems = append(problems, fmt.Sprintf("pool %s: node %s failed to load %s", pool.Name, p.Name, reading.failed))
			}
			if reading.variant != "" {
				loaded = append(loaded, reading.variant)
			}
		}
		if len(loaded) == 0 {
			continue
		}
		pool.FaissLibrary = simd.Common(loaded)
		if want := simd.FaissVariant(pool.SIMD); pool.SIMD != "" && pool.FaissLibrary != want {
			problems = append(problems, fmt.Sprintf("pool %s: its nodes loaded faiss library %s, where their simd level and CPUs select %s", pool.Name, pool.FaissLibrary, want))
		}
	}
	r.faiss[sc.UID] = read // pods gone are forgotten
	if len(problems) == 0 {
		return variantFinding{}
	}
	return variantFinding{reason: v1alpha1.ReasonFaissLibraryMismatch, message: strings.Join(problems, "; ")}
}

// readFaissLibrary reads on in a pod's log until it names the faiss library; a failed read
// is tried again at the next reconcile.
func (r *SearchClusterReconciler) readFaissLibrary(ctx context.Context, namespace, pod string, known faissReading) faissReading {
	if known.variant != "" || known.failed != "" {
		return known
	}
	from := metav1.NewTime(time.Now().Add(-logClockSlack))
	stream, err := r.PodLogs(ctx, namespace, pod, managed.ContainerName, known.readUntil)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("reading the pod's log for its faiss library", "pod", pod, "error", err.Error())
		return known
	}
	defer stream.Close()
	variant, failed, err := simd.FaissLibrary(stream)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("reading the pod's log for its faiss library", "pod", pod, "error", err.Error())
		return known
	}
	return faissReading{variant: variant, failed: failed, readUntil: &from}
}

package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// setFinalizer adds (present) or removes a finalizer with a patch of metadata.finalizers
// alone. An Update would write the whole spec back as the operator's types serialize it
// (a "24h" duration default as "24h0m0s"): a change of what the user applied, a new
// generation, and drift in a GitOps tool's diff. The patch carries the resourceVersion,
// so a finalizer another controller added meanwhile is not lost: the write conflicts and
// is retried.
func setFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, present bool) error {
	base := obj.DeepCopyObject().(client.Object)
	changed := controllerutil.RemoveFinalizer(obj, finalizer)
	if present {
		changed = controllerutil.AddFinalizer(obj, finalizer)
	}
	if !changed {
		return nil
	}
	return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
)

// Object is an object of a kind the driver reconciles.
type Object interface {
	client.Object
	// StatusFields points at the object's status (compared before and after the steps),
	// its conditions and the generation they describe.
	StatusFields() (status any, conditions *[]metav1.Condition, observedGeneration *int64)
}

// Kind is one kind's reconcile: what the driver needs besides the skeleton it owns (read,
// finalizer, pause, observed generation, one status write, the answer). Client, New,
// Scope and Steps are required.
type Kind[T Object, S any] struct {
	Client client.Client
	// New is an empty object of the kind to read into.
	New func() T
	// Gone forgets what this process keeps for an object that no longer exists.
	Gone func(types.NamespacedName)
	// Finalizer, when set, is added before anything acts; once the object is being
	// deleted, Finalize runs instead of the steps, and when it answers with neither an
	// error nor a requeue the driver removes the finalizer.
	Finalizer string
	Finalize  func(context.Context, T) (ctrl.Result, error)
	// Settle runs before the finalizer is added and the steps run; handled ends the
	// reconcile with its answer (a finished run putting things back, defaults recorded
	// into the spec, which brings the object back).
	Settle func(context.Context, T) (handled bool, answer ctrl.Result, err error)
	// Idle says the steps have nothing left to do (a finished snapshot); the status is
	// still observed and written.
	Idle func(T) bool
	// Scope is one reconcile's scope; Steps the named steps over it.
	Scope func(context.Context, T) S
	Steps func(S) []Step[S]
	// Status sets the conditions that sum the steps' outcome up and may adjust the
	// outcome's requeue (the kind's status.go); nil when the steps set their own.
	Status func(S, *Outcome)
	// Written runs after a write that changed the status, with the object as read: the
	// Events of transitions.
	Written func(ctx context.Context, before, after T)
	// Resync is how soon an object no step asked to see again is looked at.
	Resync time.Duration
}

// Reconcile is controller-runtime's entry point for the kind.
func (k Kind[T, S]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := k.New()
	if err := k.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrs.IsNotFound(err) && k.Gone != nil {
			k.Gone(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if k.Finalizer != "" && !obj.GetDeletionTimestamp().IsZero() {
		return k.finalize(ctx, obj)
	}
	if k.Settle != nil {
		if handled, answer, err := k.Settle(ctx, obj); handled || err != nil {
			return answer, err
		}
	}
	if k.Finalizer != "" {
		if err := SetFinalizer(ctx, k.Client, obj, k.Finalizer, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := obj.DeepCopyObject().(T)
	beforeStatus, _, _ := before.StatusFields()
	status, conds, observed := obj.StatusFields()
	paused := v1alpha1.IsPaused(obj.GetAnnotations())
	conditions.SetPaused(conds, obj.GetGeneration(), paused)
	var out Outcome
	if !paused && (k.Idle == nil || !k.Idle(obj)) {
		scope := k.Scope(ctx, obj)
		out = Run(ctx, scope, k.Steps(scope))
		if k.Status != nil {
			k.Status(scope, &out)
		}
	}
	*observed = obj.GetGeneration()
	changed := !equality.Semantic.DeepEqual(beforeStatus, status)
	if requeue, err := writeStatus(ctx, k.Client, obj, changed); requeue != nil || err != nil {
		if requeue != nil {
			return *requeue, nil
		}
		return ctrl.Result{}, err
	}
	if changed && k.Written != nil {
		k.Written(ctx, before, obj)
	}
	return out.Answer(k.Resync)
}

// finalize runs the kind's Finalize on an object being deleted that still carries the
// kind's finalizer, and removes the finalizer once it is done.
func (k Kind[T, S]) finalize(ctx context.Context, obj T) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, k.Finalizer) {
		return ctrl.Result{}, nil
	}
	if k.Finalize != nil {
		if answer, err := k.Finalize(ctx, obj); err != nil || !answer.IsZero() {
			return answer, err
		}
	}
	return ctrl.Result{}, SetFinalizer(ctx, k.Client, obj, k.Finalizer, false)
}

// SetFinalizer adds (present) or removes a finalizer with a patch of metadata.finalizers
// alone. An Update would write the whole spec back as the operator's types serialize it
// (a "24h" duration default as "24h0m0s"): a change of what the user applied, a new
// generation, and drift in a GitOps tool's diff. The patch carries the resourceVersion,
// so a finalizer another controller added meanwhile is not lost: the write conflicts and
// is retried.
func SetFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, present bool) error {
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

// ErrIntentNotRecorded is what RecordIntent returns when a newer version of the object
// won: the intent is not on record, so the action it guards must not run. Run turns it
// into a quiet look again, from the newer object.
var ErrIntentNotRecorded = errors.New("intent not recorded: the object changed since it was read")

// RecordIntent writes obj's status now, mid-list, so that what a step is about to do (a
// risky action: a cluster setting changed, a write block, a restore started, an attempt
// counted) is on record before it does it, and a restarted operator finishes or undoes
// it. what names the intent for the error. A conflict is ErrIntentNotRecorded.
func RecordIntent(ctx context.Context, c client.Client, obj client.Object, what string) error {
	err := c.Status().Update(ctx, obj)
	switch {
	case err == nil:
		return nil
	case apierrs.IsConflict(err):
		return fmt.Errorf("recording %s in status: %w", what, ErrIntentNotRecorded)
	}
	return fmt.Errorf("recording %s in status: %w", what, err)
}

// Package steps is the one shape of every vectorpilot reconcile: a list of named steps
// over a per-reconcile scope, each returning a Result; Run runs them in order and folds
// their results into one Outcome (the first error, the lowest requeue, where it stopped).
// Kind drives a kind's reconcile around its steps: it reads the object, keeps its
// finalizer and pause, writes the status once and turns the Outcome into
// controller-runtime's answer, a conflicting status write being a quiet requeue.
package steps

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Result is what one step says.
type Result struct {
	// RequeueAfter asks to look again after this long; the lowest of all steps wins, zero
	// has no say.
	RequeueAfter time.Duration
	// Stop ends the list here without an error: the object waits on something.
	Stop bool
	// Err ends the list here and is retried on the controller's backoff.
	Err error
}

// Continue lets the next step run.
func Continue() Result { return Result{} }

// Done is Continue for a nil err and a stop on err otherwise.
func Done(err error) Result { return Result{Err: err} }

// StopFor ends the list and looks again after d.
func StopFor(d time.Duration) Result { return Result{Stop: true, RequeueAfter: soon(d)} }

// After lets the next step run and looks again after d.
func After(d time.Duration) Result { return Result{RequeueAfter: soon(d)} }

// passedDeadline is how soon a reconcile asked to look again at a time already past runs
// again.
const passedDeadline = time.Second

// soon is d, or passedDeadline when d is negative (zero keeps meaning "no say"): a wait
// computed from a deadline (a schedule's next slot, a renewal time) is negative once the
// deadline has passed while the reconcile ran, and controller-runtime drops a negative
// RequeueAfter — the object would not be looked at again until some unrelated event.
func soon(d time.Duration) time.Duration {
	if d < 0 {
		return passedDeadline
	}
	return d
}

// Step is one named step over a reconcile's scope S.
type Step[S any] struct {
	Name string
	Run  func(context.Context, S) Result
}

// Fallible is a step that either lets the next one run or fails with an error.
func Fallible[S any](name string, run func(context.Context, S) error) Step[S] {
	return Step[S]{Name: name, Run: func(ctx context.Context, s S) Result { return Done(run(ctx, s)) }}
}

// Outcome is the steps' results folded together.
type Outcome struct {
	Result
	// StoppedAt names the step that stopped the list, empty when every step ran.
	StoppedAt string
}

// Run runs steps in order until one stops or fails.
func Run[S any](ctx context.Context, scope S, steps []Step[S]) Outcome {
	var out Outcome
	for _, s := range steps {
		r := s.Run(ctx, scope)
		if errors.Is(r.Err, ErrIntentNotRecorded) {
			logf.FromContext(ctx).V(1).Info("intent lost to a newer version of the object; looking again", "step", s.Name)
			r = StopFor(conflictRequeue)
		}
		out.RequeueAfter = lowest(out.RequeueAfter, r.RequeueAfter)
		if r.Err != nil || r.Stop {
			out.Err, out.Stop, out.StoppedAt = r.Err, r.Stop, s.Name
			if r.Err != nil {
				logf.FromContext(ctx).V(1).Info("step stopped the reconcile", "step", s.Name, "error", r.Err.Error())
			}
			return out
		}
	}
	return out
}

// Within asks to look again after d at the latest.
func (o *Outcome) Within(d time.Duration) { o.RequeueAfter = lowest(o.RequeueAfter, soon(d)) }

// lowest is the smaller of two requeue delays, zero meaning none.
func lowest(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// conflictRequeue is how soon a reconcile whose status write lost to a newer object runs
// again (the newer object's own event usually comes first).
const conflictRequeue = time.Second

// writeStatus writes obj's status when changed. A write that loses to a newer version of
// the object is not an error: requeue says when to look again, from the newer one.
func writeStatus(ctx context.Context, c client.Client, obj client.Object, changed bool) (requeue *ctrl.Result, err error) {
	if !changed {
		return nil, nil
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			logf.FromContext(ctx).V(1).Info("status write lost to a newer version; looking again")
			return &ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		return nil, err
	}
	return nil, nil
}

// Answer is the outcome as controller-runtime's answer: its error to retry on the backoff,
// else its requeue, or otherwise when no step asked for one (the kind's resync).
func (o Outcome) Answer(otherwise time.Duration) (ctrl.Result, error) {
	if o.Err != nil {
		return ctrl.Result{}, o.Err
	}
	if o.RequeueAfter == 0 {
		return ctrl.Result{RequeueAfter: otherwise}, nil
	}
	return ctrl.Result{RequeueAfter: o.RequeueAfter}, nil
}

package steps

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

const testFinalizer = "vectorpilot.io/test"

// driven is what one reconcile through the driver did, as the test's kind saw it.
type driven struct {
	ran, finalized, gone, settled, written int
	statusWrites                           int
}

// TestKindOwnsTheSkeleton drives whole reconciles of a kind through the driver, against
// controller-runtime's fake client: what it reads, adds and removes, which hooks run, what
// it writes and how it answers.
func TestKindOwnsTheSkeleton(t *testing.T) {
	boom := errors.New("boom")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "vectorsnapshots"}, "snap", errors.New("changed"))
	live := func(mutate ...func(*v1alpha1.VectorSnapshot)) *v1alpha1.VectorSnapshot {
		vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", Generation: 3}}
		for _, m := range mutate {
			m(vs)
		}
		return vs
	}
	deleting := func(vs *v1alpha1.VectorSnapshot) {
		vs.Finalizers = []string{testFinalizer}
		vs.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	paused := func(vs *v1alpha1.VectorSnapshot) {
		vs.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	}
	for _, tc := range []struct {
		name      string
		obj       *v1alpha1.VectorSnapshot // nil: gone
		step      Result
		finalize  ctrl.Result
		settle    bool
		idle      bool
		statusErr error
		want      driven
		answer    ctrl.Result
		err       error
		finalizer bool // the stored object carries it after the reconcile
		observed  bool // status.observedGeneration is the generation after it
		paused    bool // status says Paused
	}{
		{name: "an object gone is forgotten", want: driven{gone: 1}},
		{name: "a new object gets its finalizer, runs its steps, writes status once",
			obj: live(), step: After(time.Second), want: driven{ran: 1, written: 1, statusWrites: 1},
			answer: ctrl.Result{RequeueAfter: time.Second}, finalizer: true, observed: true},
		{name: "no step asks: the resync", obj: live(), step: Continue(), want: driven{ran: 1, written: 1, statusWrites: 1},
			answer: ctrl.Result{RequeueAfter: time.Hour}, finalizer: true, observed: true},
		{name: "a step's error is retried on the backoff, status written first",
			obj: live(), step: Done(boom), want: driven{ran: 1, written: 1, statusWrites: 1}, err: boom, finalizer: true, observed: true},
		{name: "a lost status write is a quiet requeue", obj: live(), step: Done(boom), statusErr: conflict,
			want: driven{ran: 1, statusWrites: 1}, answer: ctrl.Result{RequeueAfter: conflictRequeue}, finalizer: true},
		{name: "another status write error is returned", obj: live(), statusErr: boom,
			want: driven{ran: 1, statusWrites: 1}, err: boom, finalizer: true},
		{name: "a lost intent stops the list quietly", obj: live(), step: Done(RecordIntent(context.Background(), conflicted{}, nil, "the test")),
			want: driven{ran: 1, written: 1, statusWrites: 1}, answer: ctrl.Result{RequeueAfter: conflictRequeue}, finalizer: true, observed: true},
		{name: "paused: no step runs, Paused is said", obj: live(paused), want: driven{written: 1, statusWrites: 1},
			answer: ctrl.Result{RequeueAfter: time.Hour}, finalizer: true, observed: true, paused: true},
		{name: "idle: no step runs, status still observed", obj: live(), idle: true, want: driven{written: 1, statusWrites: 1},
			answer: ctrl.Result{RequeueAfter: time.Hour}, finalizer: true, observed: true},
		{name: "settled: nothing else", obj: live(), settle: true, want: driven{settled: 1}, answer: ctrl.Result{RequeueAfter: time.Minute}},
		{name: "being deleted: finalized, then the finalizer goes", obj: live(deleting), want: driven{finalized: 1}},
		{name: "being deleted, finalize waits: the finalizer stays", obj: live(deleting), finalize: ctrl.Result{RequeueAfter: time.Second},
			want: driven{finalized: 1}, answer: ctrl.Result{RequeueAfter: time.Second}, finalizer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			var got driven
			b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.VectorSnapshot{}).
				WithInterceptorFuncs(interceptor.Funcs{
					SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
						got.statusWrites++
						if tc.statusErr != nil {
							return tc.statusErr
						}
						return c.SubResource(sub).Update(ctx, obj, opts...)
					},
				})
			if tc.obj != nil {
				b = b.WithObjects(tc.obj)
			}
			c := b.Build()
			kind := Kind[*v1alpha1.VectorSnapshot, *v1alpha1.VectorSnapshot]{
				Client:    c,
				New:       func() *v1alpha1.VectorSnapshot { return &v1alpha1.VectorSnapshot{} },
				Gone:      func(types.NamespacedName) { got.gone++ },
				Finalizer: testFinalizer,
				Finalize: func(context.Context, *v1alpha1.VectorSnapshot) (ctrl.Result, error) {
					got.finalized++
					return tc.finalize, nil
				},
				Settle: func(context.Context, *v1alpha1.VectorSnapshot) (bool, ctrl.Result, error) {
					if tc.settle {
						got.settled++
						return true, ctrl.Result{RequeueAfter: time.Minute}, nil
					}
					return false, ctrl.Result{}, nil
				},
				Idle:  func(*v1alpha1.VectorSnapshot) bool { return tc.idle },
				Scope: func(_ context.Context, vs *v1alpha1.VectorSnapshot) *v1alpha1.VectorSnapshot { return vs },
				Steps: func(*v1alpha1.VectorSnapshot) []Step[*v1alpha1.VectorSnapshot] {
					return []Step[*v1alpha1.VectorSnapshot]{{Name: "act", Run: func(_ context.Context, vs *v1alpha1.VectorSnapshot) Result {
						got.ran++
						vs.Status.Phase = v1alpha1.SnapshotInProgress
						return tc.step
					}}}
				},
				Written: func(context.Context, *v1alpha1.VectorSnapshot, *v1alpha1.VectorSnapshot) { got.written++ },
				Resync:  time.Hour,
			}
			answer, err := kind.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "snap"}})
			if got != tc.want || answer != tc.answer || !errors.Is(err, tc.err) {
				t.Fatalf("did %+v, answered %+v, %v; want %+v, %+v, %v", got, answer, err, tc.want, tc.answer, tc.err)
			}
			if tc.obj == nil {
				return
			}
			var stored v1alpha1.VectorSnapshot
			err = c.Get(context.Background(), client.ObjectKeyFromObject(tc.obj), &stored)
			if apierrors.IsNotFound(err) {
				// The fake client deletes an object whose last finalizer goes.
				if tc.finalizer {
					t.Errorf("object gone, want it kept with its finalizer")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if has := controllerutil.ContainsFinalizer(&stored, testFinalizer); has != tc.finalizer {
				t.Errorf("finalizer present %v, want %v", has, tc.finalizer)
			}
			if observed := stored.Status.ObservedGeneration == stored.Generation; observed != tc.observed {
				t.Errorf("observedGeneration %d of generation %d, want observed %v", stored.Status.ObservedGeneration, stored.Generation, tc.observed)
			}
			if paused := meta.IsStatusConditionTrue(stored.Status.Conditions, v1alpha1.ConditionPaused); paused != tc.paused {
				t.Errorf("Paused %v, want %v", paused, tc.paused)
			}
		})
	}
}

// TestAnUnchangedStatusIsNotWritten: a second reconcile that finds nothing new writes
// nothing and calls no Written hook.
func TestAnUnchangedStatusIsNotWritten(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	writes, written := 0, 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.VectorSnapshot{}).
		WithObjects(&v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", Generation: 1}}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	kind := Kind[*v1alpha1.VectorSnapshot, *v1alpha1.VectorSnapshot]{
		Client:  c,
		New:     func() *v1alpha1.VectorSnapshot { return &v1alpha1.VectorSnapshot{} },
		Scope:   func(_ context.Context, vs *v1alpha1.VectorSnapshot) *v1alpha1.VectorSnapshot { return vs },
		Steps:   func(*v1alpha1.VectorSnapshot) []Step[*v1alpha1.VectorSnapshot] { return nil },
		Written: func(context.Context, *v1alpha1.VectorSnapshot, *v1alpha1.VectorSnapshot) { written++ },
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "snap"}}
	for range 2 {
		if _, err := kind.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 1 || written != 1 {
		t.Errorf("%d status writes and %d Written calls over two reconciles, want 1 and 1", writes, written)
	}
}

// conflicted is a client whose status writes always lose to a newer object.
type conflicted struct{ client.Client }

func (conflicted) Status() client.SubResourceWriter { return conflictedStatus{} }

type conflictedStatus struct{ client.SubResourceWriter }

func (conflictedStatus) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "vectorsnapshots"}, "snap", errors.New("changed"))
}

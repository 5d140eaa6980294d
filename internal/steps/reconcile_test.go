package steps

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestRunFoldsTheSteps(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		results []Result
		ran     int
		want    Outcome
	}{
		{"all continue", []Result{Continue(), Continue()}, 2, Outcome{}},
		{"lowest requeue kept", []Result{After(time.Minute), After(5 * time.Second), After(time.Hour)}, 3,
			Outcome{Result: Result{RequeueAfter: 5 * time.Second}}},
		{"a stop ends the list, keeping earlier requeues", []Result{After(time.Second), StopFor(time.Minute), After(time.Millisecond)}, 2,
			Outcome{Result: Result{RequeueAfter: time.Second, Stop: true}, StoppedAt: "1"}},
		{"an error ends the list", []Result{Continue(), Done(boom), Continue()}, 2,
			Outcome{Result: Result{Err: boom}, StoppedAt: "1"}},
		{"Done(nil) continues", []Result{Done(nil), After(time.Second)}, 2, Outcome{Result: Result{RequeueAfter: time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := 0
			var steps []Step[*int]
			for i, r := range tc.results {
				steps = append(steps, Step[*int]{Name: string(rune('0' + i)), Run: func(context.Context, *int) Result { ran++; return r }})
			}
			got := Run(context.Background(), &ran, steps)
			if got != tc.want || ran != tc.ran {
				t.Errorf("Run = %+v after %d steps, want %+v after %d", got, ran, tc.want, tc.ran)
			}
		})
	}
}

// TestAPassedDeadlineIsLookedAtAgain: a step's wait computed from a deadline the reconcile
// ran past (a schedule's next slot, on a slow API server) is negative; the answer still
// asks controller-runtime to look again soon (it drops a RequeueAfter that is not
// positive, and the object waited for an unrelated event: a snapshot policy took none).
func TestAPassedDeadlineIsLookedAtAgain(t *testing.T) {
	for name, r := range map[string]Result{"After": After(-8 * time.Second), "StopFor": StopFor(-time.Second)} {
		out := Run(context.Background(), new(int), []Step[*int]{{Name: "wait", Run: func(context.Context, *int) Result { return r }}})
		answer, err := out.Answer(0)
		if err != nil || answer.RequeueAfter <= 0 || answer.RequeueAfter > time.Second {
			t.Errorf("%s: answer %+v, %v; want a requeue within a second", name, answer, err)
		}
	}
}

func TestFinish(t *testing.T) {
	boom := errors.New("boom")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
	for _, tc := range []struct {
		name      string
		changed   bool
		updateErr error
		out       Outcome
		want      ctrl.Result
		wantErr   error
		writes    int
	}{
		{"unchanged status is not written", false, nil, Outcome{}, ctrl.Result{RequeueAfter: time.Minute}, nil, 0},
		{"changed status is written once", true, nil, Outcome{Result: After(time.Second)}, ctrl.Result{RequeueAfter: time.Second}, nil, 1},
		{"a step error is retried on the backoff", true, nil, Outcome{Result: Done(boom)}, ctrl.Result{}, boom, 1},
		{"a conflict is a quiet requeue", true, conflict, Outcome{Result: Done(boom)}, ctrl.Result{RequeueAfter: conflictRequeue}, nil, 1},
		{"another write error is returned", true, boom, Outcome{}, ctrl.Result{}, boom, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}
			writes := 0
			c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
					writes++
					return tc.updateErr
				},
			}).Build()
			got, err := Finish(context.Background(), c, obj, tc.changed, tc.out, time.Minute)
			if got != tc.want || !errors.Is(err, tc.wantErr) || writes != tc.writes {
				t.Errorf("Finish = %+v, %v after %d writes; want %+v, %v after %d", got, err, writes, tc.want, tc.wantErr, tc.writes)
			}
		})
	}
}

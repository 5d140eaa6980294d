package steps

import (
	"context"
	"errors"
	"testing"
	"time"
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

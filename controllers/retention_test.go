package controllers

import (
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func TestRetention(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	snap := func(name string, ageHours int, phase string) v1alpha1.VectorSnapshot {
		return v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(ageHours) * time.Hour))},
			Status: v1alpha1.VectorSnapshotStatus{Phase: phase}}
	}
	all := []v1alpha1.VectorSnapshot{
		snap("s1", 50, v1alpha1.SnapshotSucceeded), snap("s2", 40, v1alpha1.SnapshotSucceeded), snap("f1", 35, v1alpha1.SnapshotFailed),
		snap("s3", 30, v1alpha1.SnapshotSucceeded), snap("s4", 20, v1alpha1.SnapshotSucceeded), snap("s5", 10, v1alpha1.SnapshotSucceeded),
		snap("running", 0, v1alpha1.SnapshotInProgress), snap("f2", 0, v1alpha1.SnapshotFailed),
	}
	three := int32(3)
	one := int32(1)
	cases := []struct {
		name string
		ret  v1alpha1.SnapshotRetention
		want []string
	}{
		{"maxCount keeps the newest successful ones, prunes failures older than the newest success", v1alpha1.SnapshotRetention{MaxCount: &three}, []string{"f1", "s1", "s2"}},
		{"maxAge prunes old ones", v1alpha1.SnapshotRetention{MaxAge: "36h"}, []string{"f1", "s1", "s2"}},
		{"maxAge never prunes the newest success", v1alpha1.SnapshotRetention{MaxAge: "1h"}, []string{"f1", "s1", "s2", "s3", "s4"}},
		{"both", v1alpha1.SnapshotRetention{MaxCount: &one, MaxAge: "1000h"}, []string{"f1", "s1", "s2", "s3", "s4"}},
	}
	for _, c := range cases {
		var got []string
		for _, s := range retained(c.ret, all, now) {
			got = append(got, s.Name)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: pruned %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	from := time.Date(2026, 11, 22, 10, 7, 0, 0, time.UTC)
	cases := []struct {
		spec, tz string
		want     time.Time
		err      bool
	}{
		{"0 2 * * *", "", time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC), false},
		{"@hourly", "", time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC), false},
		{"@every 6h", "", from.Add(6 * time.Hour), false},
		{"0 2 * * *", "Europe/Paris", time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC), false},
		{"61 * * * *", "", time.Time{}, true},
		{"0 2 * * *", "Mars/Olympus", time.Time{}, true},
	}
	for _, c := range cases {
		s, err := parseSchedule(c.spec, c.tz)
		if c.err {
			if err == nil {
				t.Errorf("%q in %q accepted", c.spec, c.tz)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if got := s.Next(from).UTC(); !got.Equal(c.want) {
			t.Errorf("%q in %q: next %s, want %s", c.spec, c.tz, got, c.want)
		}
	}
}

// TestRetentionConsidersOnlyWhatThePolicyControls: a snapshot carrying the policy's label
// but not controlled by it (made by hand, or by an earlier policy of the same name) is
// never a candidate for pruning.
func TestRetentionConsidersOnlyWhatThePolicyControls(t *testing.T) {
	policy := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "uid-now"}}
	yes := true
	owned := func(name, uid string, controller bool) v1alpha1.VectorSnapshot {
		s := v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{PolicyLabel: "nightly"}}}
		if uid != "" {
			ref := metav1.OwnerReference{APIVersion: "vectorpilot.io/v1alpha1", Kind: "SnapshotPolicy", Name: "nightly", UID: types.UID(uid)}
			if controller {
				ref.Controller = &yes
			}
			s.OwnerReferences = []metav1.OwnerReference{ref}
		}
		return s
	}
	got := controlledBy([]v1alpha1.VectorSnapshot{
		owned("ours", "uid-now", true), owned("by-hand", "", false), owned("earlier-policy", "uid-before", true), owned("not-controller", "uid-now", false),
	}, policy)
	if len(got) != 1 || got[0].Name != "ours" {
		t.Errorf("controlled snapshots = %v, want only ours", got)
	}
}

func TestLatestSlotTakesOnlyTheNewestMissedRun(t *testing.T) {
	hourly, err := parseSchedule("0 * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 11, 22, h, m, 0, 0, time.UTC) }
	cases := []struct{ due, now, want time.Time }{
		{at(10, 0), at(10, 0), at(10, 0)},
		{at(10, 0), at(10, 59), at(10, 0)},
		{at(10, 0), at(13, 30), at(13, 0)},
	}
	for _, c := range cases {
		if got := latestSlot(hourly, c.due, c.now); !got.Equal(c.want) {
			t.Errorf("latestSlot(due %s, now %s) = %s, want %s", c.due, c.now, got, c.want)
		}
	}
}

// TestSnapshotProgressMovesOnlyWithTheFigures: the stall clock restarts when shards or
// bytes move, and keeps running while they do not, however long the snapshot has run.
func TestSnapshotProgressMovesOnlyWithTheFigures(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	p := trackProgress(nil, opensearch.SnapshotProgress{ShardsTotal: 4, BytesTotal: 1000}, t0)
	steps := []struct {
		after    time.Duration
		progress opensearch.SnapshotProgress
		wantLast time.Duration
	}{
		{time.Minute, opensearch.SnapshotProgress{ShardsTotal: 4, BytesTotal: 1000}, 0},
		{2 * time.Minute, opensearch.SnapshotProgress{ShardsTotal: 4, BytesDone: 10, BytesTotal: 1000}, 2 * time.Minute},
		{3 * time.Minute, opensearch.SnapshotProgress{ShardsDone: 1, ShardsTotal: 4, BytesDone: 10, BytesTotal: 1000}, 3 * time.Minute},
		{90 * time.Minute, opensearch.SnapshotProgress{ShardsDone: 1, ShardsTotal: 4, BytesDone: 10, BytesTotal: 1000}, 3 * time.Minute},
	}
	for _, s := range steps {
		p = trackProgress(p, s.progress, t0.Add(s.after))
		if got := p.LastProgressTime.Sub(t0); got != s.wantLast {
			t.Errorf("at +%s: last progress at +%s, want +%s", s.after, got, s.wantLast)
		}
	}
	if got := lastProgress(&v1alpha1.VectorSnapshotStatus{Progress: p}); !got.Equal(t0.Add(3 * time.Minute)) {
		t.Errorf("lastProgress = %s", got)
	}
}

func TestRedIndexBackoffGrowsToTheResyncInterval(t *testing.T) {
	for _, c := range []struct{ redFor, want time.Duration }{
		{0, progressPollInterval}, {time.Second, progressPollInterval}, {10 * time.Second, 10 * time.Second}, {time.Hour, time.Minute},
	} {
		if got := redBackoff(c.redFor, time.Minute); got != c.want {
			t.Errorf("red for %s: next look in %s, want %s", c.redFor, got, c.want)
		}
	}
}

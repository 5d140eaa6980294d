package controllers

import (
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
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

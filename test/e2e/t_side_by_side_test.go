package e2e

import "testing"

// TestChecksThatMostlyWait runs side by side the checks that spend most of their time
// waiting on the node — pods starting one after another, a certificate's lifetime, the
// operator noticing a deleted object — and own what they change: their namespace or their
// objects in the search namespace, and any cluster or S3 server they start. Alone, each left
// the machine's cores under 30 % busy (make test's report gives the share beside each slow
// test); one after another they took about 270 s. They run after the load-sensitive tests
// on the sandbox cluster (the rolling restarts, the scale-down) and before its teardown, as
// they read it. A check that judges by latency or by the operator's memory, tunes the
// sandbox index another check tunes too, or replaces the operator does not qualify.
func TestChecksThatMostlyWait(t *testing.T) {
	integration(t)
	for _, check := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ArgoBenchmarkRunTunesTheIndex", argoBenchmarkRunTunesTheIndex},
		{"SearchClusterOfAnOpenSearchOperatorCluster", searchClusterOfAnOpenSearchOperatorCluster},
		{"SecuredClusterOnTheRealNode", securedClusterOnTheRealNode},
		{"RemoteBackedManagedCluster", remoteBackedManagedCluster},
	} {
		t.Run(check.name, func(t *testing.T) {
			t.Parallel()
			check.run(t)
		})
	}
}

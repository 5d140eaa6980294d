package managed

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFailing(t *testing.T) {
	jvm := "[2026-11-26T10:00:00] starting\nUnrecognized VM option 'NoSuchOption'\nError: Could not create the Java Virtual Machine.\nError: A fatal exception has occurred. Program will exit.\n"
	bootstrap := "uncaught exception in thread [main]\njava.lang.IllegalArgumentException: unknown setting [knn.nope]\n\tat org.opensearch.common.settings.AbstractScopedSettings.validate(AbstractScopedSettings.java:624)\n\t... 12 more\n"
	crashed := corev1.ContainerStatus{Name: ContainerName, RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: jvm}}}
	running := corev1.ContainerStatus{Name: ContainerName, RestartCount: 1,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}
	pod := func(init []corev1.ContainerStatus, main ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: init, ContainerStatuses: main}}
	}
	deleted := pod(nil, corev1.ContainerStatus{Name: ContainerName,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}})
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string // "" when not failing
	}{
		{"a JVM refusing an option, in its back-off", pod(nil, crashed),
			"container opensearch: CrashLoopBackOff, exit code 1, restarts: 3: Unrecognized VM option 'NoSuchOption' | Error: Could not create the Java Virtual Machine. | Error: A fatal exception has occurred. Program will exit."},
		{"a node refusing a setting, just exited: its reason, not its stack", pod(nil, corev1.ContainerStatus{Name: ContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: bootstrap}}}),
			"container opensearch: exited, exit code 1, restarts: 0: uncaught exception in thread [main] | java.lang.IllegalArgumentException: unknown setting [knn.nope]"},
		{"an image that cannot be pulled", pod(nil, corev1.ContainerStatus{Name: ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "opensearch:3.7.0"`}}}),
			`container opensearch: ImagePullBackOff: Back-off pulling image "opensearch:3.7.0"`},
		{"an init container crash-looping", pod([]corev1.ContainerStatus{{Name: "keystore", RestartCount: 2,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "no such key"}}}},
			corev1.ContainerStatus{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}),
			"container keystore: CrashLoopBackOff, exit code 2, restarts: 2: no such key"},
		{"running again after a crash", pod(nil, running), ""},
		{"starting", pod(nil, corev1.ContainerStatus{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}), ""},
		{"being deleted", deleted, ""},
	} {
		if got := Failing(tc.pod); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	long := lastLines(strings.Repeat("x", 500))
	if n := len([]rune(long)); n != 200 {
		t.Errorf("a 500-character line is cut to %d characters, want 200", n)
	}
}

package managed

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// failedWaiting are the reasons a container waits with that need a change to go away: it
// exited with an error and is held back (CrashLoopBackOff), its image cannot be had, or the
// kubelet cannot create it from the spec.
var failedWaiting = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// Failing says why one of a pod's containers (init or OpenSearch) cannot run, "" when none
// fails: it waits for one of failedWaiting, or it has exited with an error. The message names
// the container, the exit code and restarts, and the last lines it wrote: its termination
// message, which for the OpenSearch container is its log's tail
// (TerminationMessageFallbackToLogsOnError) — a JVM that refuses an option, a node that
// refuses a setting, say why there. A pod being deleted is not failing: its containers exit
// as told.
func Failing(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	for _, c := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		terminated := c.State.Terminated
		if terminated == nil {
			terminated = c.LastTerminationState.Terminated
		}
		var what string
		switch w := c.State.Waiting; {
		case w != nil && slices.Contains(failedWaiting, w.Reason):
			what = w.Reason
			if w.Reason != "CrashLoopBackOff" {
				// Nothing ran: the waiting message is the cause (the image, the spec).
				return fmt.Sprintf("container %s: %s: %s", c.Name, w.Reason, lastLines(w.Message))
			}
		case c.State.Terminated != nil && c.State.Terminated.ExitCode != 0:
			what = "exited"
		default:
			continue
		}
		msg := fmt.Sprintf("container %s: %s", c.Name, what)
		if terminated != nil {
			msg += fmt.Sprintf(", exit code %d", terminated.ExitCode)
		}
		msg += fmt.Sprintf(", restarts: %d", c.RestartCount)
		if terminated != nil {
			if said := lastLines(terminated.Message); said != "" {
				msg += ": " + said
			}
		}
		return msg
	}
	return ""
}

// stackFrame matches the lines of a Java stack trace, which say where, not why.
var stackFrame = regexp.MustCompile(`^(at |\.\.\. \d+ more$)`)

// lastLines are the last three lines of a container's output that are not blank or stack
// frames, each cut at 200 characters, joined: enough for the JVM's or OpenSearch's own
// reason, short enough for a condition.
func lastLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !stackFrame.MatchString(l) {
			if r := []rune(l); len(r) > 200 {
				l = string(r[:199]) + "…"
			}
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

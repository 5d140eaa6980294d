package kubenode

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestProcessIdentityTellsAReusedPIDApart: a live process has an identity, its PID and
// start time, the same each time it is read; a process that has exited has none, so a
// slot whose owner died is taken for a leftover.
func TestProcessIdentityTellsAReusedPIDApart(t *testing.T) {
	self := processIdentity(os.Getpid())
	pid, start, ok := strings.Cut(self, " ")
	if !ok || pid != strconv.Itoa(os.Getpid()) || start == "" || start == "0" {
		t.Fatalf("identity of this process %q, want its PID and a start time", self)
	}
	if again := processIdentity(os.Getpid()); again != self {
		t.Errorf("identity read again %q, first %q", again, self)
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	if id := processIdentity(child.Process.Pid); id != "" {
		t.Errorf("identity of an exited process %q, want none", id)
	}
}

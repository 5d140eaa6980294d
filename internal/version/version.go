// Package version says which vectorpilot this is: the release, and the source revision the
// binary was built from (Go stamps it from the checkout's VCS; absent when built outside one).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release; the chart's appVersion is the same (a test holds them together).
const Version = "0.1.0"

// Info is what a binary knows of its build.
type Info struct {
	Version, Revision, GoVersion string
	// Modified: built from a checkout with uncommitted changes.
	Modified bool
}

// Get reads the build's VCS stamp.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String is one line: release, revision (or "unknown revision"), Go version.
func (i Info) String() string {
	rev := "unknown revision"
	if i.Revision != "" {
		rev = "revision " + i.Revision
		if i.Modified {
			rev += " (modified)"
		}
	}
	return fmt.Sprintf("vectorpilot %s, %s, %s", i.Version, rev, i.GoVersion)
}

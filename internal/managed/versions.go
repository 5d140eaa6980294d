package managed

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// NewestNodeVersion is status.newestNodeVersion after the nodes were seen running
// versions: the newest of those and what was recorded before, as major.minor.patch (the
// form spec.managed.version's admission rule compares). It never goes down — a node that
// ran a version wrote its data in that version's format — and a version that does not
// parse is left out.
func NewestNodeVersion(recorded string, running []string) string {
	newest, _ := version.ParseGeneric(recorded)
	for _, r := range running {
		if v, err := version.ParseGeneric(r); err == nil && (newest == nil || v.GreaterThan(newest)) {
			newest = v
		}
	}
	if newest == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", newest.Major(), newest.Minor(), newest.Patch())
}

// Unrun says whether no node has run target yet: newest (status.newestNodeVersion) is known
// and older. While so, spec.managed.version may go back to newest (the admission rule).
func Unrun(newest, target string) bool {
	n, errNewest := version.ParseGeneric(newest)
	t, errTarget := version.ParseGeneric(target)
	return errNewest == nil && errTarget == nil && n.LessThan(t)
}

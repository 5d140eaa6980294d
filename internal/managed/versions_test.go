package managed

import "testing"

func TestNewestNodeVersion(t *testing.T) {
	for _, c := range []struct {
		name     string
		recorded string
		running  []string
		want     string
	}{
		{"first sight", "", []string{"3.5.0", "3.5.0"}, "3.5.0"},
		{"mid-upgrade: the newer", "3.5.0", []string{"3.5.0", "3.6.0"}, "3.6.0"},
		{"never goes down: the newer node left", "3.6.0", []string{"3.5.0"}, "3.6.0"},
		{"compared as versions, not strings", "3.9.0", []string{"3.10.0"}, "3.10.0"},
		{"a build suffix is dropped", "", []string{"3.6.0-SNAPSHOT"}, "3.6.0"},
		{"nothing that parses", "", []string{"", "x"}, ""},
		{"no node answered: what was recorded", "3.6.0", nil, "3.6.0"},
	} {
		if got := NewestNodeVersion(c.recorded, c.running); got != c.want {
			t.Errorf("%s: NewestNodeVersion(%q, %q) = %q, want %q", c.name, c.recorded, c.running, got, c.want)
		}
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/version"
)

func TestVersionCommandSaysTheRelease(t *testing.T) {
	cmd := newVersionCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "vectorpilot "+version.Version+", ") {
		t.Errorf("version printed %q", out.String())
	}
}

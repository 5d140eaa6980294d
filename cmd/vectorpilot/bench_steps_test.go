package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCAFromEnv: the steps trust the CA file the Workflow mounts; an optional volume whose
// source is absent leaves no file, and then the system's roots apply.
func TestCAFromEnv(t *testing.T) {
	dir := t.TempDir()
	pem := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env, want string
	}{
		{"unset", "", ""},
		{"mounted", pem, "-----BEGIN CERTIFICATE-----\n"},
		{"optional source absent", filepath.Join(dir, "missing", "ca.crt"), ""},
	} {
		t.Setenv("OPENSEARCH_CA_FILE", tc.env)
		got, err := caFromEnv()
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

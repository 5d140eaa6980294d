package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCAFromEnv: the steps trust the CA files the Workflow mounts; an optional source that
// is absent leaves no file, and with none the system's roots apply.
func TestCAFromEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "configmap.crt"), []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env, want string
	}{
		{"unset", "", ""},
		{"mounted", dir, "-----BEGIN CERTIFICATE-----\n"},
		{"optional sources absent", t.TempDir(), ""},
	} {
		t.Setenv("OPENSEARCH_CA_DIR", tc.env)
		got, err := caFromEnv()
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

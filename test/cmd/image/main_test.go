package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
)

// TestWritesTheDockerfilesImage: the archive holds one image, tagged as asked, with the
// Dockerfile's user, entrypoint and command and the binary at the Dockerfile's path.
func TestWritesTheDockerfilesImage(t *testing.T) {
	testgate.Integration(t, "Go builds of the operator")
	root := testsupport.Root(t)
	t.Chdir(root)
	out := filepath.Join(t.TempDir(), "image.tar")
	const ref = "registry.example.com/team/vectorpilot:0.1.0"
	if err := write(out, ref); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("the archive has no image %s: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	df, err := images.ParseDockerfile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != df.User || !slices.Equal(cfg.Config.Entrypoint, df.Entrypoint) || !slices.Equal(cfg.Config.Cmd, df.Cmd) {
		t.Errorf("config %+v, want the Dockerfile's %+v", cfg.Config, df)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers (%v), want the base and the binary", len(layers), err)
	}
	if write(filepath.Join(t.TempDir(), "x.tar"), "") == nil {
		t.Error("an image without a name was written")
	}
}

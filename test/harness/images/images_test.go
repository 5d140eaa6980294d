package images

import (
	"archive/tar"
	"crypto/sha256"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOperatorImageIsWhatTheDockerfileSays reads the repository's Dockerfile, the one
// definition of the operator image.
func TestOperatorImageIsWhatTheDockerfileSays(t *testing.T) {
	df, err := ParseDockerfile(filepath.Join("..", "..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if df.User != "65532:65532" || !slices.Equal(df.Entrypoint, []string{"/vectorpilot"}) || !slices.Equal(df.Cmd, []string{"manager"}) ||
		df.CopyFrom != "/out/vectorpilot" || df.CopyTo != "/vectorpilot" {
		t.Errorf("parsed %+v", df)
	}
	for _, bad := range []string{
		"FROM golang AS build\nRUN go build -o /out/x .\nFROM scratch\nCOPY --from=build /out/x /x\nUSER 1\nENTRYPOINT /x\n",
		"FROM scratch\nUSER 1\nENTRYPOINT [\"/x\"]\n",
	} {
		path := filepath.Join(t.TempDir(), "Dockerfile")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseDockerfile(path); err == nil {
			t.Errorf("accepted a Dockerfile the builder cannot follow:\n%s", bad)
		}
	}
}

// TestLayersAreReproducibleAndOwned: the same inputs give the same bytes, and an Owner is
// applied to every entry while files keep their content.
func TestLayersAreReproducibleAndOwned(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "bin", "tool"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/tool", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	digest := func() ([32]byte, []*tar.Header) {
		path := filepath.Join(t.TempDir(), "layer.tar")
		if err := WriteLayer(path, Tree{Source: src, Target: "usr/share/app", Owner: &Owner{UID: 1000, GID: 1000}}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var hdrs []*tar.Header
		for _, e := range layerEntries(t, path) {
			hdrs = append(hdrs, e.hdr)
		}
		return sha256.Sum256(data), hdrs
	}
	first, hdrs := digest()
	second, _ := digest()
	if first != second {
		t.Error("the same inputs gave two different layers")
	}
	var names []string
	for _, h := range hdrs {
		names = append(names, h.Name)
		if h.Name != "usr/" && h.Name != "usr/share/" && (h.Uid != 1000 || h.Gid != 1000) {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
	}
	want := []string{"usr/", "usr/share/", "usr/share/app/", "usr/share/app/bin/", "usr/share/app/bin/tool", "usr/share/app/link"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
}

// TestLinksOutOfATreeAreResolved: a tree placed below the image's root (a JDK whose conf/
// files link into /etc) keeps its links within the tree, gets a file a link out of it
// names as that file, and leaves out a link out of it to anything else.
func TestLinksOutOfATreeAreResolved(t *testing.T) {
	outside, src := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "java.security"), []byte("policy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "release"), []byte("17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		"conf/java.security": filepath.Join(outside, "java.security"),
		"conf/relative":      filepath.Join("..", "..", filepath.Base(outside), "java.security"),
		"docs":               outside,
		"conf/release":       "../release",
	} {
		if err := os.Symlink(to, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "layer.tar")
	if err := WriteLayer(path, Tree{Source: src, Target: "opt/jdk"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range layerEntries(t, path) {
		switch e.hdr.Typeflag {
		case tar.TypeSymlink:
			got[e.hdr.Name] = "-> " + e.hdr.Linkname
		case tar.TypeReg:
			got[e.hdr.Name] = e.body
		}
	}
	// t.TempDir's folders are siblings: conf/relative climbs out of src into outside.
	want := map[string]string{"opt/jdk/release": "17\n", "opt/jdk/conf/release": "-> ../release",
		"opt/jdk/conf/java.security": "policy\n", "opt/jdk/conf/relative": "policy\n"}
	if !maps.Equal(got, want) {
		t.Errorf("layer entries %v, want %v", got, want)
	}
}

// layerEntry is one entry of a layer tar: its header and, for a file, its content.
type layerEntry struct {
	hdr  *tar.Header
	body string
}

// layerEntries reads the layer tar at path.
func layerEntries(t *testing.T, path string) []layerEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []layerEntry
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, layerEntry{hdr: h, body: string(body)})
	}
}

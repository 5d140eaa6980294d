// Package images builds the container images the real node runs — the operator, the pod
// sandbox (pause) and OpenSearch with k-NN — without Docker and without a registry, with
// go-containerregistry, and writes them as docker-archive tarballs containerd imports.
package images

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Owner is who a layer's files belong to; nil keeps the ownership found on disk.
type Owner struct{ UID, GID int }

// Tree is one part of a layer: the file or folder Source on this machine placed at Target
// in the image.
type Tree struct {
	Source, Target string
	Owner          *Owner
	// Mode, when not zero, replaces the permission bits of a single file.
	Mode os.FileMode
}

// epoch makes layers reproducible: the same inputs give the same digest.
var epoch = time.Unix(0, 0)

// WriteLayer writes the uncompressed layer tar of trees to path.
func WriteLayer(path string, trees ...Tree) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	for _, t := range trees {
		if err := addTree(tw, t, dirs); err != nil {
			f.Close()
			return fmt.Errorf("layer %s: %s: %w", filepath.Base(path), t.Source, err)
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// addTree writes t's parents (once per layer), then t itself, walking folders in name order.
func addTree(tw *tar.Writer, t Tree, dirs map[string]bool) error {
	target := strings.Trim(filepath.ToSlash(t.Target), "/")
	parts := strings.Split(target, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/") + "/"
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	return filepath.WalkDir(t.Source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(t.Source, p)
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
			if target != "" && leaves(t.Source, p, link) {
				// Placed below the image's root, a link out of the tree dangles (Debian's JDK
				// links its conf/ files into /etc): a file it names goes in as the file, any
				// other target is left out.
				resolved, err := os.Stat(p)
				if err != nil || !resolved.Mode().IsRegular() {
					return nil
				}
				info, link = resolved, ""
			}
		}
		if !info.Mode().IsRegular() && !info.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
			return nil // devices, sockets and pipes do not belong in an image
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		switch {
		case rel == "." && target == "":
			return nil // the image's root itself
		case rel == ".":
			hdr.Name = target
		case target == "":
			hdr.Name = filepath.ToSlash(rel)
		default:
			hdr.Name = target + "/" + filepath.ToSlash(rel)
		}
		if info.IsDir() {
			hdr.Name += "/"
			if dirs[hdr.Name] {
				return nil
			}
			dirs[hdr.Name] = true
		}
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if t.Owner != nil {
			hdr.Uid, hdr.Gid = t.Owner.UID, t.Owner.GID
		}
		if t.Mode != 0 && info.Mode().IsRegular() {
			hdr.Mode = int64(t.Mode)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
}

// leaves says whether the symlink at p, pointing at link, points outside the tree at root.
func leaves(root, p, link string) bool {
	if filepath.IsAbs(link) {
		return true
	}
	rel, err := filepath.Rel(root, filepath.Join(filepath.Dir(p), link))
	return err != nil || rel == ".." || strings.HasPrefix(rel, "../")
}

// Image is an image to build: layers (uncompressed tar files, bottom first) and config.
type Image struct {
	Ref    string
	Layers []string
	Config v1.Config
}

// WriteArchive writes img as a docker-archive tarball at path.
func WriteArchive(path string, img Image) error {
	ref, err := name.NewTag(img.Ref)
	if err != nil {
		return err
	}
	var layers []v1.Layer
	for _, l := range img.Layers {
		layer, err := tarball.LayerFromFile(l, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
		if err != nil {
			return err
		}
		layers = append(layers, layer)
	}
	image, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return err
	}
	file, err := image.ConfigFile()
	if err != nil {
		return err
	}
	file = file.DeepCopy()
	file.Config = img.Config
	// The binaries in it are built for this machine.
	file.OS, file.Architecture, file.Created = "linux", runtime.GOARCH, v1.Time{Time: epoch}
	if image, err = mutate.ConfigFile(image, file); err != nil {
		return err
	}
	if err := tarball.WriteToFile(path+".tmp", ref, image); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// Fingerprint is a short hash of the named inputs: file contents (folders by their files'
// names, sizes and modification times) and literal strings, to key cached builds.
func Fingerprint(paths []string, literals ...string) (string, error) {
	h := sha256.New()
	for _, l := range literals {
		fmt.Fprintf(h, "%s\x00", l)
	}
	for _, p := range paths {
		var entries []string
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			entries = append(entries, fmt.Sprintf("%s %d %d", q, info.Size(), info.ModTime().UnixNano()))
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(entries)
		for _, e := range entries {
			fmt.Fprintf(h, "%s\n", e)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Archive returns bin/images/<image>-<fingerprint of inputs>.tar, building it with build
// (given a scratch folder for its layers) only when no archive of those inputs exists.
func Archive(root, image string, inputs []string, literals []string, build func(work string) (Image, error)) (string, error) {
	fp, err := Fingerprint(inputs, literals...)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "images")
	path := filepath.Join(dir, image+"-"+fp+".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(dir, image+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	img, err := build(work)
	if err != nil {
		return "", err
	}
	if err := WriteArchive(path, img); err != nil {
		return "", err
	}
	// Older archives of the same image are stale.
	old, _ := filepath.Glob(filepath.Join(dir, image+"-*.tar"))
	for _, o := range old {
		if o != path {
			_ = os.Remove(o)
		}
	}
	return path, nil
}

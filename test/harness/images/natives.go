package images

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// mount says which folder of this machine provides an image's folder.
type mount struct{ Target, Source string }

// imageFS reads an image's file tree before its layers are written: each image path is
// served by the mount with the longest matching Target.
type imageFS []mount

// host is the file of this machine that provides image path p.
func (fs imageFS) host(p string) string {
	best := -1
	for i, m := range fs {
		if (p == m.Target || strings.HasPrefix(p, strings.TrimSuffix(m.Target, "/")+"/")) && (best < 0 || len(m.Target) > len(fs[best].Target)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return filepath.Join(fs[best].Source, strings.TrimPrefix(p, fs[best].Target))
}

// holdsMount says whether image folder dir is a parent of a mount's target.
func (fs imageFS) holdsMount(dir string) bool {
	for _, m := range fs {
		if strings.HasPrefix(m.Target, strings.TrimSuffix(dir, "/")+"/") {
			return true
		}
	}
	return false
}

// resolve follows the symbolic links of image path p inside the image, as the dynamic
// linker in a container would: an absolute target is the image's, never this machine's.
func (fs imageFS) resolve(p string) (string, error) {
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
		at, linked := "/", false
		for i, part := range parts {
			next := path.Join(at, part)
			fi, err := os.Lstat(fs.host(next))
			if err != nil && fs.holdsMount(next) {
				at = next // a folder the layers make for a mount below it
				continue
			}
			if err != nil {
				return "", err
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				at = next
				continue
			}
			target, err := os.Readlink(fs.host(next))
			if err != nil {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(at, target)
			}
			p, linked = path.Join(append([]string{target}, parts[i+1:]...)...), true
			break
		}
		if !linked {
			return at, nil
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

// linkerDirs is where the image's dynamic linker looks after RUNPATH and
// LD_LIBRARY_PATH: the folders of its /etc/ld.so.conf (what ldconfig caches) and the
// trusted defaults.
func (fs imageFS) linkerDirs() []string {
	var dirs []string
	var read func(file string, depth int)
	read = func(file string, depth int) {
		data, err := os.ReadFile(fs.host(file))
		if err != nil || depth > 4 {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			if pattern, ok := strings.CutPrefix(line, "include "); ok {
				matches, _ := filepath.Glob(fs.host(strings.TrimSpace(pattern)))
				slices.Sort(matches)
				for _, m := range matches {
					read(path.Join(path.Dir(strings.TrimSpace(pattern)), filepath.Base(m)), depth+1)
				}
			} else if strings.HasPrefix(line, "/") {
				dirs = append(dirs, line)
			}
		}
	}
	read("/etc/ld.so.conf", 0)
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// unresolvedLibraries checks every shared library in the image folder dir and, in turn,
// every library they link: each needed library must be found where the image's dynamic
// linker looks (ldLibraryPath, the object's RUNPATH with $ORIGIN, then the image's linker
// folders). It returns one line per library that would fail to load, naming what it needs.
func (fs imageFS) unresolvedLibraries(dir string, ldLibraryPath []string) ([]string, error) {
	entries, err := os.ReadDir(fs.host(dir))
	if err != nil {
		return nil, err
	}
	defaults := fs.linkerDirs()
	var queue []string
	seen := map[string]bool{}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".so") {
			queue = append(queue, path.Join(dir, e.Name()))
		}
	}
	var missing []string
	for len(queue) > 0 {
		object := queue[0]
		queue = queue[1:]
		file, err := fs.resolve(object)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, object+" is a link to nothing in the image")
			continue
		}
		if err != nil {
			return nil, err
		}
		if seen[file] {
			continue
		}
		seen[file] = true
		f, err := elf.Open(fs.host(file))
		var notELF *elf.FormatError
		if errors.As(err, &notELF) {
			continue // nothing the linker loads
		}
		if err != nil {
			return nil, err
		}
		needed, err := f.ImportedLibraries()
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		if len(runpath) == 0 {
			runpath, _ = f.DynString(elf.DT_RPATH)
		}
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", object, err)
		}
		var searched []string
		for _, rp := range runpath {
			for _, d := range strings.Split(rp, ":") {
				searched = append(searched, strings.NewReplacer("$ORIGIN", path.Dir(file), "${ORIGIN}", path.Dir(file)).Replace(d))
			}
		}
		var dirs []string // in the linker's order (LD_LIBRARY_PATH before RUNPATH), each once
		for _, d := range slices.Concat(ldLibraryPath, searched, defaults) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		for _, name := range needed {
			found := ""
			for _, d := range dirs {
				if _, err := fs.resolve(path.Join(d, name)); err == nil {
					found = path.Join(d, name)
					break
				}
			}
			if found == "" {
				missing = append(missing, fmt.Sprintf("%s needs %s, which is in none of %s", object, name, strings.Join(dirs, ":")))
				continue
			}
			queue = append(queue, found)
		}
	}
	return missing, nil
}

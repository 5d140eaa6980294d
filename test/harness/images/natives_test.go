package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sharedObject builds a shared library named name in dir that links the libraries of
// needs (found in dir): no C library, so the only dependencies are the ones named.
func sharedObject(t *testing.T, dir, name string, needs ...string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "x.c")
	if err := os.WriteFile(src, []byte("int "+strings.NewReplacer(".", "_", "-", "_").Replace(name)+"(void) { return 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-shared", "-fPIC", "-nostdlib", "-Wl,--no-as-needed", "-o", filepath.Join(dir, name), src, "-L", dir}
	for _, n := range needs {
		args = append(args, "-l:"+n)
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
}

// TestUnresolvedLibrariesFollowsTheImagesLinker: a library is found where the image's
// dynamic linker would find it (its own folder by LD_LIBRARY_PATH, the folders of the
// image's ld.so.conf, through the image's symbolic links, absolute ones included) and
// only there: never on this machine, and never a folder this machine's RUNPATH names.
func TestUnresolvedLibrariesFollowsTheImagesLinker(t *testing.T) {
	build := t.TempDir()
	sharedObject(t, build, "libdeeper.so.1")
	sharedObject(t, build, "libomp.so.5", "libdeeper.so.1")
	sharedObject(t, build, "libknn.so", "libomp.so.5")

	for _, tc := range []struct {
		name string
		// lay places libomp.so.5 (and libdeeper.so.1) in the image's root filesystem
		// (rootfs) or the plugin's folder (lib); it may leave them out.
		lay     func(t *testing.T, rootfs, lib string)
		missing []string
	}{
		{"nothing but the library", func(t *testing.T, rootfs, lib string) {}, []string{"/opt/app/lib/libknn.so needs libomp.so.5"}},
		{"beside it, its own dependency not", func(t *testing.T, rootfs, lib string) {
			copyFile(t, filepath.Join(build, "libomp.so.5"), filepath.Join(lib, "libomp.so.5"))
		}, []string{"/opt/app/lib/libomp.so.5 needs libdeeper.so.1"}},
		{"beside it and in the linker's folder through /lib -> usr/lib", func(t *testing.T, rootfs, lib string) {
			copyFile(t, filepath.Join(build, "libomp.so.5"), filepath.Join(lib, "libomp.so.5"))
			copyFile(t, filepath.Join(build, "libdeeper.so.1"), filepath.Join(rootfs, "usr", "lib", "x86_64-linux-gnu", "libdeeper.so.1"))
		}, nil},
		{"an absolute link that is the image's", func(t *testing.T, rootfs, lib string) {
			copyFile(t, filepath.Join(build, "libomp.so.5"), filepath.Join(rootfs, "usr", "lib", "llvm", "libomp.so.5"))
			copyFile(t, filepath.Join(build, "libdeeper.so.1"), filepath.Join(rootfs, "usr", "lib", "x86_64-linux-gnu", "libdeeper.so.1"))
			symlink(t, "/usr/lib/llvm/libomp.so.5", filepath.Join(rootfs, "usr", "lib", "x86_64-linux-gnu", "libomp.so.5"))
		}, nil},
		{"an absolute link to this machine's file", func(t *testing.T, rootfs, lib string) {
			symlink(t, filepath.Join(build, "libomp.so.5"), filepath.Join(lib, "libomp.so.5"))
		}, []string{"/opt/app/lib/libknn.so needs libomp.so.5", "/opt/app/lib/libomp.so.5 is a link to nothing in the image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rootfs, app := t.TempDir(), t.TempDir()
			lib := filepath.Join(app, "lib")
			for _, d := range []string{filepath.Join(rootfs, "usr", "lib", "x86_64-linux-gnu"), filepath.Join(rootfs, "etc", "ld.so.conf.d"), lib} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			symlink(t, "usr/lib", filepath.Join(rootfs, "lib"))
			writeFile(t, filepath.Join(rootfs, "etc", "ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n")
			writeFile(t, filepath.Join(rootfs, "etc", "ld.so.conf.d", "multiarch.conf"), "# Multiarch support\n/lib/x86_64-linux-gnu\n")
			copyFile(t, filepath.Join(build, "libknn.so"), filepath.Join(lib, "libknn.so"))
			tc.lay(t, rootfs, lib)

			missing, err := imageFS{{"/", rootfs}, {"/opt/app", app}}.unresolvedLibraries("/opt/app/lib", []string{"/opt/app/lib"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range missing {
				got = append(got, strings.SplitN(m, ",", 2)[0])
			}
			if !slices.Equal(got, tc.missing) {
				t.Errorf("unresolved %q, want %q", missing, tc.missing)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(data))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

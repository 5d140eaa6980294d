// Command image is `make image`: the operator's image as a docker-archive tarball, built as
// the Dockerfile says (its go build line and final stage) without a Docker engine, by the
// same builder the end-to-end tests run the chart with (test/harness/images). `docker load -i`,
// `podman load -i`, `kind load image-archive` and `crane push FILE REF` take it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
)

func main() {
	out := flag.String("o", "bin/vectorpilot-image.tar", "the archive to write")
	ref := flag.String("image", "", "the image's name and tag, as the chart's image.repository and image.tag will name it")
	flag.Parse()
	if err := write(*out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s\n  load it:  docker load -i %s   (or: kind load image-archive %s)\n  push it:  crane push %s %s\n",
		*out, *ref, *out, *out, *out, *ref)
}

// write builds the operator image from the repository in the working folder and writes it
// to out, tagged ref.
func write(out, ref string) error {
	if ref == "" {
		return fmt.Errorf("-image is required, e.g. registry.example.com/vectorpilot:0.1.0")
	}
	root, err := devenv.RepoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "vectorpilot-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	img, err := images.Operator(root, work)
	if err != nil {
		return err
	}
	img.Ref = ref
	return images.WriteArchive(out, img)
}

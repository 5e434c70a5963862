// Command image builds Almoner's container image without a container
// engine (package deploy/image) into a `docker save` tarball, and prints
// its digest and how to load, push and deploy it. `make image` runs it:
//
//	go run ./cmd/image -root .. -ref ghcr.io/almoner/almoner:<commit> \
//		-out ../bin/almoner-image-<commit>.tar -revision <sha> -created <unix>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"github.com/almoner/almoner/deploy/image"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	root := fl.String("root", "..", "the repository's root (the Dockerfile's build context)")
	ref := fl.String("ref", "", "the image's reference, repository:tag (required)")
	out := fl.String("out", "", "the tarball to write (required)")
	binary := fl.String("binary", "", "a static Linux binary to use instead of building "+image.MainDir)
	arch := fl.String("arch", runtime.GOARCH, "GOARCH to build for")
	ca := fl.String("ca-certs", image.DefaultCACerts, "the PEM bundle of CA certificates to ship")
	created := fl.Int64("created", 0, "creation and file time, Unix seconds (the commit's: git log -1 --format=%ct)")
	revision := fl.String("revision", "", "label org.opencontainers.image.revision: the commit")
	version := fl.String("version", "", "label org.opencontainers.image.version (default: the tag)")
	source := fl.String("source", "", "label org.opencontainers.image.source: the repository's URL")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *ref == "" || *out == "" || fl.NArg() > 0 {
		fl.Usage()
		return errors.New("-ref and -out are required, and no arguments")
	}
	tag, err := name.NewTag(*ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("-ref: %w (want registry/repository:tag)", err)
	}
	if *version == "" {
		*version = tag.TagStr()
	}

	bin := *binary
	if bin == "" {
		tmp, err := os.MkdirTemp("", "almoner-image-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		bin = filepath.Join(tmp, "almoner")
		if err := image.BuildBinary(ctx, filepath.Join(*root, image.MainDir), bin, *arch); err != nil {
			return err
		}
	} else if err := image.CheckStatic(bin); err != nil {
		return err
	}

	img, err := image.Build(image.Options{
		Binary:   bin,
		Arch:     *arch,
		CACerts:  *ca,
		Created:  time.Unix(*created, 0),
		Revision: *revision,
		Version:  *version,
		Source:   *source,
	})
	if err != nil {
		return err
	}
	if err := image.Write(img, tag, *out); err != nil {
		return err
	}
	// The commands printed run from the repository's root, where make
	// does; bin/… reads better there than an absolute path.
	shown := *out
	absRoot, err1 := filepath.Abs(*root)
	absOut, err2 := filepath.Abs(*out)
	if rel, err := filepath.Rel(absRoot, absOut); err1 == nil && err2 == nil && err == nil && filepath.IsLocal(rel) {
		shown = rel
	}
	return report(stdout, img, tag, shown)
}

// report prints what an operator needs next: the digests by which tools
// name the image, its size, and the commands of docs/deploy.md.
func report(w io.Writer, img v1.Image, tag name.Tag, out string) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var size int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return err
		}
		size += n
	}
	_, err = fmt.Fprintf(w, `built %s into %s
  digest    %s (the manifest: what crane push gives the registry)
  image ID  %s (the config: what docker load and podman load report)
  size      %.1f MB compressed, %d layers
load it:  docker load -i %[2]s   (or podman load -i)
push it:  crane push %[2]s %[1]s
then in deploy/k8s/overlays/<env>: kustomize edit set image almoner=%[1]s
`, tag, out, digest, id, float64(size)/1e6, len(layers))
	return err
}

// Package image assembles Almoner's container image without a container
// engine and without pulling a base image, the way ko builds Go images:
// go-containerregistry writes the layers, config and manifest itself.
//
// The image holds what gcr.io/distroless/static-debian12:nonroot gives a
// static Go binary, and no more:
//
//   - /almoner, built as deploy/Dockerfile's build stage builds it
//     (BuildBinary);
//   - /etc/ssl/certs/ca-certificates.crt, for outbound HTTPS (webhook
//     deliveries, Stripe), copied from the build machine;
//   - /etc/passwd and /etc/group naming root, nobody and nonroot (65532),
//     nonroot's home /home/nonroot, and a world-writable /tmp (reports
//     spools tax-statement ZIPs there);
//
// with the runtime contract of deploy/Dockerfile's final stage: user
// 65532:65532, entrypoint /almoner, command serve --target=all, ports
// 8080, 9090 and 9464. Time-zone data is not a file of the image: the
// binary embeds it (time/tzdata, imported by the packages that load
// tenants' zones), so /usr/share/zoneinfo is not needed.
//
// Every timestamp is Options.Created and every byte is a function of the
// inputs, so the same binary and options give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// MainDir is the main package of the almoner binary, relative to the
// repository root (deploy/Dockerfile's build stage: cd cmd/almoner).
const MainDir = "cmd/almoner"

// DefaultCACerts is where Debian and Ubuntu keep the bundle of trusted CA
// certificates (package ca-certificates); distroless ships Debian's.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// The nonroot user of distroless, which deploy/k8s's runAsNonRoot pods
// run as: numeric, so the kubelet can verify it is not root.
const (
	nonrootUID = 65532
	nonrootGID = 65532
	user       = "65532:65532"
	home       = "/home/nonroot"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
)

// GoBuildEnv and GoBuildArgs are deploy/Dockerfile's build command
// (`CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/almoner .`),
// which TestDockerfile holds them to: CGO_ENABLED=0 makes a binary that
// needs no libc or dynamic loader, which the image does not have.
var GoBuildEnv = []string{"CGO_ENABLED=0"}

// GoBuildArgs returns the arguments of go for deploy/Dockerfile's build
// command writing the binary to out.
func GoBuildArgs(out string) []string {
	return []string{"build", "-trimpath", `-ldflags=-s -w`, "-o", out, "."}
}

// BuildBinary builds the main package in dir for linux/goarch into out,
// with deploy/Dockerfile's build command, and checks that the result is
// static.
func BuildBinary(ctx context.Context, dir, out, goarch string) error {
	cmd := exec.CommandContext(ctx, "go", GoBuildArgs(out)...)
	cmd.Dir = dir
	// GOOS is set because the image is Linux whatever the build machine
	// runs; GOARCH because the image's config names it.
	cmd.Env = append(append(os.Environ(), GoBuildEnv...), "GOOS=linux", "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	return CheckStatic(out)
}

// CheckStatic returns an error when the ELF binary at path needs a
// dynamic loader or shared libraries: the image has neither.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s needs a dynamic loader (built with cgo?); the image has none: build with CGO_ENABLED=0", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("%s links %v; the image has no shared libraries: build with CGO_ENABLED=0", path, libs)
	}
	return nil
}

// Options are the inputs of an image besides its files' contents.
type Options struct {
	// Binary is the static Linux binary that becomes /almoner.
	Binary string
	// Arch is the GOARCH Binary was built for (the config's architecture).
	Arch string
	// CACerts is the PEM bundle that becomes the image's
	// ca-certificates.crt; DefaultCACerts when empty.
	CACerts string
	// Created is the image's creation time and every file's modification
	// time: the commit's time, so that one commit gives one digest. The
	// zero time means the Unix epoch (ko's default), which tar can hold.
	Created time.Time
	// Revision, Version and Source are the OCI labels
	// org.opencontainers.image.revision (the commit), .version (the tag)
	// and .source (the repository's URL). Empty ones are left out.
	Revision, Version, Source string
}

// created is Options.Created in whole seconds (what tar headers hold),
// UTC, the Unix epoch when unset.
func (o Options) created() time.Time {
	if o.Created.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return o.Created.UTC().Truncate(time.Second)
}

// Build assembles the image: empty (FROM scratch), the config, a layer of
// base files and one with the binary. The base files change only with
// the CA bundle, so a registry that has the previous version's layer
// receives only the binary's.
func Build(opts Options) (v1.Image, error) {
	if opts.Arch == "" {
		return nil, errors.New("image: Options.Arch is empty")
	}
	created := opts.created()
	ca, err := readCACerts(opts.CACerts)
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: the binary: %w", err)
	}
	base, err := layer(baseFiles(ca), created)
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{{name: "almoner", mode: 0o755, body: bin}}, created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.ConfigFile(empty.Image, ConfigFile(opts))
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "almoner image: /etc/passwd, /etc/group, " + caPath + ", /tmp, " + home}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "almoner image: /almoner (CGO_ENABLED=0 go build -trimpath -ldflags=\"-s -w\")"}},
	)
}

// ConfigFile returns the image's config before its layers are added:
// deploy/Dockerfile's runtime contract (USER, EXPOSE, ENTRYPOINT, CMD),
// what distroless/static:nonroot adds to it (PATH, SSL_CERT_FILE, the
// working directory), and the OCI labels.
func ConfigFile(opts Options) *v1.ConfigFile {
	labels := map[string]string{}
	for k, v := range map[string]string{
		"org.opencontainers.image.revision": opts.Revision,
		"org.opencontainers.image.version":  opts.Version,
		"org.opencontainers.image.source":   opts.Source,
	} {
		if v != "" {
			labels[k] = v
		}
	}
	return &v1.ConfigFile{
		Architecture: opts.Arch,
		OS:           "linux",
		Created:      v1.Time{Time: opts.created()},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       user,
			Entrypoint: []string{"/almoner"},
			Cmd:        []string{"serve", "--target=all"},
			// The gateway's HTTP, the services' gRPC, and metrics
			// (docs/deploy.md).
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}, "9464/tcp": {}},
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=" + caPath,
			},
			WorkingDir: home,
			Labels:     labels,
		},
	}
}

// readCACerts reads the CA bundle and refuses one with no certificate: an
// image without them fails every webhook delivery and Stripe call, at
// run time, far from the build that made it.
func readCACerts(path string) ([]byte, error) {
	if path == "" {
		path = DefaultCACerts
	}
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator's CA bundle, named by flag
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("image: no CA certificates at %s (the image needs them for outbound HTTPS: webhook deliveries, Stripe): apt-get install ca-certificates, or name a PEM bundle with -ca-certs", path)
	}
	if err != nil {
		return nil, fmt.Errorf("image: CA certificates: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("image: %s holds no PEM certificate: reinstall ca-certificates (apt-get install --reinstall ca-certificates), or name a PEM bundle with -ca-certs", path)
	}
	return b, nil
}

// file is one entry of a layer: a directory when body is nil and dir is
// set, else a regular file. Owners are root unless uid/gid say otherwise.
type file struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	body     []byte
}

// baseFiles are distroless/static:nonroot's files that a static Go binary
// uses. /etc/nsswitch.conf is left out: without it Go's resolver reads
// /etc/hosts before DNS, what distroless's "hosts: files dns" says.
func baseFiles(ca []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:" + strconv.Itoa(nonrootUID) + ":" + strconv.Itoa(nonrootGID) + ":nonroot:" + home + ":/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\nnonroot:x:" + strconv.Itoa(nonrootGID) + ":\n"
	return []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: caPath[1:], mode: 0o644, body: ca},
		{name: "home/", dir: true, mode: 0o755},
		{name: home[1:] + "/", dir: true, mode: 0o700, uid: nonrootUID, gid: nonrootGID},
		// Sticky and world-writable, as on any Unix: os.TempDir() for
		// every user. (A pod with a read-only root filesystem needs a
		// volume mounted there.)
		{name: "tmp/", dir: true, mode: 0o1777},
	}
}

// layer makes a gzip-compressed layer of files, in their order, each with
// the modification time created. USTAR headers carry no access or change
// times, nor anything of the build machine's users.
func layer(files []file, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: created,
			Format:  tar.FormatUSTAR,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: layer entry %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, fmt.Errorf("image: layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	// The layer is read several times (digest, diff ID, the write):
	// compressing it once and keeping the result is worth the memory.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithCompressedCaching)
}

// Write writes img as a `docker save` tarball at path, tagged ref, which
// docker load, podman load, crane push and skopeo copy
// docker-archive:… read. It writes a temporary file beside path and
// renames it, so that path is never half an image.
//
// The image keeps Docker's media types (empty.Image's): a tarball read
// back (crane push, tarball.ImageFromPath) is described with them, so
// the digest Build computes is the one a registry receives.
func Write(img v1.Image, ref name.Tag, path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("image: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

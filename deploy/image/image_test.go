package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/deploy/image"
	"github.com/almoner/almoner/deploy/image/imagetest"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// probe stands in for almoner: small, so the image is built in a
// second. Run with "check" it verifies, as the user the image runs as,
// what Almoner relies on in the image: a name for its uid in
// /etc/passwd, CA certificates that Go's own discovery finds, and a
// writable os.TempDir().
const probe = `package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/user"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("hello")
		return
	}
	if err := check(); err != nil {
		fmt.Println("check:", err)
		os.Exit(1)
	}
}

func check() error {
	u, err := user.Current()
	if err != nil {
		return err
	}
	b, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		return err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return fmt.Errorf("no PEM block in the CA bundle")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	// No Roots: the system's, as an http.Client to a webhook finds them.
	if _, err := ca.Verify(x509.VerifyOptions{}); err != nil {
		return fmt.Errorf("the bundle's CA is not a system root: %w", err)
	}
	f, err := os.CreateTemp("", "spool-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString("spooled")
	_ = f.Close()
	_ = os.Remove(f.Name())
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	fmt.Printf("uid=%d gid=%d user=%s home=%s wd=%s\n", os.Getuid(), os.Getgid(), u.Username, u.HomeDir, wd)
	return nil
}
`

// buildProbe builds probe with image.BuildBinary, as the image's binary
// is built.
func buildProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(probe), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOWORK", "off") // the probe is a module of its own
	bin := filepath.Join(t.TempDir(), "probe")
	if err := image.BuildBinary(t.Context(), dir, bin, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	return bin
}

// entry is what a layer says of one file.
type entry struct {
	name     string
	typ      byte
	mode     int64
	uid, gid int
}

func TestBuild(t *testing.T) {
	bin := buildProbe(t)
	created := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	opts := image.Options{
		Binary:   bin,
		Arch:     runtime.GOARCH,
		CACerts:  imagetest.CABundle(t),
		Created:  created,
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Version:  "0123456789ab",
		Source:   "https://github.com/almoner/almoner",
	}
	tag, err := name.NewTag("ghcr.io/almoner/almoner:0123456789ab", name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// Two builds of the same inputs: one digest, one tarball.
	var digests []v1.Hash
	var sums [][32]byte
	for i := range 2 {
		img, err := image.Build(opts)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, []string{"a.tar", "b.tar"}[i])
		if err := image.Write(img, tag, path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		digests, sums = append(digests, d), append(sums, sha256.Sum256(b))
	}
	if digests[0] != digests[1] || sums[0] != sums[1] {
		t.Fatalf("two builds of the same inputs differ: digests %v, tarball sha256 %x", digests, sums)
	}

	// Read back as crane push or docker load would: under its tag, with
	// the digest Build computed.
	img, err := tarball.ImageFromPath(filepath.Join(dir, "a.tar"), &tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := img.Digest(); err != nil || d != digests[0] {
		t.Fatalf("the tarball's image has digest %v (%v), Build computed %v", d, err, digests[0])
	}
	// Digests, diff IDs, sizes and media types agree with the bytes.
	if err := validate.Image(img); err != nil {
		t.Errorf("validate: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 2 {
		t.Errorf("write left %v in its folder (%v), want a.tar and b.tar only", entries, err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User:         "65532:65532",
		Entrypoint:   []string{"/almoner"},
		Cmd:          []string{"serve", "--target=all"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}, "9464/tcp": {}},
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir:   "/home/nonroot",
		Labels: map[string]string{
			"org.opencontainers.image.revision": opts.Revision,
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.source":   opts.Source,
		},
	}
	if !reflect.DeepEqual(cf.Config, want) {
		t.Errorf("config\n%+v\nwant\n%+v", cf.Config, want)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Equal(created) || len(cf.History) != 2 || len(cf.RootFS.DiffIDs) != 2 {
		t.Errorf("os %q, architecture %q, created %v, %d history entries, %d diff IDs: want linux, %s, %v, 2, 2",
			cf.OS, cf.Architecture, cf.Created, len(cf.History), len(cf.RootFS.DiffIDs), runtime.GOARCH, created)
	}

	// The layers' files: distroless/static:nonroot's that a static Go
	// binary uses, then the binary, executable and readable by anyone
	// (the image runs it as 65532, not its owner).
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(opts.CACerts)
	if err != nil {
		t.Fatal(err)
	}
	probeBytes, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	wantLayers := [][]entry{
		{
			{"etc/", tar.TypeDir, 0o755, 0, 0},
			{"etc/group", tar.TypeReg, 0o644, 0, 0},
			{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
			{"etc/ssl/", tar.TypeDir, 0o755, 0, 0},
			{"etc/ssl/certs/", tar.TypeDir, 0o755, 0, 0},
			{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, 0},
			{"home/", tar.TypeDir, 0o755, 0, 0},
			{"home/nonroot/", tar.TypeDir, 0o700, 65532, 65532},
			{"tmp/", tar.TypeDir, 0o1777, 0, 0},
		},
		{{"almoner", tar.TypeReg, 0o755, 0, 0}},
	}
	if len(layers) != len(wantLayers) {
		t.Fatalf("%d layers, want %d", len(layers), len(wantLayers))
	}
	for i, l := range layers {
		got, contents := readLayer(t, l, created)
		if !slices.Equal(got, wantLayers[i]) {
			t.Errorf("layer %d:\n%v\nwant\n%v", i, got, wantLayers[i])
		}
		for path, want := range map[string][]byte{"etc/ssl/certs/ca-certificates.crt": ca, "almoner": probeBytes} {
			if b, ok := contents[path]; ok && !bytes.Equal(b, want) {
				t.Errorf("layer %d: %s is not the file it was built from", i, path)
			}
		}
		if b, ok := contents["etc/passwd"]; ok && !strings.Contains(string(b), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:") {
			t.Errorf("/etc/passwd has no nonroot 65532:\n%s", b)
		}
	}

	// Run as a container engine would: chrooted into the image's files,
	// as 65532, with the image's environment; nothing of the host.
	root := t.TempDir()
	imagetest.Unpack(t, img, root)
	if !imagetest.CanChroot() {
		out, err := imagetest.Run(t.Context(), cf.Config, root, "/almoner")
		if err != nil || out != "hello\n" {
			t.Fatalf("/almoner: %v\n%s", err, out)
		}
		t.Log("not root: ran /almoner outside a chroot, as the current user; the checks as 65532 need root")
		return
	}
	out, err := imagetest.Run(t.Context(), cf.Config, root, "/almoner", "check")
	if err != nil {
		t.Fatalf("/almoner check in the image: %v\n%s", err, out)
	}
	if want := "uid=65532 gid=65532 user=nonroot home=/home/nonroot wd=/home/nonroot\n"; out != want {
		t.Errorf("/almoner check in the image: %q, want %q", out, want)
	}
}

// readLayer returns a layer's entries and its regular files' contents,
// and fails the test on an entry whose time is not created.
func readLayer(t *testing.T, l v1.Layer, created time.Time) ([]entry, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	var entries []entry
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, contents
		}
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid})
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: modified %v, want the image's creation time %v", h.Name, h.ModTime, created)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			contents[h.Name] = b
		}
	}
}

// TestCACerts: an image without CA certificates would fail every webhook
// delivery at run time; the build fails instead, naming the package.
func TestCACerts(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "empty.crt")
	if err := os.WriteFile(notPEM, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(t.TempDir(), "missing.crt"): "apt-get install ca-certificates",
		notPEM: "holds no PEM certificate",
	} {
		_, err := image.Build(image.Options{Binary: "/nonexistent", Arch: runtime.GOARCH, CACerts: path})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CA bundle %s: %v, want an error saying %q", path, err, want)
		}
	}
}

// TestCheckStatic: a binary that needs a dynamic loader is refused (the
// image has none). BuildBinary's probe in TestBuild is the static case.
func TestCheckStatic(t *testing.T) {
	// Debian's /bin/sh (dash) links libc, as most of the host's programs.
	if err := image.CheckStatic("/bin/sh"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("CheckStatic(/bin/sh) = %v: want it refused as dynamic", err)
	}
}

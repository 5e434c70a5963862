// Package imagetest runs an image's program as a container engine would,
// without one: the image's filesystem unpacked into a directory, the
// process chrooted there, as the config's user, with the config's
// environment. Nothing of the host is visible to it, so a program that
// runs this way needs no host library or file. The tests of deploy/image
// and deploy use it.
package imagetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// CABundle writes a PEM bundle of one self-signed CA certificate, made
// for the test, and returns its path: an image built from it needs no CA
// bundle on the machine that runs the test.
func CABundle(t testing.TB) string {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "almoner image test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// CanChroot reports whether Run can confine the program: chroot and
// switching to the image's user need root. Without it Run starts the
// program from the unpacked directory as the current user.
func CanChroot() bool { return os.Geteuid() == 0 }

// Unpack writes img's flattened filesystem (its layers applied in order)
// into dir, with the modes of the image and, when CanChroot, its owners.
func Unpack(t testing.TB, img v1.Image, dir string) {
	t.Helper()
	// dir is the container's /: every user must be able to traverse it.
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // G302: the root of a test's unpacked image
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("entry %q leaves the image's root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o700)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				err = writeFile(path, tr)
			}
		default:
			t.Fatalf("entry %q: type %q, want a directory or a regular file", h.Name, h.Typeflag)
		}
		if err == nil {
			err = os.Chmod(path, h.FileInfo().Mode())
		}
		if err == nil && CanChroot() {
			err = os.Lchown(path, h.Uid, h.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // G304: a path inside the test's unpacked image
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Run runs args (args[0] a path in the image) in the image unpacked at
// dir: chrooted there as the config's User with the config's Env and
// WorkingDir when CanChroot, else as the current user from dir. It
// returns the program's combined output.
func Run(ctx context.Context, cfg v1.Config, dir string, args ...string) (string, error) {
	if !CanChroot() {
		cmd := exec.CommandContext(ctx, filepath.Join(dir, args[0]), args[1:]...)
		cmd.Env = cfg.Env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	uid, gid, err := ids(cfg.User)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.WorkingDir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     dir,
		Credential: &syscall.Credential{Uid: uid, Gid: gid},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// ids parses a numeric USER uid:gid, the only form an image without a
// shell's user tools (and the kubelet's runAsNonRoot) can use.
func ids(user string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	un, err1 := strconv.ParseUint(u, 10, 32)
	gn, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %q: want numeric uid:gid", user)
	}
	return uint32(un), uint32(gn), nil
}

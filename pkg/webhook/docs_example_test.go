package webhook

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDocsReceiverCompiles vets docs/examples/webhook-receiver in a
// throwaway module that points at this one, so the documented receiver
// cannot rot even though `make test` never builds that program itself.
func TestDocsReceiverCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	src, err := os.ReadFile("../../docs/examples/webhook-receiver/main.go")
	if err != nil {
		t.Fatal(err)
	}
	pkgDir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(pkgDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module receiver\n\ngo 1.26.0\n\nrequire github.com/almoner/almoner/pkg v0.0.0\n\nreplace github.com/almoner/almoner/pkg => " + pkgDir + "\n"
	for name, b := range map[string][]byte{"main.go": src, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "vet", "-mod=mod", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the docs receiver: %v\n%s", err, out)
	}
}

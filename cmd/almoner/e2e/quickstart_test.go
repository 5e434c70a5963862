package e2e

import (
	"os"
	"os/exec"
	"testing"
)

// TestReadmeQuickStart follows the README's quick start end to end with
// scripts/quickstart-check.sh: the commands are read from README.md, so a
// README that stops working fails here. It starts its own server the way
// make run does, so it runs once, not again in the split-mode pass.
func TestReadmeQuickStart(t *testing.T) {
	if os.Getenv("ALMONER_E2E_SPLIT") != "" {
		t.Skip("the quick start runs make run's one process; covered by the first pass")
	}
	// Beside the other tests: its ports are held from the start (the
	// script's comment), and alone it left a core idle while make run
	// built the binary.
	t.Parallel()
	for _, tool := range []string{"bash", "openssl", "curl", "psql", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			missingTool(t, tool+" is not installed")
		}
	}
	cmd := exec.CommandContext(t.Context(), "bash", "../../../scripts/quickstart-check.sh")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README quick start failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// Package pdftext reads a PDF back as a reader's tools see it, for tests
// that check generated documents: its text through pdftotext and its page
// count through pdfinfo (poppler-utils, which .ci/run installs; a machine
// without it fails the test with the package to install, never skips).
package pdftext

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Text is pdf's text as `pdftotext -enc UTF-8 [args] file -` prints it.
func Text(t testing.TB, pdf []byte, args ...string) string {
	t.Helper()
	path := write(t, pdf)
	out, err := exec.CommandContext(t.Context(), "pdftotext", append(append([]string{"-enc", "UTF-8"}, args...), path, "-")...).Output()
	if err != nil {
		t.Fatalf("pdftotext (apt-get install poppler-utils): %v", err)
	}
	return string(out)
}

// Pages is pdf's page count as pdfinfo reads it.
func Pages(t testing.TB, pdf []byte) int {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "pdfinfo", write(t, pdf)).Output()
	if err != nil {
		t.Fatalf("pdfinfo (apt-get install poppler-utils): %v", err)
	}
	m := pagesLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("pdfinfo: no page count in %s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

var pagesLine = regexp.MustCompile(`Pages:\s+(\d+)`)

// WithoutMarks is s without the directional marks pdftotext puts around
// right-to-left runs (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
func WithoutMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F {
			return -1
		}
		return r
	}, s)
}

// write puts pdf in a file of the test's own temporary directory.
func write(t testing.TB, pdf []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestImportUploadsFairPerTenant: with the default body budget (16 upload
// slots) one tenant's uploads hold at most four. Tenant A holds four
// slow uploads; its fifth is a 503 at once, while tenant B's upload is
// admitted (202). An upload that sends nothing past its grace period
// (200 ms here) is cut with a 400 instead of holding its slot.
func TestImportUploadsFairPerTenant(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{
		// A byte a second keeps the held uploads (4 KiB sent) within the
		// rate for an hour; the silent one is cut when its grace ends.
		"ALMONER_IMPORT_MIN_BYTES_PER_SECOND": "1",
		"ALMONER_IMPORT_RATE_GRACE":           "200ms",
	}})
	a, b := c.NewTenant(t), c.NewTenant(t)
	addr := strings.TrimPrefix(c.URL, "http://")
	for i := range 4 {
		if u := openUpload(t, addr, a, 4096); u.code != http.StatusContinue {
			t.Fatalf("tenant A's upload %d: %d, want it admitted (100 Continue)", i+1, u.code)
		}
	}
	if u := openUpload(t, addr, a, 0); u.code != http.StatusServiceUnavailable {
		t.Errorf("tenant A's fifth upload: %d, want 503", u.code)
	}
	csv := []byte("externalId,firstName,lastName,email\nf1,Ada,Lovelace,ada@example.org\n")
	uploadImport(t, c, b.ID, b.Key, "kind=contacts&format=csv&dry_run=true", csv).Expect(t, http.StatusAccepted)

	// The silent upload: admitted, then nothing.
	u := openUpload(t, addr, b, 0)
	if u.code != http.StatusContinue {
		t.Fatalf("tenant B's silent upload: %d, want it admitted", u.code)
	}
	if got := u.readStatus(t, 30*time.Second); got != http.StatusBadRequest {
		t.Errorf("silent upload past its grace: %d, want 400", got)
	}
	// The refusal ends the connection (Connection: close): the rest is
	// the problem document.
	if doc, _ := io.ReadAll(u.rd); !strings.Contains(string(doc), "slower than 1 bytes per second") {
		t.Errorf("silent upload's problem: %s", doc)
	}
	list := c.Do(t, "GET", importsPath(b.ID), b.Key, nil).Expect(t, http.StatusOK).Map(t)
	if n := len(list["items"].([]any)); n != 1 {
		t.Errorf("tenant B has %d imports, want 1 (the cut upload imported nothing): %v", n, list)
	}
}

// rawUpload is an upload on a connection of its own, and the status of
// the gateway's first answer.
type rawUpload struct {
	conn net.Conn
	rd   *bufio.Reader
	code int
}

// openUpload starts an import upload of a 1 MB CSV file on a connection
// of its own, asking for 100 Continue: the gateway reads the body (and
// sends 100) only once the upload holds its slot. Admitted, it sends the
// file's first bytes and holds the connection open until the test ends.
func openUpload(t *testing.T, addr string, tn apptest.Tenant, first int) *rawUpload {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nX-Api-Key: %s\r\nContent-Type: text/csv\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n",
		importsPath(tn.ID, "?kind=contacts&format=csv"), addr, tn.Key); err != nil {
		t.Fatal(err)
	}
	u := &rawUpload{conn: conn, rd: bufio.NewReader(conn)}
	u.code = u.readStatus(t, 10*time.Second)
	if u.code == http.StatusContinue && first > 0 {
		if _, err := conn.Write([]byte("externalId,firstName,lastName,email\n" + strings.Repeat("x", first))); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// readStatus reads the next response's status line and headers.
func (u *rawUpload) readStatus(t *testing.T, within time.Duration) int {
	t.Helper()
	_ = u.conn.SetReadDeadline(time.Now().Add(within))
	line, err := u.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("read the status: %v", err)
	}
	var code int
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d", &code); err != nil {
		t.Fatalf("status line %q: %v", line, err)
	}
	for {
		h, err := u.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read the headers: %v", err)
		}
		if h == "\r\n" {
			return code
		}
	}
}

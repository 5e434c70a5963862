package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/traceid"
)

// rawExchange writes head (a request line and headers, no body or part of
// one) on a new connection and reads the response, without ever sending
// more: a server that waited for the body would time out here. It
// reports whether the server then closed the connection.
func rawExchange(t *testing.T, c *apptest.Cluster, head string) (*http.Response, string, bool) {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(c.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response to %.60q… before the body was sent: %v", head, err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	// Closed: the next read ends at once (EOF or reset), with no byte.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := br.Read(make([]byte, 1))
	closed := n == 0 && err != nil && !isTimeout(err)
	return resp, string(body), closed
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRefusedBeforeTheBodyIsRead sends only the headers of requests whose
// declared bodies the gateway must not read (2 MB, or of unknown length)
// and gets the answer at once: 401 with no key or a wrong one, 404 for
// another tenant, 413 for a valid key but a body over the limit. The
// server closes the connection rather than read what it refused.
func TestRefusedBeforeTheBodyIsRead(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	other := c.NewTenant(t)
	for _, tc := range []struct {
		name, path, key, length string
		want                    int
	}{
		{"no key, 2 MB", keysPath(tn.ID), "", "Content-Length: 2000000", http.StatusUnauthorized},
		{"no key, 100 bytes", keysPath(tn.ID), "", "Content-Length: 100", http.StatusUnauthorized},
		{"no key, chunked", keysPath(tn.ID), "", "Transfer-Encoding: chunked", http.StatusUnauthorized},
		{"wrong key, 2 MB", keysPath(tn.ID), "ak_test_" + strings.Repeat("0", 40), "Content-Length: 2000000", http.StatusUnauthorized},
		{"another tenant, 2 MB", keysPath(other.ID), tn.Key, "Content-Length: 2000000", http.StatusNotFound},
		{"another tenant, chunked", keysPath(other.ID), tn.Key, "Transfer-Encoding: chunked", http.StatusNotFound},
		{"valid key, 2 MB", keysPath(tn.ID), tn.Key, "Content-Length: 2000000", http.StatusRequestEntityTooLarge},
		{"contact form, 2 MB", "/api/contact-form", "", "Content-Length: 2000000", http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: almoner\r\nContent-Type: application/json\r\n" + tc.length + "\r\n"
			if tc.key != "" {
				head += "X-Api-Key: " + tc.key + "\r\n"
			}
			resp, body, closed := rawExchange(t, c, head+"\r\n") //nolint:bodyclose // rawExchange read and closed it
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, tc.want)
			}
			if !closed {
				t.Error("the connection stays open after a refusal with the body unread")
			}
		})
	}
	// With the key and a body the server is sent, all is as before.
	c.Do(t, "POST", keysPath(tn.ID), tn.Key, map[string]any{"name": "after", "scopes": []string{"contacts:view"}}).Expect(t, http.StatusCreated)
}

// TestMadeUpMethodsDoNotGrowMetrics sends 200 requests, each with a
// different made-up 20 kB method, with and without a key, and checks the
// metrics listener: no label holds any of them, and /metrics grew by a few
// series at most, not by 200 × 20 kB. The gateway's span is named OTHER.
func TestMadeUpMethodsDoNotGrowMetrics(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	before := len(scrape(t, c))
	traced := traceid.New()
	apptest.WatchTrace(traced)
	for i := range 200 {
		method := fmt.Sprintf("X%03d%s", i, strings.Repeat("Q", 20_000))
		path, key := keysPath(tn.ID), tn.Key
		switch i % 3 {
		case 1:
			key = ""
		case 2:
			path = "/api/contact-form"
		}
		head := method + " " + path + " HTTP/1.1\r\nHost: almoner\r\nConnection: close\r\n"
		if key != "" {
			head += "X-Api-Key: " + key + "\r\n"
		}
		if i == 0 {
			head += "traceparent: 00-" + traced + "-00f067aa0ba902b7-01\r\n"
		}
		resp, body, _ := rawExchange(t, c, head+"\r\n") //nolint:bodyclose // rawExchange read and closed it
		if resp.StatusCode < 400 {
			t.Fatalf("made-up method answered %d %s", resp.StatusCode, body)
		}
	}
	metrics := scrape(t, c)
	if strings.Contains(metrics, "QQQQ") {
		t.Error("/metrics holds a made-up method")
	}
	for _, m := range regexp.MustCompile(`[{,]method="([^"]*)"`).FindAllStringSubmatch(metrics, -1) {
		switch m[1] {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "OTHER":
		default:
			t.Errorf("method label %.20q", m[1])
		}
	}
	// Other tests of this binary add series meanwhile; 200 methods would
	// have added 4 MB at the least.
	if grew := len(metrics) - before; grew > 200_000 {
		t.Errorf("/metrics grew by %d bytes", grew)
	}
	if !strings.Contains(metrics, `almoner_http_requests_total{method="OTHER",route="unmatched",status="405"}`) {
		t.Error("made-up methods are not counted as OTHER")
	}
	deadline := time.Now().Add(30 * time.Second) // the server span ends after the response: on a loaded machine, a while after
	for {
		var names []string
		for _, s := range apptest.Spans(traced) {
			names = append(names, s.Name())
		}
		if strings.Contains(strings.Join(names, "\n"), "OTHER unmatched") {
			for _, n := range names {
				if strings.Contains(n, "QQQQ") {
					t.Errorf("span named %.30q…", n)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span OTHER unmatched among %.200q", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAllowAndMediaTypes: a 405 names the methods in Allow, a body that
// is not JSON is a 415 problem document, and JSON with its charset or as
// a +json type is read. (Stripe's notifications, application/json;
// charset=utf-8, go through in payments_test.go.)
func TestAllowAndMediaTypes(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	for _, tc := range []struct{ method, path, key, allow string }{
		{"PATCH", keysPath(tn.ID), tn.Key, "GET, POST"},
		{"DELETE", contactPath(tn.ID, 1), tn.Key, "GET, PUT"},
		{"GET", "/api/contact-form", "", "POST"},
		{"PUT", "/api/tenants/" + tn.ID + "/orders/00000000-0000-0000-0000-000000000001/void", tn.Key, "POST"},
	} {
		r := c.Do(t, tc.method, tc.path, tc.key, nil).Expect(t, http.StatusMethodNotAllowed)
		if got := r.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
		if r.Map(t)["type"] != "/errors/method-not-allowed" {
			t.Errorf("%s %s: %s", tc.method, tc.path, r.Body)
		}
	}

	contact := `{"contactType":"Individual","firstName":"Ada","lastName":"Lovelace"}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/xml", "application/json; charset=iso-8859-1"} {
		r := c.Do(t, "POST", contactsPath(tn.ID), tn.Key, contact, "Content-Type", ct).Expect(t, http.StatusUnsupportedMediaType)
		p := r.Map(t)
		if p["type"] != "/errors/unsupported-media-type" || p["status"] != float64(415) || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %s", ct, r.Body)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/vnd.almoner+json"} {
		c.Do(t, "POST", contactsPath(tn.ID), tn.Key, contact, "Content-Type", ct).Expect(t, http.StatusCreated)
	}
}

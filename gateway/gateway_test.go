package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/traceid"
)

func testGateway() *Gateway {
	return &Gateway{
		cfg:      Config{MaxBodyBytes: 16},
		problems: problem.Renderer{BaseURL: "/errors"},
		logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func TestPanicBecomesSanitized500(t *testing.T) {
	g := testGateway()
	h := g.recoverPanics(g.withTrace(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret internal state")
	})))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), "GET", "/api/x", nil))
	if w.Code != 500 || strings.Contains(w.Body.String(), "secret") || w.Header().Get("Content-Type") != problem.ContentType {
		t.Errorf("got %d %s", w.Code, w.Body)
	}
}

func TestTraceFromParent(t *testing.T) {
	cases := map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "",
		"garbage": "",
		"":        "",
	}
	for in, want := range cases {
		if got := traceFromParent(in); got != want {
			t.Errorf("traceFromParent(%q) = %q, want %q", in, got, want)
		}
	}
	g := testGateway()
	var id string
	g.withTrace(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { id = traceid.FromContext(r.Context()) })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), "GET", "/", nil))
	if len(id) != 32 {
		t.Errorf("generated trace id %q", id)
	}
}

func TestHeaderMatchers(t *testing.T) {
	for _, h := range []string{"X-Almoner-Tenant-Id", "Grpc-Metadata-X-Almoner-Scopes", "Authorization", "X-Api-Key", "Cookie"} {
		if _, ok := incomingHeader(h); ok {
			t.Errorf("client header %s reaches services", h)
		}
	}
	if v, ok := incomingHeader("idempotency-key"); !ok || v != "idempotency-key" {
		t.Errorf("Idempotency-Key: %q %v", v, ok)
	}
	if _, ok := outgoingHeader("content-type"); ok {
		t.Error("service content-type is returned to clients")
	}
	if v, ok := outgoingHeader("etag"); !ok || v != "ETag" {
		t.Errorf("etag: %q %v", v, ok)
	}
}

package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/traceid"
)

// TestTraceCrossesEveryHop sends a W3C traceparent and finds that trace in
// the gateway's server span, the gRPC client and server spans of both
// calls, and the PostgreSQL query spans; a problem document quotes it.
func TestTraceCrossesEveryHop(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	id := traceid.New()
	apptest.WatchTrace(id)
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil, "traceparent", "00-"+id+"-00f067aa0ba902b7-01").Expect(t, http.StatusOK)

	want := map[string]bool{
		"GET /api/tenants/{tenant_id}/api-keys":                     false, // gateway server span, named by route
		"almoner.auth.v1.KeyValidationService/ValidateKey (server)": false,
		"almoner.auth.v1.ApiKeyService/ListApiKeys (server)":        false,
		"almoner.auth.v1.ApiKeyService/ListApiKeys (client)":        false,
		"postgres query": false,
	}
	deadline := time.Now().Add(30 * time.Second) // spans end after the response is written: on a loaded machine, a while after
	for {
		for _, s := range apptest.Spans(id) {
			name := s.Name()
			switch s.SpanKind().String() {
			case "server":
				if strings.HasPrefix(name, "almoner.") {
					name += " (server)"
				}
			case "client":
				if strings.HasPrefix(name, "almoner.") {
					name += " (client)"
				}
			}
			if strings.Contains(s.InstrumentationScope().Name, "otelpgx") {
				name = "postgres query"
			}
			if _, ok := want[name]; ok {
				want[name] = true
			}
		}
		missing := []string{}
		for k, seen := range want {
			if !seen {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var got []string
			for _, s := range apptest.Spans(id) {
				got = append(got, s.Name()+"/"+s.SpanKind().String()+"/"+s.InstrumentationScope().Name)
			}
			t.Fatalf("trace %s lacks %v; spans: %v", id, missing, got)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A problem document's traceId is the request's trace id.
	viewer := c.NewKey(t, tn.ID, "contacts:view")
	id2 := traceid.New()
	r := c.Do(t, "GET", keysPath(tn.ID), viewer, nil, "traceparent", "00-"+id2+"-00f067aa0ba902b7-01").Expect(t, http.StatusForbidden)
	if got := r.Map(t)["traceId"]; got != id2 {
		t.Errorf("problem traceId = %v, want %s", got, id2)
	}
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)

	c.Do(t, "GET", "/healthz", "", nil).Expect(t, http.StatusOK)
	ready := c.Do(t, "GET", "/readyz", "", nil).Expect(t, http.StatusOK).Map(t)
	checks, _ := ready["checks"].(map[string]any)
	if checks["auth"] != "SERVING" {
		t.Errorf("readyz = %v", ready)
	}
	// /metrics is the operators', on the process's own listener: on the
	// API port it is an unknown path.
	if r := c.Do(t, "GET", "/metrics", "", nil).Expect(t, http.StatusNotFound); strings.Contains(string(r.Body), "go_goroutines") {
		t.Errorf("/metrics on the API port: %s", r.Body)
	}
	metrics := scrape(t, c)
	for _, want := range []string{
		`almoner_http_requests_total{method="GET",route="/api/tenants/{tenant_id}/api-keys",status="200"}`,
		`almoner_http_request_duration_seconds_bucket{method="GET",route="/api/tenants/{tenant_id}/api-keys"`,
		`almoner_grpc_server_handled_total{grpc_code="OK",grpc_method="ValidateKey",grpc_service="almoner.auth.v1.KeyValidationService"}`,
		`almoner_db_pool_connections{`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// scrape reads the cluster's /metrics from its metrics listener.
func scrape(t *testing.T, c *apptest.Cluster) string {
	t.Helper()
	resp, err := apptest.Get(t.Context(), c.HTTP, c.MetricsURL)
	if err != nil {
		t.Fatalf("scrape %s: %v", c.MetricsURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v", c.MetricsURL, resp.StatusCode, err)
	}
	return string(b)
}

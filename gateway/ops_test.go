package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// httpSeries returns the label sets of the gateway's request counter.
func httpSeries(t *testing.T) []map[string]string {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range families {
		if f.GetName() != "almoner_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, labels)
		}
	}
	return out
}

// TestMadeUpMethodsAddNoSeries sends requests with 200 made-up methods
// (each 2 kB, a different one each time, with and without a key, to
// routed paths and not) and checks that the request metrics and span
// names hold only methods by name or OTHER and route templates: the
// series count grows by a few, not by the number of methods.
func TestMadeUpMethodsAddNoSeries(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	g, _ := startEdge(t, Config{})
	// One pass first, so that every (route, OTHER, status) series exists;
	// then the count must not move at all.
	paths := []struct{ path, key string }{
		{"/api/contact-form", ""},
		{keysURL, goodKey},
		{keysURL, ""},
		{"/no/such/path/" + strings.Repeat("p", 100), ""},
		{"/api/tenants/" + edgeTenant + "/contacts/12345", goodKey},
	}
	send := func(i int) {
		for _, p := range paths {
			method := fmt.Sprintf("M%04d%s", i, strings.Repeat("X", 2000))
			r := request("GET", p.path, p.key, "", nil, 0)
			r.Method = method
			if w := serve(g, r); w.Code < 400 {
				t.Fatalf("%s… %s: %d", method[:5], p.path, w.Code)
			}
		}
	}
	send(0)
	before := len(httpSeries(t))
	for i := 1; i < 200; i++ {
		send(i)
	}
	series := httpSeries(t)
	if len(series) != before {
		t.Errorf("199 more made-up methods added %d series", len(series)-before)
	}
	for _, s := range series {
		if methodLabel(s["method"]) != s["method"] || len(s["route"]) > 100 || strings.Contains(s["route"], "pppp") || strings.Contains(s["route"], edgeTenant) {
			t.Errorf("series with a label from the request: method %.20q route %.60q", s["method"], s["route"])
		}
	}
	found := map[string]bool{}
	for _, s := range series {
		if s["method"] == "OTHER" {
			found[s["route"]+" "+s["status"]] = true
		}
	}
	// No route matches a made-up method, so none has a template: a 405
	// is as unmatched as a 404.
	for _, want := range []string{"unmatched 405", "unmatched 401", "unmatched 404"} {
		if !found[want] {
			t.Errorf("no OTHER series for %s; have %v", want, found)
		}
	}

	names := map[string]bool{}
	for _, s := range spans.Ended() {
		names[s.Name()] = true
	}
	for name := range names {
		if strings.Contains(name, "XXXX") || strings.Contains(name, "pppp") {
			t.Errorf("span named from the request: %.40q", name)
		}
	}
	for _, want := range []string{"OTHER unmatched"} {
		if !names[want] {
			t.Errorf("no span %q among %v", want, names)
		}
	}
}

func TestMethodLabel(t *testing.T) {
	for in, want := range map[string]string{
		"GET": "GET", "HEAD": "HEAD", "POST": "POST", "PUT": "PUT", "PATCH": "PATCH", "DELETE": "DELETE",
		"CONNECT": "CONNECT", "OPTIONS": "OPTIONS", "TRACE": "TRACE",
		"get": "OTHER", "PROPFIND": "OTHER", "": "OTHER", strings.Repeat("A", 20000): "OTHER",
	} {
		if got := methodLabel(in); got != want {
			t.Errorf("methodLabel(%.10q) = %q, want %q", in, got, want)
		}
	}
}

// TestNoMetricsOnTheAPIPort: /metrics is an unknown path of the API (the
// process serves it on ALMONER_METRICS_ADDR); the probes' paths stay.
func TestNoMetricsOnTheAPIPort(t *testing.T) {
	g, _ := startEdge(t, Config{})
	w := serve(g, request("GET", "/metrics", "", "", nil, 0))
	if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "go_goroutines") {
		t.Errorf("/metrics on the API port: %d %.200s", w.Code, w.Body)
	}
	if w := serve(g, request("GET", "/healthz", "", "", nil, 0)); w.Code != http.StatusOK {
		t.Errorf("/healthz: %d", w.Code)
	}
	if w := serve(g, request("GET", "/readyz", "", "", nil, 0)); w.Code != http.StatusOK && w.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz: %d", w.Code)
	}
}

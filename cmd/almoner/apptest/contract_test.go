package apptest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// errorRecorder is the testing.TB a contractTransport reports to: it keeps
// the failures instead of failing the test that checks them.
type errorRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// contractDoc documents one operation: POST /api/things with a closed body
// {name} answering 201 {id: integer} or a 400.
const contractDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {"/api/things": {"post": {
    "operationId": "CreateThing",
    "requestBody": {"required": true, "content": {"application/json": {"schema": {
      "type": "object", "additionalProperties": false, "required": ["name"],
      "properties": {"name": {"type": "string"}}}}}},
    "responses": {
      "201": {"description": "made", "content": {"application/json": {"schema": {
        "type": "object", "additionalProperties": false, "required": ["id"],
        "properties": {"id": {"type": "integer"}}}}}},
      "400": {"description": "refused", "content": {"application/problem+json": {"schema": {"type": "object"}}}}
    }}}}
}`

// TestContractTransportFindsMismatches: the checker stays silent on
// exchanges the document describes (a refused bad request included) and
// reports each kind of mismatch: a wrong type, an undocumented status, a
// request the API accepted though the document refuses it.
func TestContractTransportFindsMismatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.json" {
			_, _ = io.WriteString(w, contractDoc)
			return
		}
		status, body, ct := 201, `{"id": 1}`, "application/json"
		switch r.URL.Query().Get("answer") {
		case "wrong-type":
			body = `{"id": "1"}`
		case "teapot":
			status = http.StatusTeapot
		case "refuse":
			status, body, ct = 400, `{"title": "bad"}`, "application/problem+json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, answer, body string
		want               string // "" = no failure
	}{
		{"documented", "", `{"name": "a"}`, ""},
		{"bad request refused", "refuse", `{"nom": 1}`, ""},
		{"wrong type", "wrong-type", `{"name": "a"}`, "the response does not match the document"},
		{"undocumented status", "teapot", `{"name": "a"}`, "the response does not match the document"},
		{"bad request accepted", "", `{"name": "a", "extra": 1}`, "the API accepted a request the document refuses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &errorRecorder{}
			client := &http.Client{Transport: newContractTransport(rec, srv.URL)}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/things?answer="+tc.answer, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			switch {
			case tc.want == "" && len(rec.errors) > 0:
				t.Errorf("reported %q, want nothing", rec.errors)
			case tc.want != "" && (len(rec.errors) == 0 || !strings.Contains(rec.errors[0], tc.want)):
				t.Errorf("reported %q, want %q", rec.errors, tc.want)
			}
		})
	}
}

package apptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contractTransport checks every exchange a test has with the gateway
// against the OpenAPI document the gateway serves (/openapi.json), and
// fails the test on a mismatch: a status the operation does not document,
// a property of the wrong type, a required one missing, one the schema
// does not have (every schema of ours is closed), a wrong media type.
//
// A request the document calls invalid is fine when the gateway refuses
// it (a test of a 400 sends one on purpose); it is a mismatch when the
// gateway accepts it, for then the document refuses what the API takes.
// Exchanges on paths the document does not have are not checked: the
// documentation site, health and metrics, processor notifications, and
// the unknown paths tests send for their 404s.
type contractTransport struct {
	t    testing.TB
	base http.RoundTripper
	url  string

	once   sync.Once
	router routers.Router
	err    error
}

func newContractTransport(t testing.TB, baseURL string) *contractTransport {
	return &contractTransport{t: t, base: http.DefaultTransport, url: baseURL}
}

// documents caches the parsed document by its bytes' hash: every cluster
// of a test binary serves the same one.
var documents sync.Map

// load reads the gateway's document and makes its router, once.
func (c *contractTransport) load(ctx context.Context) (routers.Router, error) {
	c.once.Do(func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/openapi.json", nil)
		if err != nil {
			c.err = err
			return
		}
		resp, err := c.base.RoundTrip(req)
		if err != nil {
			c.err = fmt.Errorf("get /openapi.json: %w", err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			c.err = fmt.Errorf("get /openapi.json: %d %w", resp.StatusCode, err)
			return
		}
		key := sha256.Sum256(b)
		if r, ok := documents.Load(key); ok {
			c.router = r.(routers.Router)
			return
		}
		c.router, c.err = parseDocument(ctx, b)
		if c.err == nil {
			documents.Store(key, c.router)
		}
	})
	return c.router, c.err
}

func parseDocument(ctx context.Context, b []byte) (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("parse /openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("/openapi.json is not a valid document: %w", err)
	}
	// The server is "/", the origin that serves the document: match
	// paths alone.
	doc.Servers = nil
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route /openapi.json: %w", err)
	}
	return r, nil
}

// contractOptions: the key is the gateway's to check (tests send bad
// ones on purpose, and the 401 is documented); read-only properties may
// be sent back in a request, which the API ignores (docs/openapi.md); a
// status the operation does not list is a mismatch.
var contractOptions = &openapi3filter.Options{
	AuthenticationFunc:         openapi3filter.NoopAuthenticationFunc,
	ExcludeReadOnlyValidations: true,
	SkipSettingDefaults:        true,
	IncludeResponseStatus:      true,
	MultiError:                 true,
}

func init() {
	// Report exports are files: their bytes are not JSON to check; so
	// are import files (text/csv, application/x-ndjson: JSON Lines is not
	// one JSON document).
	for _, mt := range []string{"text/csv", "application/pdf", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/x-ndjson"} {
		openapi3filter.RegisterBodyDecoder(mt, openapi3filter.FileBodyDecoder)
	}
}

// conformRequest applies to a request the rules of the gateway that a JSON
// Schema cannot state, which the document states in words instead
// (docs/openapi.md): a body may be of any JSON media type
// (application/*+json), its property names match case-insensitively, an
// enum value matches ignoring case and spaces around it, and null is the
// same as leaving a property out. It returns the body to
// check and sets check's Content-Type.
func conformRequest(check *http.Request, route *routers.Route, body []byte) []byte {
	mt, _, _ := mime.ParseMediaType(check.Header.Get("Content-Type"))
	if sub, ok := strings.CutPrefix(mt, "application/"); ok && strings.HasSuffix(sub, "+json") {
		check.Header.Set("Content-Type", "application/json")
	}
	op := route.Operation
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil || len(body) == 0 {
		return body
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	var v any
	if media == nil || json.Unmarshal(body, &v) != nil {
		return body
	}
	out, err := json.Marshal(conform(v, media.Schema))
	if err != nil {
		return body
	}
	return out
}

// conform renames v's properties and enum values to the schema's spelling
// and drops the nulls the schema does not allow, at every level.
func conform(v any, ref *openapi3.SchemaRef) any {
	s := nonNull(ref)
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			name := k
			if _, ok := s.Properties[k]; !ok {
				for p := range s.Properties {
					if strings.EqualFold(p, k) {
						name = p
					}
				}
			}
			ps := s.Properties[name]
			if ps == nil && s.AdditionalProperties.Schema != nil {
				ps = s.AdditionalProperties.Schema
			}
			if val == nil && !allowsNull(ps) {
				continue
			}
			out[name] = conform(val, ps)
		}
		return out
	case []any:
		for i := range x {
			x[i] = conform(x[i], s.Items)
		}
	case string:
		// An enum value matches ignoring case and surrounding spaces.
		for _, e := range s.Enum {
			if es, ok := e.(string); ok && strings.EqualFold(es, strings.TrimSpace(x)) {
				return es
			}
		}
	}
	return v
}

// nonNull is the schema a nullable one wraps (oneOf: [X, null]), or the
// schema itself.
func nonNull(ref *openapi3.SchemaRef) *openapi3.Schema {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	if len(s.OneOf) == 2 {
		for i, alt := range s.OneOf {
			if alt.Value != nil && alt.Value.Type.Is(openapi3.TypeNull) {
				return nonNull(s.OneOf[1-i])
			}
		}
	}
	return s
}

func allowsNull(ref *openapi3.SchemaRef) bool {
	if ref == nil || ref.Value == nil {
		return false
	}
	s := ref.Value
	if s.Type == nil || s.Type.Includes(openapi3.TypeNull) {
		return true
	}
	for _, alt := range s.OneOf {
		if alt.Value != nil && alt.Value.Type.Is(openapi3.TypeNull) {
			return true
		}
	}
	return false
}

// RoundTrip sends req and checks the exchange.
func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return c.base.RoundTrip(req)
	}
	router, err := c.load(req.Context())
	if err != nil {
		c.t.Errorf("openapi: %v", err)
		return c.base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil {
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		// Not a documented operation; see contractTransport.
		return c.base.RoundTrip(req)
	}
	check := req.Clone(req.Context())
	checkBody := conformRequest(check, route, reqBody)
	// The validator reads GetBody when there is one (Clone copies req's).
	check.Body = io.NopCloser(bytes.NewReader(checkBody))
	check.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(checkBody)), nil }
	check.ContentLength = int64(len(checkBody))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route, Options: contractOptions}

	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil
	}
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	// Only a request the API accepted is checked against the document: a
	// refused one needs no verdict, and kin-openapi's report of a refused
	// body (it encodes the schema into the message) cost the e2e suite
	// most of its time under -race (TestRequestBodyMutations: 27 s
	// against 1.7 s without the checker, for 210 bodies).
	if resp.StatusCode < 400 {
		if reqErr := openapi3filter.ValidateRequest(req.Context(), in); reqErr != nil {
			c.t.Errorf("openapi: %s: the API accepted a request the document refuses: %v\nrequest body: %.1000s", what, reqErr, reqBody)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: contractOptions,
	}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil && !errors.Is(err, context.Canceled) {
		c.t.Errorf("openapi: %s: the response does not match the document: %v\nresponse body: %.1000s", what, err, respBody)
	}
	return resp, nil
}

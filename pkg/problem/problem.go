// Package problem renders every error the REST edge returns as an RFC 7807
// problem document, from the gRPC status a service returned. It is the one
// place where gRPC codes become HTTP statuses.
package problem

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/wirejson"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// Categories name the `type` URIs: {base}/<category>.
const (
	CategoryValidation       = "validation"
	CategoryUnauthorized     = "unauthorized"
	CategoryForbidden        = "forbidden"
	CategoryNotFound         = "not-found"
	CategoryMethodNotAllowed = "method-not-allowed"
	CategoryConflict         = "conflict"
	CategoryGone             = "gone"
	CategoryTooLarge         = "payload-too-large"
	CategoryUnsupportedMedia = "unsupported-media-type"
	CategoryUnprocessable    = "unprocessable"
	CategoryInternal         = "internal"
	CategoryUnavailable      = "unavailable"
	CategoryTimeout          = "timeout"
)

// Categories lists every category with its title and a short explanation,
// for the pages the gateway serves at each type URI.
var Categories = []struct{ Name, Title, Explanation string }{
	{CategoryValidation, "One or more validation errors occurred.", "The request body, path or query failed validation or a business rule. The errors object maps each property path (e.g. Items[0].Quantity) to messages; a rule about the whole request is under the empty key \"\" and starts with a typed code such as Order.BatchClosed."},
	{CategoryUnauthorized, "Unauthorized", "The X-Api-Key header is missing, or the key is unknown, revoked or expired, or its tenant is deactivated or has no API access. The response never says which."},
	{CategoryForbidden, "Forbidden", "The key lacks a permission or the tenant lacks a feature; the title names it, e.g. Missing required permission: orders:create."},
	{CategoryNotFound, "Not Found", "A resource named in the path does not exist for this tenant, or the tenant in the path is not the key's tenant."},
	{CategoryMethodNotAllowed, "Method Not Allowed", "The path exists but does not accept this HTTP method."},
	{CategoryConflict, "Conflict", "The request clashed with concurrent work, such as a first request with the same idempotency key still in flight. Retry after a short wait."},
	{CategoryGone, "Gone", "What the request points at is no longer kept, such as an event feed cursor older than the feed's retention (Events.CursorExpired). Start again from the beginning of what is kept."},
	{CategoryTooLarge, "Payload Too Large", "Request bodies are limited to 1 MiB."},
	{CategoryUnsupportedMedia, "Unsupported Media Type", "Request bodies must be JSON."},
	{CategoryUnprocessable, "Unprocessable Entity", "The request is well-formed but refused, e.g. an idempotency key reused with a different body."},
	{CategoryInternal, "An unexpected error occurred.", "Something failed on our side. Quote the traceId when you contact support; reads may be retried at once."},
	{CategoryUnavailable, "Service Unavailable", "A part of the service is temporarily unreachable. Retry with backoff."},
	{CategoryTimeout, "Gateway Timeout", "The request took too long to complete. Retry with backoff."},
}

// Document is an RFC 7807 problem document.
type Document struct {
	Type     string              `json:"type"`
	Title    string              `json:"title"`
	Status   int                 `json:"status"`
	Instance string              `json:"instance,omitempty"`
	Errors   map[string][]string `json:"errors,omitempty"`
	TraceID  string              `json:"traceId,omitempty"`
	// Extensions are further members (RFC 7807 §3.2), such as mergedInto
	// on the 404 of a merged contact: JSON values written beside the
	// standard members, in key order. A key that is a standard member's
	// name is ignored.
	Extensions map[string]json.RawMessage `json:"-"`
}

// standardMembers are the names Extensions may not take.
var standardMembers = map[string]bool{"type": true, "title": true, "status": true, "instance": true, "errors": true, "traceId": true, "detail": true}

// MarshalJSON writes the standard members, then the extension members.
func (d Document) MarshalJSON() ([]byte, error) {
	type plain Document
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(d)); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	keys := make([]string, 0, len(d.Extensions))
	for k := range d.Extensions {
		if !standardMembers[k] && json.Valid(d.Extensions[k]) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	sort.Strings(keys)
	out = out[:len(out)-1] // the closing brace
	for _, k := range keys {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(out, ',')
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, d.Extensions[k]...)
	}
	return append(out, '}'), nil
}

// Renderer builds documents whose type URIs start with BaseURL.
type Renderer struct {
	// BaseURL prefixes every type; "/errors" (the gateway's own pages) by
	// default.
	BaseURL string
}

func (r Renderer) typeURI(category string) string {
	base := r.BaseURL
	if base == "" {
		base = "/errors"
	}
	return base + "/" + category
}

// New returns a document of category with the given status and title.
func (r Renderer) New(category string, httpStatus int, title string) Document {
	return Document{Type: r.typeURI(category), Title: title, Status: httpStatus}
}

// FromStatus maps a gRPC status to a document. Only messages of statuses
// that services produce deliberately (apperr) are shown; INTERNAL, UNKNOWN
// and anything unexpected get a fixed, sanitized title. Extension members
// a domain error carries (apperr.Error.With) are kept on every 4xx.
func (r Renderer) FromStatus(st *status.Status) Document {
	d := r.fromStatus(st)
	if d.Status < 500 {
		d.Extensions = apperr.ExtensionsOf(st)
	}
	return d
}

func (r Renderer) fromStatus(st *status.Status) Document {
	switch st.Code() {
	case codes.InvalidArgument:
		if isPathIDMismatch(st) {
			// A path id that does not even parse (GET /contacts/abc) names
			// no resource: 404, as for one that parses but does not exist.
			return r.New(CategoryNotFound, http.StatusNotFound, "Not Found")
		}
		d := r.New(CategoryValidation, http.StatusBadRequest, "One or more validation errors occurred.")
		d.Errors = violations(st)
		if d.Errors == nil {
			if m, ok := wirejson.ParseDecodeError(st.Message()); ok {
				d.Errors = m
			} else {
				// A request the generated gateway code refused before any
				// service saw it (a bad path parameter); its text is ours
				// but not meant for clients.
				d.Errors = map[string][]string{"": {"The request is not valid."}}
			}
		}
		return d
	case codes.Unauthenticated:
		return Unauthorized(r)
	case codes.PermissionDenied:
		// A guard with a typed code (Mfa.EnrollmentRequired) names it as
		// the other typed refusals do; a missing scope has none.
		d := r.New(CategoryForbidden, http.StatusForbidden, st.Message())
		d.Errors = withCode(st, nil)
		return d
	case codes.NotFound:
		return r.New(CategoryNotFound, http.StatusNotFound, "Not Found")
	case codes.Aborted, codes.AlreadyExists:
		d := r.New(CategoryConflict, http.StatusConflict, st.Message())
		d.Errors = withCode(st, nil)
		return d
	case codes.OutOfRange:
		// apperr.Gone: the message and its typed code are ours.
		d := r.New(CategoryGone, http.StatusGone, st.Message())
		d.Errors = withCode(st, nil)
		return d
	case codes.FailedPrecondition:
		d := r.New(CategoryUnprocessable, http.StatusUnprocessableEntity, st.Message())
		d.Errors = withCode(st, nil)
		return d
	case codes.ResourceExhausted:
		if !isDomainError(st) {
			// gRPC's own limits: nothing a client was told about.
			return r.New(CategoryInternal, http.StatusInternalServerError, "An unexpected error occurred.")
		}
		// apperr.TooLarge (a rate limit is answered before, IsRateLimited).
		d := r.New(CategoryTooLarge, http.StatusRequestEntityTooLarge, st.Message())
		d.Errors = withCode(st, nil)
		return d
	case codes.Unavailable:
		return r.New(CategoryUnavailable, http.StatusServiceUnavailable, "Service Unavailable")
	case codes.DeadlineExceeded, codes.Canceled:
		return r.New(CategoryTimeout, http.StatusGatewayTimeout, "Gateway Timeout")
	case codes.Unimplemented:
		return r.New(CategoryNotFound, http.StatusNotFound, "Not Found")
	default:
		return r.New(CategoryInternal, http.StatusInternalServerError, "An unexpected error occurred.")
	}
}

// pathMismatchPrefix starts the status text of grpc-gateway's generated
// handlers when a path parameter does not convert to its field's type.
const pathMismatchPrefix = "type mismatch, parameter: "

// isPathIDMismatch reports a path identifier (a parameter named *_id, such
// as contact_id) that grpc-gateway could not convert. Only the generated
// code makes this status, without details; other bad path parameters stay
// 400s.
func isPathIDMismatch(st *status.Status) bool {
	rest, ok := strings.CutPrefix(st.Message(), pathMismatchPrefix)
	if !ok || len(st.Details()) > 0 {
		return false
	}
	param, _, _ := strings.Cut(rest, ",")
	return strings.HasSuffix(param, "_id")
}

// RateLimitedMessage is the message of the one 429 body.
const RateLimitedMessage = "Too many requests. Please try again later."

// IsRateLimited reports a rejection by a rate-limit policy
// (apperr.RateLimited): RESOURCE_EXHAUSTED with its typed code. Other
// RESOURCE_EXHAUSTED statuses (gRPC's own message-size limits) are not.
func IsRateLimited(st *status.Status) bool {
	if st.Code() != codes.ResourceExhausted {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == apperr.CodeRateLimited {
			return true
		}
	}
	return false
}

// WriteRateLimited sends the spec's 429: Content-Type application/json and
// the flat body {"message": "..."}, not a problem document, and no
// Retry-After or X-RateLimit-* headers.
func WriteRateLimited(w http.ResponseWriter) {
	body := `{"message":"` + RateLimitedMessage + `"}` + "\n"
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(body))
}

// violations builds the errors map from BadRequest details. A typed code
// travels in the map, as the spec asks: the message under the empty key of
// a business rule starts with "<Code>: ".
func violations(st *status.Status) map[string][]string {
	var out map[string][]string
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		for _, fv := range br.GetFieldViolations() {
			out[fv.GetField()] = append(out[fv.GetField()], fv.GetDescription())
		}
	}
	if out == nil {
		return nil
	}
	return withCode(st, out)
}

// withCode prefixes the messages of m with the status's typed code, or
// makes {"": ["<Code>: <message>"]} when m is nil.
func withCode(st *status.Status, m map[string][]string) map[string][]string {
	var code string
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			code = ei.GetReason()
		}
	}
	if code == "" {
		return m
	}
	if m == nil {
		return map[string][]string{"": {code + ": " + st.Message()}}
	}
	for k, msgs := range m {
		for i := range msgs {
			msgs[i] = code + ": " + msgs[i]
		}
		m[k] = msgs
	}
	return m
}

// isDomainError reports a status a service made from an apperr.Error
// with a typed code: it carries an ErrorInfo of apperr's domain.
func isDomainError(st *status.Status) bool {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == apperr.ErrorDomain {
			return true
		}
	}
	return false
}

// Unauthorized is the one 401 document. It carries no instance and no
// traceId so that every authentication failure is byte-identical.
func Unauthorized(r Renderer) Document {
	return r.New(CategoryUnauthorized, http.StatusUnauthorized, "Unauthorized")
}

// Write sends d. The caller has set Instance and TraceID as it wants them.
// A 503 (a service or its database unreachable for now) carries
// `Retry-After: 1`: the outage is transient and a retry a second later is
// what the client should do, reads and idempotent order creations alike.
func Write(w http.ResponseWriter, d Document) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d)
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	if d.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(d.Status)
	_, _ = w.Write(buf.Bytes())
}

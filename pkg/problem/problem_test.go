package problem

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/apperr"
)

func TestFromStatus(t *testing.T) {
	r := Renderer{BaseURL: "https://errors.example"}
	cases := []struct {
		name       string
		err        error
		wantStatus int
		wantType   string
		wantTitle  string
		wantErrors map[string]string
	}{
		{"validation", apperr.Invalid(apperr.Violation{Field: "Items[0].Quantity", Message: "too many"}), 400, "validation",
			"One or more validation errors occurred.", map[string]string{"Items[0].Quantity": "too many"}},
		{"rule with code", apperr.Rule("Order.BatchClosed", "The batch is closed."), 400, "validation",
			"One or more validation errors occurred.", map[string]string{"": "Order.BatchClosed: The batch is closed."}},
		{"field rule", apperr.FieldRule("Inventory.InsufficientStock", "Items[1].Quantity", "Only 2 left."), 400, "validation",
			"One or more validation errors occurred.", map[string]string{"Items[1].Quantity": "Inventory.InsufficientStock: Only 2 left."}},
		{"decode error text", status.Error(codes.InvalidArgument, `wirejson: invalid request: {"Name":["bad"]}`), 400, "validation",
			"One or more validation errors occurred.", map[string]string{"Name": "bad"}},
		{"gateway parameter error", status.Error(codes.InvalidArgument, `type mismatch, parameter: x, error: strconv...`), 400, "validation",
			"One or more validation errors occurred.", map[string]string{"": "The request is not valid."}},
		{"missing scope", apperr.MissingPermission("orders:void"), 403, "forbidden", "Missing required permission: orders:void", nil},
		{"guard with code", apperr.ForbiddenCode("Mfa.EnrollmentRequired", "Turn on a second factor."),
			403, "forbidden", "Turn on a second factor.", map[string]string{"": "Mfa.EnrollmentRequired: Turn on a second factor."}},
		{"not found", apperr.NotFound("Contact"), 404, "not-found", "Not Found", nil},
		{"unauthenticated", apperr.Unauthenticated(), 401, "unauthorized", "Unauthorized", nil},
		{"conflict", apperr.Conflict("Order.InFlight", "Try again."), 409, "conflict", "Try again.", map[string]string{"": "Order.InFlight: Try again."}},
		{"unprocessable", apperr.Unprocessable("Order.IdempotencyKeyReused", "Different body."), 422, "unprocessable", "Different body.",
			map[string]string{"": "Order.IdempotencyKeyReused: Different body."}},
		{"gone", apperr.Gone("Events.CursorExpired", "The cursor is too old."), 410, "gone", "The cursor is too old.",
			map[string]string{"": "Events.CursorExpired: The cursor is too old."}},
		{"too large", apperr.TooLarge("Import.TooLarge", "Import files are limited to 1 GiB."), 413, "payload-too-large",
			"Import files are limited to 1 GiB.", map[string]string{"": "Import.TooLarge: Import files are limited to 1 GiB."}},
		{"grpc size limit masked", status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), 500, "internal",
			"An unexpected error occurred.", nil},
		{"internal masked", status.Error(codes.Internal, "pq: relation auth.api_keys does not exist"), 500, "internal", "An unexpected error occurred.", nil},
		{"unknown masked", status.Error(codes.Unknown, "secret detail"), 500, "internal", "An unexpected error occurred.", nil},
		{"unavailable", status.Error(codes.Unavailable, "connection refused 10.0.0.3"), 503, "unavailable", "Service Unavailable", nil},
	}
	for _, c := range cases {
		d := r.FromStatus(apperr.ToStatus(c.err))
		if d.Status != c.wantStatus || d.Type != "https://errors.example/"+c.wantType || d.Title != c.wantTitle {
			t.Errorf("%s: got %d %s %q", c.name, d.Status, d.Type, d.Title)
		}
		if len(d.Errors) != len(c.wantErrors) {
			t.Errorf("%s: errors %v, want %v", c.name, d.Errors, c.wantErrors)
		}
		for k, v := range c.wantErrors {
			if len(d.Errors[k]) != 1 || d.Errors[k][0] != v {
				t.Errorf("%s: errors[%q] = %v, want [%q]", c.name, k, d.Errors[k], v)
			}
		}
	}
}

func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	d := Renderer{}.New(CategoryNotFound, http.StatusNotFound, "Not Found")
	d.Instance, d.TraceID = "/x", "abc"
	Write(w, d)
	if w.Code != 404 || w.Header().Get("Content-Type") != ContentType {
		t.Errorf("got %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	want := `{"type":"/errors/not-found","title":"Not Found","status":404,"instance":"/x","traceId":"abc"}`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

// TestUnavailableHasRetryAfter: a 503 tells the client to retry in a
// second; no other status carries the header.
func TestUnavailableHasRetryAfter(t *testing.T) {
	for _, st := range []*status.Status{status.New(codes.Unavailable, "The database is unavailable."), status.New(codes.Internal, "boom")} {
		w := httptest.NewRecorder()
		d := Renderer{}.FromStatus(st)
		Write(w, d)
		want := ""
		if st.Code() == codes.Unavailable {
			want = "1"
			if w.Code != http.StatusServiceUnavailable || d.Title != "Service Unavailable" || d.Type != "/errors/unavailable" {
				t.Errorf("unavailable: %d %+v", w.Code, d)
			}
		}
		if got := w.Header().Get("Retry-After"); got != want {
			t.Errorf("%v: Retry-After %q, want %q", st.Code(), got, want)
		}
	}
}

// TestExtensionMembers: a domain error's extension members reach the
// document beside the standard members, a typed code still travels, and
// a document without them is unchanged.
func TestExtensionMembers(t *testing.T) {
	r := Renderer{}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"not found with mergedInto", apperr.NotFound("Contact").With("mergedInto", int64(42)),
			`{"type":"/errors/not-found","title":"Not Found","status":404,"mergedInto":42}`},
		{"plain not found", apperr.NotFound("Contact"), `{"type":"/errors/not-found","title":"Not Found","status":404}`},
		{"code and member", apperr.Conflict("Contact.MergeInProgress", "Busy.").With("survivorId", "7").With("status", 1),
			`{"type":"/errors/conflict","title":"Busy.","status":409,"errors":{"":["Contact.MergeInProgress: Busy."]},"survivorId":"7"}`},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		Write(w, r.FromStatus(apperr.ToStatus(c.err)))
		if got := strings.TrimSpace(w.Body.String()); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	// Masked errors never carry members.
	d := r.FromStatus(apperr.ToStatus(errors.New("boom")))
	if d.Extensions != nil {
		t.Errorf("internal error has extensions %v", d.Extensions)
	}
}

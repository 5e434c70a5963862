package problem

import (
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/apperr"
)

func TestPathIDMismatchIsNotFound(t *testing.T) {
	t.Parallel()
	r := Renderer{}
	cases := []struct {
		name string
		st   *status.Status
		want int
	}{
		{"int64 path id", status.New(codes.InvalidArgument, `type mismatch, parameter: contact_id, error: strconv.ParseInt: parsing "abc": invalid syntax`), 404},
		{"other path parameter", status.New(codes.InvalidArgument, `type mismatch, parameter: x, error: strconv...`), 400},
		{"service violation", apperr.ToStatus(apperr.Invalid(apperr.Violation{Field: "ContactId", Message: "type mismatch, parameter: contact_id"})), 400},
		{"decode error", status.New(codes.InvalidArgument, `wirejson: invalid request: {"Page":["bad"]}`), 400},
	}
	for _, c := range cases {
		if got := r.FromStatus(c.st).Status; got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	if !IsRateLimited(apperr.ToStatus(apperr.RateLimited())) {
		t.Error("apperr.RateLimited is not recognised")
	}
	if IsRateLimited(status.New(codes.ResourceExhausted, "grpc: received message larger than max")) {
		t.Error("gRPC's own RESOURCE_EXHAUSTED must not become the 429 body")
	}
	w := httptest.NewRecorder()
	WriteRateLimited(w)
	if w.Code != 429 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Retry-After") != "" {
		t.Errorf("got %d %v", w.Code, w.Header())
	}
	if got := w.Body.String(); got != `{"message":"Too many requests. Please try again later."}`+"\n" {
		t.Errorf("body %q", got)
	}
}

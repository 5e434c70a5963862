package apperr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestToStatus(t *testing.T) {
	cases := []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{NotFound("Contact"), codes.NotFound, "Contact not found."},
		{fmt.Errorf("wrapped: %w", MissingPermission("x:y")), codes.PermissionDenied, "Missing required permission: x:y"},
		{Invalid(Violation{"A", "b"}), codes.InvalidArgument, "One or more validation errors occurred."},
		{errors.New("pq: syntax error at SELECT"), codes.Internal, "An unexpected error occurred."},
		{&Error{Kind: KindInternal, Message: "db down"}, codes.Internal, "An unexpected error occurred."},
		{context.Canceled, codes.Canceled, "The request was cancelled."},
		{status.Error(codes.NotFound, "from downstream"), codes.NotFound, "from downstream"},
		{status.Error(codes.Internal, "downstream internals"), codes.Internal, "An unexpected error occurred."},
	}
	for _, c := range cases {
		st := ToStatus(c.err)
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("ToStatus(%v) = %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}

func TestInterceptorMasksAndRecovers(t *testing.T) {
	var logs strings.Builder
	icpt := UnaryServerInterceptor(slog.New(slog.NewTextHandler(&logs, nil)))
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}

	_, err := icpt(context.Background(), nil, info, func(context.Context, any) (any, error) {
		return nil, errors.New("relation \"auth.api_keys\" does not exist")
	})
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "auth") {
		t.Errorf("internal error leaked: %v", st)
	}
	if !strings.Contains(logs.String(), "auth.api_keys") {
		t.Error("the original error was not logged")
	}

	_, err = icpt(context.Background(), nil, info, func(context.Context, any) (any, error) { panic("boom") })
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "boom") {
		t.Errorf("panic gave %v", st)
	}

	_, err = icpt(context.Background(), nil, info, func(context.Context, any) (any, error) { return nil, NotFound("Order") })
	if status.Code(err) != codes.NotFound {
		t.Errorf("domain error became %v", err)
	}
}

func TestViolations(t *testing.T) {
	var v Violations
	if v.Err() != nil {
		t.Fatal("empty violations is an error")
	}
	v.Add("Name", "'%s' must not be empty.", "Name")
	if !v.Has("Name") || v.Has("Other") {
		t.Error("Has")
	}
	e, ok := As(v.Err())
	if !ok || e.Kind != KindInvalid || e.Violations[0].Message != "'Name' must not be empty." {
		t.Errorf("got %+v", e)
	}
}

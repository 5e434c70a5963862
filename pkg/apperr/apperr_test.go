package apperr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/traceid"
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
		{Gone("Events.CursorExpired", "Too old."), codes.OutOfRange, "Too old."},
		{TooLarge("Import.TooLarge", "Too big."), codes.ResourceExhausted, "Too big."},
		{errors.New("pq: syntax error at SELECT"), codes.Internal, "An unexpected error occurred."},
		{&Error{Kind: KindInternal, Message: "db down"}, codes.Internal, "An unexpected error occurred."},
		{context.Canceled, codes.Canceled, "The request was cancelled."},
		{status.Error(codes.NotFound, "from downstream"), codes.NotFound, "from downstream"},
		{status.Error(codes.Internal, "downstream internals"), codes.Internal, "An unexpected error occurred."},
		{fmt.Errorf("orders: void order 7: %w", status.Error(codes.PermissionDenied, "from downstream")), codes.PermissionDenied, "from downstream"},
		{fmt.Errorf("orders: void order 7: %w", status.Error(codes.Internal, "downstream internals")), codes.Internal, "An unexpected error occurred."},
		{fmt.Errorf("store: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), codes.Unavailable, "The database is unavailable."},
		{(&Error{Kind: KindInternal, Message: "list failed"}).Wrap(fmt.Errorf("list: %w", &pgconn.PgError{Code: "57P03"})), codes.Unavailable, "The database is unavailable."},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}, codes.Internal, "An unexpected error occurred."},
		// The database's kinds that a server did not turn into a domain
		// error (dbKinds): only an outage reaches the caller as such.
		{fmt.Errorf("orders: get order 7: %w", db.ErrNotFound), codes.Internal, "An unexpected error occurred."},
		{fmt.Errorf("orders: get order 7: %w", pgx.ErrNoRows), codes.Internal, "An unexpected error occurred."},
		{db.Interpret(&pgconn.PgError{Code: "23503", ConstraintName: "orders_fund_fk"}), codes.Internal, "An unexpected error occurred."},
		{fmt.Errorf("contacts: update contact: %w", &pgconn.PgError{Code: "40P01"}), codes.Internal, "An unexpected error occurred."},
		{fmt.Errorf("contacts: update contact: %w", db.Interpret(&pgconn.PgError{Code: "08006"})), codes.Unavailable, "The database is unavailable."},
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

// traceStream is a server stream whose context carries the trace id the
// gateway forwards in metadata.
type traceStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s traceStream) Context() context.Context { return s.ctx }

// TestStreamInterceptorLogsTraceID: a failed stream (a report export) is
// logged with the trace id of its request, the one its problem document
// shows, for a masked error and for a panic alike.
func TestStreamInterceptorLogsTraceID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(traceid.MetadataKey, id))
	info := &grpc.StreamServerInfo{FullMethod: "/almoner.reports.v1.ReportService/ExportReport"}
	for name, handler := range map[string]grpc.StreamHandler{
		"error": func(any, grpc.ServerStream) error { return errors.New("export: write row: broken pipe") },
		"panic": func(any, grpc.ServerStream) error { panic("boom") },
	} {
		var logs strings.Builder
		icpt := StreamServerInterceptor(slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, nil))))
		err := icpt(nil, traceStream{ctx: ctx}, info, handler)
		if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "An unexpected error occurred." {
			t.Errorf("%s: status %v", name, st)
		}
		if !strings.Contains(logs.String(), `"trace_id":"`+id+`"`) {
			t.Errorf("%s: the log line lacks the trace id: %s", name, logs.String())
		}
	}
}

// TestFailureLogLevels: the platform's failures are logged at error, the
// caller's (4xx) at debug, each with the request's trace id.
func TestFailureLogLevels(t *testing.T) {
	const id = "0af7651916cd43dd8448eb211c80319c"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(traceid.MetadataKey, id))
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}
	for _, tc := range []struct {
		name  string
		err   error
		level string
	}{
		{"masked", errors.New("boom"), "ERROR"},
		{"unavailable", Unavailable("Stock cannot be reserved right now.", errors.New("dial")), "ERROR"},
		{"not found", NotFound("Order"), "DEBUG"},
		{"invalid", Invalid(Violation{Field: "Amount", Message: "bad"}), "DEBUG"},
		{"forbidden", Forbidden("Missing required permission: orders:void"), "DEBUG"},
	} {
		var logs strings.Builder
		logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		_, _ = UnaryServerInterceptor(logger)(ctx, nil, info, func(context.Context, any) (any, error) { return nil, tc.err })
		if !strings.Contains(logs.String(), `"level":"`+tc.level+`"`) || !strings.Contains(logs.String(), `"trace_id":"`+id+`"`) {
			t.Errorf("%s: log %s, want level %s with the trace id", tc.name, logs.String(), tc.level)
		}
	}
}

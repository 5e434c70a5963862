package apperr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/almoner/almoner/pkg/db"
)

// ErrorDomain is the domain of every errdetails.ErrorInfo we attach.
const ErrorDomain = "almoner"

var kindCodes = map[Kind]codes.Code{
	KindInternal:         codes.Internal,
	KindInvalid:          codes.InvalidArgument,
	KindNotFound:         codes.NotFound,
	KindUnauthenticated:  codes.Unauthenticated,
	KindPermissionDenied: codes.PermissionDenied,
	KindConflict:         codes.Aborted,
	KindUnprocessable:    codes.FailedPrecondition,
	KindRateLimited:      codes.ResourceExhausted,
	KindUnavailable:      codes.Unavailable,
	// OUT_OF_RANGE ("past the valid range", as seeking past the end) is
	// the one code no other kind uses; the gateway renders it as 410.
	KindGone: codes.OutOfRange,
	// RESOURCE_EXHAUSTED, as for a rate limit: the typed code tells them
	// apart (problem.IsRateLimited), and a status without an almoner
	// ErrorInfo (gRPC's own message-size limit) stays a 500.
	KindTooLarge: codes.ResourceExhausted,
}

// dbKinds is the one mapping of the database's error kinds (db.Interpret)
// to ours, for a database error that reaches a caller without a server
// having turned it into a domain error first. Only an outage is the
// caller's business: PostgreSQL restarting or failing over is transient,
// so the client should retry rather than report a bug (503 with
// Retry-After at the gateway). A not-found is a 404 only where a server
// names the path resource that did not resolve (errors.Is(err,
// db.ErrNotFound) → its own NotFound); a unique or foreign-key violation
// is a domain error only where a store expects that constraint; and a
// serialization failure a store did not run again is ours. Left to this
// table, each of these is a fault of ours: INTERNAL, as before the kinds
// existed. docs/architecture.md, "Database errors", has the table.
var dbKinds = []struct {
	err     error
	kind    Kind
	message string
}{
	{db.ErrUnavailable, KindUnavailable, "The database is unavailable."},
	{db.ErrNotFound, KindInternal, ""},
	{db.ErrUniqueViolation, KindInternal, ""},
	{db.ErrForeignKey, KindInternal, ""},
	{db.ErrSerialization, KindInternal, ""},
}

// fromDB returns the domain error a database error becomes (dbKinds), or
// nil when err is no database error of a known kind.
func fromDB(err error) *Error {
	err = db.Interpret(err)
	for _, k := range dbKinds {
		if errors.Is(err, k.err) {
			return &Error{Kind: k.kind, Message: k.message, cause: err}
		}
	}
	return nil
}

// ToStatus maps err to the status a caller may see. Domain errors keep their
// message, typed code and violations; context errors keep their codes; a
// database error takes the kind dbKinds gives it (an outage is
// UNAVAILABLE); a status error from a downstream call passes through;
// everything else is masked as INTERNAL with no text of the original.
func ToStatus(err error) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	if e, ok := As(err); ok && e.Kind != KindInternal {
		st := status.New(kindCodes[e.Kind], e.Message)
		var details []protoadapt.MessageV1
		if len(e.Violations) > 0 {
			br := &errdetails.BadRequest{}
			for _, v := range e.Violations {
				br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Message})
			}
			details = append(details, br)
		}
		if e.Code != "" || len(e.extensions) > 0 {
			details = append(details, &errdetails.ErrorInfo{Reason: e.Code, Domain: ErrorDomain, Metadata: encodeExtensions(e.extensions)})
		}
		if len(details) > 0 {
			if withDetails, derr := st.WithDetails(details...); derr == nil {
				st = withDetails
			}
		}
		return st
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "The request was cancelled.")
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "The request took too long.")
	}
	if e := fromDB(err); e != nil && e.Kind != KindInternal {
		return status.New(kindCodes[e.Kind], e.Message)
	}
	if st, ok := downstream(err); ok && st.Code() != codes.Unknown && st.Code() != codes.Internal {
		// A downstream service already mapped this one.
		return st
	}
	return status.New(codes.Internal, "An unexpected error occurred.")
}

// Extension members travel in the ErrorInfo's metadata, each value as its
// JSON text under the member's name: ErrorInfo is the one detail every
// domain error with a code already carries, and its metadata is what
// google.rpc meant for "additional structured details".

// encodeExtensions returns the metadata of an ErrorInfo carrying ext
// (members whose value does not encode are left out).
func encodeExtensions(ext map[string]any) map[string]string {
	if len(ext) == 0 {
		return nil
	}
	out := make(map[string]string, len(ext))
	for k, v := range ext {
		if b, err := json.Marshal(v); err == nil {
			out[k] = string(b)
		}
	}
	return out
}

// ExtensionsOf returns the extension members a status carries (With on
// the domain error it came from), each as its JSON text; nil when none.
func ExtensionsOf(st *status.Status) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for _, d := range st.Details() {
		ei, ok := d.(*errdetails.ErrorInfo)
		if !ok || ei.GetDomain() != ErrorDomain {
			continue
		}
		for k, v := range ei.GetMetadata() {
			if !json.Valid([]byte(v)) {
				continue
			}
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[k] = json.RawMessage(v)
		}
	}
	return out
}

// downstream returns the status a downstream call answered, as it
// answered it, however deep in err it is. (status.FromError would put the
// text of every wrap around it, "orders: void order …: rpc error: …",
// into the message a caller sees.)
func downstream(err error) (*status.Status, bool) {
	var gs interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &gs) {
		return nil, false
	}
	st := gs.GRPCStatus()
	return st, st != nil
}

// UnaryServerInterceptor maps handler errors with ToStatus, logs every
// error that was masked (with the request id the gateway forwarded, so an
// operator can find it from a problem document's traceId) and turns a panic
// into a masked INTERNAL status instead of a dead process.
func UnaryServerInterceptor(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				logger.ErrorContext(ctx, "panic in gRPC handler", "method", info.FullMethod,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				resp, err = nil, status.New(codes.Internal, "An unexpected error occurred.").Err()
			}
		}()
		resp, err = handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		st := ToStatus(err)
		logFailure(ctx, logger, "request failed", info.FullMethod, st, err)
		return nil, st.Err()
	}
}

// logFailure logs a failed call at the level its kind deserves, as
// Zitadel's error mapping does: what the platform got wrong (masked
// internal errors, unavailable dependencies) at error with the original
// error, what the caller got wrong (4xx: invalid, not found, forbidden, …)
// at debug, where an operator turns it on to follow one client's trace id.
// Both carry the request's context, so the trace id is on the line.
func logFailure(ctx context.Context, logger *slog.Logger, msg, method string, st *status.Status, err error) {
	switch st.Code() {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DataLoss:
		logger.ErrorContext(ctx, msg, "method", method, "code", st.Code().String(), "error", err.Error())
	default:
		logger.DebugContext(ctx, msg, "method", method, "code", st.Code().String(), "error", st.Message())
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streaming RPCs
// (report exports). It logs with the stream's context, as the unary one
// does with the call's, so the line carries the trace id the client was
// shown in the problem document of a failed export.
func StreamServerInterceptor(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		defer func() {
			if r := recover(); r != nil {
				logger.ErrorContext(ctx, "panic in gRPC stream handler", "method", info.FullMethod,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = status.New(codes.Internal, "An unexpected error occurred.").Err()
			}
		}()
		if err = handler(srv, ss); err != nil {
			st := ToStatus(err)
			logFailure(ctx, logger, "stream failed", info.FullMethod, st, err)
			return st.Err()
		}
		return nil
	}
}

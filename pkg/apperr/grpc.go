package apperr

import (
	"context"
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
}

// ToStatus maps err to the status a caller may see. Domain errors keep their
// message, typed code and violations; context errors keep their codes; a
// database that cannot be reached or is not taking work (db.IsUnavailable)
// is UNAVAILABLE; a status error from a downstream call passes through;
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
		if e.Code != "" {
			details = append(details, &errdetails.ErrorInfo{Reason: e.Code, Domain: ErrorDomain})
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
	case db.IsUnavailable(err):
		// PostgreSQL restarting or failing over: transient, so the client
		// should retry rather than report a bug (503 at the gateway).
		return status.New(codes.Unavailable, "The database is unavailable.")
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown && st.Code() != codes.Internal {
		// A downstream service already mapped this one.
		return st
	}
	return status.New(codes.Internal, "An unexpected error occurred.")
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

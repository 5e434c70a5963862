// Package traceid carries the identifier of one request across the gateway
// → service hop: the id quoted as `traceId` in problem documents and logged
// with every error, so support can go from a customer's report to the log
// line. It is the W3C trace id of the request (32 lowercase hex digits).
package traceid

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// MetadataKey is the gRPC metadata key the gateway forwards the id under.
const MetadataKey = "x-almoner-trace-id"

type ctxKey struct{}

// New returns a fresh random trace id.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the id of the active span, else the id stored by
// NewContext, else "".
func FromContext(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// FromIncoming returns the id of a gRPC server call: the active span's, else
// the one the gateway forwarded in metadata.
func FromIncoming(ctx context.Context) string {
	if id := FromContext(ctx); id != "" {
		return id
	}
	if v := metadata.ValueFromIncomingContext(ctx, MetadataKey); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Forward returns ctx whose outgoing gRPC calls carry the incoming call's
// trace id, so that one id finds the log lines of every service a request
// crossed.
func Forward(ctx context.Context) context.Context {
	if id := FromIncoming(ctx); id != "" {
		return metadata.AppendToOutgoingContext(ctx, MetadataKey, id)
	}
	return ctx
}

package authctx

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/apperr"
)

// healthService is the one gRPC service open without an assertion:
// Kubernetes probes and the gateway's /readyz ask it, and it tells nothing.
const healthService = "/grpc.health.v1.Health/"

// verify checks the call's assertion for method and returns ctx carrying
// what it asserts.
func (k *Key) verify(ctx context.Context, method string) (context.Context, error) {
	v := metadata.ValueFromIncomingContext(ctx, MetadataKey)
	if len(v) != 1 {
		return nil, errMissing
	}
	p, err := k.Verify(v[0], method, k.now())
	if err != nil {
		return nil, err
	}
	return NewIncomingContext(ctx, p), nil
}

// refuse logs why a call was refused, with the peer that made it: a
// forged call on the internal port, a process with another key, or
// clocks apart. The caller learns only Unauthenticated.
func refuse(ctx context.Context, logger *slog.Logger, method string, why error) error {
	addr := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr.String()
	}
	logger.WarnContext(ctx, "internal call refused", "method", method, "peer", addr, "reason", why.Error())
	// A status, not a domain error: the refusal is the same whether or
	// not apperr's mapping runs around this interceptor.
	return apperr.ToStatus(apperr.Unauthenticated()).Err()
}

// UnaryServerInterceptor verifies the assertion of every unary call but
// health checks before its handler runs, and gives the handler what it
// asserts (FromIncoming). An unsigned, forged, expired or misdirected
// assertion is Unauthenticated.
func (k *Key) UnaryServerInterceptor(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, healthService) {
			return handler(ctx, req)
		}
		vctx, err := k.verify(ctx, info.FullMethod)
		if err != nil {
			return nil, refuse(ctx, logger, info.FullMethod, err)
		}
		if err := checkImpersonation(vctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(vctx, req)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streaming calls
// (report exports, health watches).
func (k *Key) StreamServerInterceptor(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if strings.HasPrefix(info.FullMethod, healthService) {
			return handler(srv, ss)
		}
		vctx, err := k.verify(ss.Context(), info.FullMethod)
		if err != nil {
			return refuse(ss.Context(), logger, info.FullMethod, err)
		}
		if err := checkImpersonation(vctx, info.FullMethod); err != nil {
			return err
		}
		return handler(srv, verifiedStream{ServerStream: ss, ctx: vctx})
	}
}

type verifiedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s verifiedStream) Context() context.Context { return s.ctx }

// sign adds the call's assertion to ctx's outgoing metadata: the principal
// NewOutgoingContext put there, or a service assertion; signed afresh, or
// reused for up to Reuse.
func (k *Key) sign(ctx context.Context, method string) (context.Context, error) {
	p, _ := outgoing(ctx)
	a, err := k.assert(p, method)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, a), nil
}

// DialOptions are the client interceptors that sign every call made on a
// connection: each call is signed by the process that makes it, less than
// Reuse before, so a principal forwarded from service to service never
// outlives Lifetime on any hop, however long the first call takes.
func (k *Key) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx, err := k.sign(ctx, method)
			if err != nil {
				return err
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			ctx, err := k.sign(ctx, method)
			if err != nil {
				return nil, err
			}
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

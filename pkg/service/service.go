// Package service is the small surface each Almoner service shows to the
// binaries that host it: a name, migrations, and a constructor returning
// something that registers gRPC servers and runs background work.
package service

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/transport"
)

// Service is a constructed service.
type Service interface {
	// Register adds the service's gRPC servers.
	Register(grpc.ServiceRegistrar)
	// Start begins background work (workers, flushers); it must not block.
	Start(context.Context) error
	// Stop ends background work, finishing what is in flight.
	Stop(context.Context) error
}

// Deps are what a service is built from.
type Deps struct {
	// DB is the primary's pool: every write, and every read that must
	// see the writes before it.
	DB *pgxpool.Pool
	// Reads routes the reads that may lag to a read replica
	// (ALMONER_READ_DATABASE_URL), within ALMONER_READ_MAX_LAG, and to
	// DB otherwise (docs/scaling.md lists which reads use it). Never
	// nil in a host; NewReadPool(DB) reads from DB only.
	Reads  *db.ReadPool
	Logger *slog.Logger
	// Environment is sandbox or production.
	Environment string
	// Dial returns a connection to another service by name, for the
	// generated clients a service calls. Every call made on it is signed
	// with the deployment's internal key: it asserts the principal the
	// caller put in its context (authctx.NewOutgoingContext), else the
	// calling service itself.
	Dial func(service string) (grpc.ClientConnInterface, error)
	// Config is where the service reads its own settings.
	Config config.Source
}

// Module describes a service to a host binary.
type Module struct {
	Name string
	// Migrations are the schemas the service migrates, in order: its own
	// and the shared ones it writes (the audit log). Another service's
	// schema whose views it reads is not listed: the host binary declares
	// that dependency and checks it at start-up (cmd/almoner, app.Needs).
	Migrations func() []db.Migrations
	// New builds the service; it reads its own settings from the environment.
	New func(ctx context.Context, d Deps) (Service, error)
}

// streamWorkers is the number of goroutines a gRPC server keeps for its
// calls: more than the calls in flight in one process at 16 concurrent
// HTTP requests with up to three hops each.
const streamWorkers = 64

// NewGRPCServer returns a gRPC server with the interceptors every service
// shares (error mapping, panic recovery, and the check of every call's
// signed assertion with key: authctx) and grpc.health.v1 registered, the
// one service open without an assertion.
func NewGRPCServer(logger *slog.Logger, key *authctx.Key, opts ...grpc.ServerOption) (*grpc.Server, *health.Server) {
	// Tracing first: when it is an interceptor (spans not recorded,
	// telemetry.Recording), it is the outermost, so every other one logs
	// with the call's trace.
	opts = append(append(telemetry.GRPCServerOptions(),
		// The assertion is checked innermost: a refusal is mapped and
		// counted like any other failure.
		grpc.ChainUnaryInterceptor(telemetry.UnaryServerMetrics(), apperr.UnaryServerInterceptor(logger), key.UnaryServerInterceptor(logger)),
		grpc.ChainStreamInterceptor(telemetry.StreamServerMetrics(), apperr.StreamServerInterceptor(logger), key.StreamServerInterceptor(logger)),
		// Long-lived workers run the calls instead of a new goroutine per
		// call, whose stack grew again on every call: runtime.newstack was
		// 4.6 % of the server's CPU under item-order load. Calls beyond
		// the workers still get a goroutine of their own.
		grpc.NumStreamWorkers(streamWorkers),
	), append(transport.ServerOptions(), opts...)...)
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	return srv, hs
}

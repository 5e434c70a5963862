// Command floor serves the least that Almoner's authenticated read path is
// made of, so scripts/bench-auth.sh can measure that path's ceiling on the
// machine at hand: an HTTP request routed by grpc-gateway's ServeMux, one
// unary gRPC call over loopback TCP to a server in the same process, one
// pgx query (pgbench -S's own: SELECT abalance FROM pgbench_accounts WHERE
// aid = $1) and a protojson answer. No key check, no scope, no tenant, no
// telemetry, no logging, no problem mapping: nothing that Almoner adds to
// that skeleton. What this serves per second is the most any service built
// on this skeleton could (docs/performance.md, "The floor").
//
//	floor -database URL [-http 127.0.0.1:18280] [-grpc 127.0.0.1:19290] [-pprof 127.0.0.1:18390]
//	GET /floor/{aid}
//
// -pprof serves net/http/pprof on a listener of its own, off by default,
// for scripts/profile-auth.sh to profile the floor as it profiles the
// server (ALMONER_DEBUG_ADDR).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // served only on -pprof's own listener
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// accounts answers Check by reading the account named by the request's
// service field, as pgbench -S does.
type accounts struct {
	healthpb.UnimplementedHealthServer
	pool *pgxpool.Pool
}

func (a accounts) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	aid, err := strconv.Atoi(req.GetService())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "aid")
	}
	var balance int
	if err := a.pool.QueryRow(ctx, `SELECT abalance FROM pgbench_accounts WHERE aid = $1`, aid).Scan(&balance); err != nil {
		return nil, status.Error(codes.NotFound, "account")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func main() {
	dbURL, httpAddr, grpcAddr, pprofAddr := parseFlags()
	if pprofAddr != "" {
		go func() {
			srv := &http.Server{Addr: pprofAddr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
			log.Print(srv.ListenAndServe())
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := openPool(ctx, dbURL)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	gs, err := serveGRPC(grpcAddr, pool)
	if err != nil {
		log.Fatal(err)
	}
	defer gs.Stop()
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	mux, err := newMux(healthpb.NewHealthClient(cc))
	if err != nil {
		log.Fatal(err)
	}
	if err := serveHTTP(ctx, httpAddr, mux); err != nil {
		log.Fatal(err)
	}
}

// parseFlags reads the flags, or prints the usage and exits 2 when the
// database is missing.
func parseFlags() (dbURL, httpAddr, grpcAddr, pprofAddr string) {
	flag.StringVar(&dbURL, "database", "", "PostgreSQL URL of a pgbench database (required)")
	flag.StringVar(&httpAddr, "http", "127.0.0.1:18280", "HTTP listen address")
	flag.StringVar(&grpcAddr, "grpc", "127.0.0.1:19290", "gRPC listen address")
	flag.StringVar(&pprofAddr, "pprof", "", "net/http/pprof listen address (off when empty)")
	flag.Parse()
	if dbURL == "" {
		flag.Usage()
		os.Exit(2)
	}
	return dbURL, httpAddr, grpcAddr, pprofAddr
}

// openPool opens the pgbench database's pool, sized as Almoner's.
func openPool(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 16 // as Almoner's pool
	return pgxpool.NewWithConfig(ctx, cfg)
}

// serveGRPC serves accounts over gRPC on addr, in the background.
func serveGRPC(addr string, pool *pgxpool.Pool) (*grpc.Server, error) {
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, accounts{pool: pool})
	go func() { _ = gs.Serve(lis) }()
	return gs, nil
}

// newMux routes GET /floor/{aid} to the gRPC client's Check.
func newMux(client healthpb.HealthClient) (*runtime.ServeMux, error) {
	mux := runtime.NewServeMux()
	if err := mux.HandlePath(http.MethodGet, "/floor/{aid}", getAccount(mux, client)); err != nil {
		return nil, err
	}
	return mux, nil
}

// getAccount is the handler of GET /floor/{aid} on mux.
func getAccount(mux *runtime.ServeMux, client healthpb.HealthClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		// What grpc-gateway's generated handlers do for a unary call.
		ctx, err := runtime.AnnotateContext(r.Context(), mux, r, "/floor.Floor/Get", runtime.WithHTTPPathPattern("/floor/{aid}"))
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		_, out := runtime.MarshalerForRequest(mux, r)
		var md runtime.ServerMetadata
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: p["aid"]}, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, out, w, r, resp)
	}
}

// serveHTTP serves mux on addr until ctx is done.
func serveHTTP(ctx context.Context, addr string, mux *runtime.ServeMux) error {
	srv := &http.Server{Addr: addr, Handler: mux}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "floor: serving http://%s/floor/{aid}\n", addr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

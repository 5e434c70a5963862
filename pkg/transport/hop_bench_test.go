package transport

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// BenchmarkHop measures one unary call (a health check) between a client
// and a server in the same process, as the internal hops of one process
// are made, with 16 callers at once: over TCP loopback with gRPC's
// default transport settings (tcp-default), with ours (tcp), and with
// ours over a Unix socket (unix). It reports the process's CPU (user and
// system) per call, the figure that competes with PostgreSQL on a small
// machine.
func BenchmarkHop(b *testing.B) {
	for _, v := range []struct {
		name, network string
		dial          []grpc.DialOption
		serve         []grpc.ServerOption
	}{
		{"tcp-default", "tcp", nil, nil},
		{"tcp", "tcp", DialOptions(), ServerOptions()},
		{"unix", "unix", DialOptions(), ServerOptions()},
	} {
		network := v.network
		b.Run(v.name, func(b *testing.B) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(b.TempDir(), "grpc.sock")
			}
			lis, err := (&net.ListenConfig{}).Listen(b.Context(), network, addr)
			if err != nil {
				b.Fatal(err)
			}
			srv := grpc.NewServer(append(v.serve, grpc.NumStreamWorkers(64))...)
			healthpb.RegisterHealthServer(srv, health.NewServer())
			go func() { _ = srv.Serve(lis) }()
			defer srv.Stop()
			target := lis.Addr().String()
			if network == "unix" {
				target = "unix://" + target
			}
			cc, err := grpc.NewClient(target, append(v.dial, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = cc.Close() }()
			c := healthpb.NewHealthClient(cc)
			ctx := context.Background()
			if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(8) // 16 callers on 2 cores
			before := cpu()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpu()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpu is the process's user and system time so far, in nanoseconds.
func cpu() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Command almoner is the one Almoner binary.
//
//	almoner serve [--target=all|gateway|auth,...]   run services and/or the REST gateway
//	almoner migrate                                  apply every service's migrations
//	almoner services                                 list the services and what each needs
//	almoner admin tenant create|feature|activate|deactivate ...
//	almoner admin tenant processor set|get|clear ...
//	almoner admin key create ...
//
// Configuration comes from environment variables (see README.md); flags
// override them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only on ALMONER_DEBUG_ADDR
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stderr)
	case "migrate":
		err = migrate(args[1:])
	case "admin":
		err = admin(args[1:], stdout)
	case "services":
		printServices(stdout)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "almoner: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			_, _ = fmt.Fprintf(stderr, "almoner: %v\n", err)
			return 2
		}
		_, _ = fmt.Fprintf(stderr, "almoner: %v\n", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usage(w io.Writer) {
	_, _ = fmt.Fprint(w, `usage: almoner <command> [flags]

commands:
  serve     run services and the REST gateway (--target=`+strings.Join(app.Targets(), "|")+`)
  migrate   apply every service's database migrations
  admin     operator commands: tenant create|feature|activate|deactivate|get, tenant processor set|get|clear, key create
  services  list the services --target can name, with the services each needs migrated

Configuration is read from the environment; see README.md.
`)
}

// printServices prints one service a line, in the order they are
// migrated and started, each followed by the services it needs (app.Needs):
// the first word of a line is the name, for scripts that start them apart.
func printServices(w io.Writer) {
	names := app.Services()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		if needs := app.Needs[n]; len(needs) > 0 {
			_, _ = fmt.Fprintf(w, "%-*s  needs %s\n", width, n, strings.Join(needs, ", "))
		} else {
			_, _ = fmt.Fprintln(w, n)
		}
	}
}

func newLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if config.String("ALMONER_LOG_FORMAT", "json") == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(telemetry.LogHandler(h))
}

func serve(args []string, stderr io.Writer) error {
	cfg, err := app.FromEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", config.String("ALMONER_TARGET", "all"), "what this process runs: "+strings.Join(app.Targets(), ", ")+" (comma-separated)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "REST listen address (ALMONER_HTTP_ADDR)")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", cfg.GRPCAddr, "gRPC listen address (ALMONER_GRPC_ADDR)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL (DATABASE_URL)")
	fs.StringVar(&cfg.Environment, "environment", cfg.Environment, "sandbox or production (ALMONER_ENVIRONMENT)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 30*time.Second, "how long in-flight work may take after SIGTERM")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg.Targets = []string{*target}
	if os.Getenv("GOGC") == "" {
		// The request path allocates many short-lived objects and the live
		// heap is small; collecting less often buys throughput for memory
		// that is cheap here. GOGC still overrides it, GOMEMLIMIT bounds it.
		debug.SetGCPercent(400)
	}
	logger := newLogger(stderr)
	cfg.Logger = logger

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shutdownTracing, err := telemetry.Setup(ctx, "almoner")
	if err != nil {
		return err
	}
	defer shutdownTracing(context.WithoutCancel(ctx)) //nolint:errcheck // flushing on exit: nowhere left to report to
	a, err := app.Start(ctx, cfg)
	if err != nil {
		return err
	}
	logger.Info("almoner serving", "targets", *target, "http_addr", a.HTTPAddr(), "grpc_addr", a.GRPCAddr(),
		"metrics_addr", a.MetricsAddr(), "environment", cfg.Environment)
	if addr := config.String("ALMONER_DEBUG_ADDR", ""); addr != "" {
		// net/http/pprof registers on the default mux, which serves only
		// this separate, operator-only listener.
		go func() {
			srv := &http.Server{Addr: addr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
			logger.Info("debug server", "addr", addr, "error", fmt.Sprint(srv.ListenAndServe()))
		}()
	}
	select {
	case <-ctx.Done():
	case err := <-a.Served():
		logger.Error("http server stopped", "error", fmt.Sprint(err))
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	return a.Stop(sctx)
}

func migrate(args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	url := fs.String("database-url", config.String("DATABASE_URL", ""), "PostgreSQL URL (DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" {
		return usageError{"DATABASE_URL (or --database-url) is required"}
	}
	// Behind a transaction-mode pooler, migrations take their lock on
	// the server itself (ALMONER_DIRECT_DATABASE_URL).
	settings, err := db.LoadSettings(config.Env, *url)
	if err != nil {
		return usageError{err.Error()}
	}
	sessionURL, err := settings.SessionURL()
	if err != nil {
		return usageError{err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return db.Migrate(ctx, sessionURL, app.AllMigrations()...)
}

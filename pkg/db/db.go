// Package db opens the PostgreSQL pool every service shares and holds the
// few helpers that every store needs: transactions, error classification
// and migrations.
package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/telemetry"
)

// Open connects a pool to url (the server, or a session-mode pooler)
// and checks that the server answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return OpenWith(ctx, Settings{URL: url, PoolMode: PoolModeSession})
}

// OpenWith connects a pool to s.URL, configured for s.PoolMode, and
// checks that the server answers.
func OpenWith(ctx context.Context, s Settings) (*pgxpool.Pool, error) {
	return openPool(ctx, s, s.URL, "")
}

// parsePoolConfig parses url with pgx's pool settings.
func parsePoolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	return cfg, nil
}

// openPool opens a pool on url with s's pool mode; appName, when not "",
// names its connections in pg_stat_activity unless url does.
func openPool(ctx context.Context, s Settings, url, appName string) (*pgxpool.Pool, error) {
	cfg, err := parsePoolConfig(url)
	if err != nil {
		return nil, err
	}
	// pgx's default (4, or the CPU count) starves a process serving
	// many concurrent requests; a URL's pool_max_conns still wins.
	if !strings.Contains(url, "pool_max_conns") && cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	if appName != "" && cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
	}
	s.configureConn(cfg.ConnConfig)
	cfg.MaxConnIdleTime = 5 * time.Minute
	afterConnect := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		RegisterUUID(c.TypeMap())
		if afterConnect != nil {
			return afterConnect(ctx, c)
		}
		return nil
	}
	telemetry.TracePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// InTx runs fn in a transaction and commits it when fn returns nil. fn
// makes no network call (OutsideTx, txtrack.go).
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	defer enterTx()()
	return pgx.BeginFunc(ctx, pool, fn)
}

// IsNoRows reports whether err is pgx's no-rows result.
func IsNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// SQLState codes we act on.
const (
	UniqueViolation     = "23505"
	ForeignKeyViolation = "23503"
	LockNotAvailable    = "55P03"
	SerializationFail   = "40001"
	DeadlockDetected    = "40P01"
)

// Code returns the SQLSTATE of a PostgreSQL error, or "".
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsUniqueViolation reports whether err violates the named unique
// constraint (any unique constraint when constraint is ""): Interpret's
// ErrUniqueViolation with that constraint.
func IsUniqueViolation(err error, constraint string) bool {
	c, ok := constraintOf(err, ErrUniqueViolation)
	return ok && (constraint == "" || c == constraint)
}

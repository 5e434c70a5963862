package db

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// Migrations is one schema's forward-only migration set: goose SQL files
// embedded in the service that owns the schema.
type Migrations struct {
	// Schema is the PostgreSQL schema the set owns; its goose version table
	// lives inside it, so services migrate independently.
	Schema string
	// FS holds the *.sql files at its root.
	FS fs.FS
}

// migrationLockID is the advisory lock that serialises migrations, so that
// replicas starting together do not race.
const migrationLockID = 7_316_482_019

// Migrate applies every pending migration of each set, in order.
func Migrate(ctx context.Context, url string, sets ...Migrations) error {
	// Parse as a pool URL, so pool settings in it (pool_max_conns, …) are
	// understood rather than sent to the server as unknown parameters.
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect for migrations: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockID) //nolint:errcheck // the lock goes with the connection anyway

	sqlDB := stdlib.OpenDB(*poolCfg.ConnConfig.Copy())
	defer func() { _ = sqlDB.Close() }()
	for _, set := range sets {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{set.Schema}.Sanitize()); err != nil {
			return fmt.Errorf("create schema %s: %w", set.Schema, err)
		}
		p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, set.FS,
			goose.WithTableName(set.Schema+".goose_db_version"),
			goose.WithDisableGlobalRegistry(true))
		if err != nil {
			return fmt.Errorf("migrations of %s: %w", set.Schema, err)
		}
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", set.Schema, err)
		}
	}
	return nil
}

// Package testdb gives each integration test its own fresh PostgreSQL
// database with the migrations it needs already applied.
//
// The first test of a run that asks for a given set of migrations builds a
// template database (under an advisory lock, so parallel packages cooperate);
// every test then gets CREATE DATABASE … TEMPLATE, which takes tens of
// milliseconds, and the database is dropped when the test ends.
package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/traceid"
)

// ServerURL is the URL of the PostgreSQL server tests use, pointing at a
// maintenance database: ALMONER_TEST_DATABASE_URL, else DATABASE_URL, else
// the local server on 127.0.0.1:5432 as user postgres.
func ServerURL() string {
	for _, k := range []string{"ALMONER_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// WithDatabase returns base with its database name replaced.
func WithDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		// Keyword/value form: append dbname, the last one wins in libpq.
		return base + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

var templates sync.Map // hash → *templateOnce

type templateOnce struct {
	once sync.Once
	err  error
}

// New returns the URL of a fresh database with sets applied.
func New(t testing.TB, sets ...db.Migrations) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server := ServerURL()
	tpl := "almoner_tpl_" + hashSets(t, sets)
	v, _ := templates.LoadOrStore(tpl, &templateOnce{})
	to := v.(*templateOnce)
	to.once.Do(func() { to.err = ensureTemplate(ctx, server, tpl, sets) })
	if to.err != nil {
		t.Fatalf("testdb: PostgreSQL at %s is needed for this test (set ALMONER_TEST_DATABASE_URL, or run `make test`, which finds or starts one): %v", redact(server), to.err)
	}
	name := "almoner_test_" + traceid.New()[:16]
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("testdb: connect: %v", err)
	}
	defer admin.Close(ctx)
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tpl))
		if err == nil {
			break
		}
		// Another session may be cloning the template at this instant.
		if attempt < 50 && strings.Contains(err.Error(), "is being accessed by other users") {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		t.Fatalf("testdb: create database: %v", err)
	}
	// A test database needs no durability across a crash of the server:
	// not waiting for WAL flushes at commit keeps tests that commit
	// thousands of transactions fast on slow or shared disks.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET synchronous_commit = off", name)); err != nil {
		t.Fatalf("testdb: configure database: %v", err)
	}
	// The test's name on its database says whose connections a look at
	// pg_stat_activity finds, when a suite runs many tests at once.
	if _, err := admin.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", name, quoteLiteral(t.Name()))); err != nil {
		t.Fatalf("testdb: name database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
		}
	})
	return WithDatabase(server, name)
}

func ensureTemplate(ctx context.Context, server, tpl string, sets []db.Migrations) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7316482020)"); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7316482020)") //nolint:errcheck // the lock goes with the connection anyway
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tpl).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := tpl + "_build"
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", building)); err != nil {
		return err
	}
	if err := db.Migrate(ctx, WithDatabase(server, building), sets...); err != nil {
		return err
	}
	// Rename only once complete, so a crashed build never leaves a
	// half-migrated template behind.
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, tpl))
	return err
}

func hashSets(t testing.TB, sets []db.Migrations) string {
	h := sha256.New()
	for _, s := range sets {
		_, _ = fmt.Fprintf(h, "schema:%s\n", s.Schema)
		err := fs.WalkDir(s.FS, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(s.FS, path)
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintf(h, "%s:%d\n", path, len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			t.Fatalf("testdb: read migrations of %s: %v", s.Schema, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		if _, ok := p.User.Password(); ok {
			p.User = url.UserPassword(p.User.Username(), "xxxxx")
		}
		return p.String()
	}
	return u
}

// quoteLiteral quotes s as an SQL string literal (COMMENT takes no
// parameters).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

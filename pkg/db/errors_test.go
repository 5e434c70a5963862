package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestInterpret: each error the stores meet takes its kind, keeps its
// text and keeps the original in the chain; anything else passes as it is.
func TestInterpret(t *testing.T) {
	unique := &pgconn.PgError{Code: "23505", Message: `duplicate key value violates unique constraint "funds_tenant_name_key"`, ConstraintName: "funds_tenant_name_key"}
	fk := &pgconn.PgError{Code: "23503", Message: "insert or update violates foreign key constraint", ConstraintName: "api_keys_tenant_id_fkey"}
	other := errors.New("something else")
	cases := []struct {
		name       string
		err        error
		kind       error // nil: passes unchanged
		constraint string
	}{
		{"no rows", pgx.ErrNoRows, db.ErrNotFound, ""},
		{"no rows, wrapped", fmt.Errorf("scan fund: %w", pgx.ErrNoRows), db.ErrNotFound, ""},
		{"unique", unique, db.ErrUniqueViolation, "funds_tenant_name_key"},
		{"unique, wrapped", fmt.Errorf("insert fund: %w", unique), db.ErrUniqueViolation, "funds_tenant_name_key"},
		{"foreign key", fk, db.ErrForeignKey, "api_keys_tenant_id_fkey"},
		{"serialization", &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}, db.ErrSerialization, ""},
		{"deadlock", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, db.ErrSerialization, ""},
		{"admin shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, db.ErrUnavailable, ""},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, db.ErrUnavailable, ""},
		{"cannot connect now", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, db.ErrUnavailable, ""},
		{"too many connections", &pgconn.PgError{Code: "53300"}, db.ErrUnavailable, ""},
		{"connection exception", &pgconn.PgError{Code: "08006"}, db.ErrUnavailable, ""},
		{"lost mid-query", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), db.ErrUnavailable, ""},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, db.ErrUnavailable, ""},
		{"already interpreted", fmt.Errorf("orders: get order: %w", db.ErrNotFound), nil, ""},
		{"check violation", &pgconn.PgError{Code: "23514"}, nil, ""},
		{"syntax error", &pgconn.PgError{Code: "42601"}, nil, ""},
		{"lock not available", &pgconn.PgError{Code: "55P03"}, nil, ""},
		{"cancelled", context.Canceled, nil, ""},
		{"other", other, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := db.Interpret(c.err)
			if got.Error() != c.err.Error() {
				t.Errorf("text %q, want the original's %q", got.Error(), c.err.Error())
			}
			if !errors.Is(got, c.err) {
				t.Errorf("the original %v is not in the chain of %v", c.err, got)
			}
			var e *db.Error
			if c.kind == nil {
				if got != c.err { //nolint:errorlint // the very same value, not one wrapping it
					t.Errorf("Interpret(%v) = %#v, want it unchanged", c.err, got)
				}
				return
			}
			if !errors.As(got, &e) || !errors.Is(e.Kind, c.kind) || !errors.Is(got, c.kind) {
				t.Fatalf("Interpret(%v) = %#v, want kind %v", c.err, got, c.kind)
			}
			if e.Constraint != c.constraint {
				t.Errorf("constraint %q, want %q", e.Constraint, c.constraint)
			}
			for _, k := range []error{db.ErrNotFound, db.ErrUniqueViolation, db.ErrForeignKey, db.ErrSerialization, db.ErrUnavailable} {
				if !errors.Is(k, c.kind) && errors.Is(got, k) {
					t.Errorf("also %v", k)
				}
			}
			var pe *pgconn.PgError
			if errors.As(c.err, new(*pgconn.PgError)) && !errors.As(got, &pe) {
				t.Errorf("errors.As finds no *pgconn.PgError in %v", got)
			}
			if again := db.Interpret(got); again != got { //nolint:errorlint // the very same value
				t.Errorf("a second Interpret changed %#v to %#v", got, again)
			}
			if wrapped := fmt.Errorf("orders: insert order: %w", got); !errors.Is(wrapped, c.kind) {
				t.Errorf("wrapped with context, %v is no longer %v", wrapped, c.kind)
			}
		})
	}
	if db.Interpret(nil) != nil {
		t.Error("Interpret(nil) != nil")
	}
	if !db.IsUniqueViolation(fmt.Errorf("x: %w", unique), "funds_tenant_name_key") || db.IsUniqueViolation(unique, "other_key") || !db.IsUniqueViolation(unique, "") {
		t.Error("IsUniqueViolation does not read the constraint")
	}
	if db.IsUniqueViolation(fk, "") {
		t.Error("a foreign-key violation is a unique violation")
	}
}

// TestInterpretRealErrors: a real PostgreSQL produces each kind, and
// Interpret reads it as such.
func TestInterpretRealErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := testdb.New(t)
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `
		CREATE TABLE parent (id int PRIMARY KEY, name text CONSTRAINT parent_name_key UNIQUE, n int NOT NULL DEFAULT 0);
		CREATE TABLE child (id int PRIMARY KEY, parent_id int CONSTRAINT child_parent_fk REFERENCES parent);
		INSERT INTO parent (id, name) VALUES (1, 'a'), (2, 'b')`); err != nil {
		t.Fatal(err)
	}
	kindOf := func(t *testing.T, err error, want error, constraint string) {
		t.Helper()
		got := db.Interpret(err)
		var e *db.Error
		if !errors.As(got, &e) || !errors.Is(e.Kind, want) || e.Constraint != constraint {
			t.Fatalf("Interpret(%T %v) = %#v, want kind %v constraint %q", err, err, got, want, constraint)
		}
	}

	t.Run("no rows", func(t *testing.T) {
		var id int
		kindOf(t, pool.QueryRow(ctx, `SELECT id FROM parent WHERE id = 99`).Scan(&id), db.ErrNotFound, "")
	})
	t.Run("unique", func(t *testing.T) {
		_, err := pool.Exec(ctx, `INSERT INTO parent (id, name) VALUES (3, 'a')`)
		kindOf(t, err, db.ErrUniqueViolation, "parent_name_key")
	})
	t.Run("foreign key", func(t *testing.T) {
		_, err := pool.Exec(ctx, `INSERT INTO child VALUES (1, 99)`)
		kindOf(t, err, db.ErrForeignKey, "child_parent_fk")
	})
	t.Run("serialization", func(t *testing.T) {
		// A repeatable-read transaction updates a row that another one
		// changed after its snapshot.
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT n FROM parent WHERE id = 1`); err != nil {
				return err
			}
			if _, err := pool.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 1`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 1`)
			return err
		})
		kindOf(t, err, db.ErrSerialization, "")
	})
	t.Run("deadlock", func(t *testing.T) {
		a, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Rollback(ctx) //nolint:errcheck // ends the transaction whatever happened
		b, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Rollback(ctx) //nolint:errcheck // ends the transaction whatever happened
		if _, err := a.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 2`); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		go func() {
			_, err := a.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 2`)
			errs <- err
		}()
		go func() {
			_, err := b.Exec(ctx, `UPDATE parent SET n = n + 1 WHERE id = 1`)
			errs <- err
		}()
		// PostgreSQL ends one of the two; the other then goes on.
		first, second := <-errs, <-errs
		if first == nil {
			first = second
		}
		kindOf(t, first, db.ErrSerialization, "")
	})
	t.Run("connection terminated", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, conn.PgConn().PID()); err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, `SELECT 1`)
		kindOf(t, err, db.ErrUnavailable, "")
	})
	t.Run("connection refused", func(t *testing.T) {
		l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		_, err = pgx.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2")
		kindOf(t, err, db.ErrUnavailable, "")
	})
}

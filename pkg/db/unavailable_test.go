package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A real refused connection: nothing listens on the port just freed.
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, connErr := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2")
	var ce *pgconn.ConnectError
	if !errors.As(connErr, &ce) {
		t.Fatalf("connect to a closed port: %T %v, want a ConnectError", connErr, connErr)
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("store: list orders: %w", connErr), true},
		{"admin shutdown", &pgconn.PgError{Code: AdminShutdown, Message: "terminating connection due to administrator command"}, true},
		{"crash shutdown", &pgconn.PgError{Code: CrashShutdown}, true},
		{"starting up", fmt.Errorf("x: %w", &pgconn.PgError{Code: CannotConnectNow, Message: "the database system is starting up"}), true},
		{"too many connections", &pgconn.PgError{Code: TooManyConnections}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"lost mid-query", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{"reset", fmt.Errorf("write: %w", &net.OpError{Op: "write", Net: "tcp", Err: errors.New("connection reset by peer")}), true},
		{"unique violation", &pgconn.PgError{Code: UniqueViolation}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"no rows", errors.New("no rows in result set"), false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := IsUnavailable(c.err); got != c.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

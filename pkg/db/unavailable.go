package db

import "errors"

// SQLSTATEs of a server that is going away or not yet accepting work.
const (
	AdminShutdown      = "57P01" // pg_ctl stop, a failover: sessions are terminated
	CrashShutdown      = "57P02"
	CannotConnectNow   = "57P03" // starting up, shutting down, in recovery
	TooManyConnections = "53300"
)

// IsUnavailable reports whether err means that PostgreSQL cannot be
// reached or is not taking work right now — a transient outage, such as a
// restart or a failover, rather than a fault of the request or of our
// code: Interpret's ErrUnavailable. The gRPC error mapping (pkg/apperr)
// answers such errors UNAVAILABLE, which the gateway turns into 503 with
// Retry-After, instead of a 500.
//
// Unavailable are: a failed connection attempt (refused, unreachable,
// timed out, or the server's own refusal while starting up), the server's
// connection-exception, shutdown and cannot-connect-now SQLSTATEs (class
// 08, 57P01-57P03) and too_many_connections (53300), and a connection lost
// in the middle of a query (a network error or an unexpected end of the
// stream, which pgconn wraps).
func IsUnavailable(err error) bool { return errors.Is(Interpret(err), ErrUnavailable) }

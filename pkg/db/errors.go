package db

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The kinds of database error that Interpret recognises. A store compares
// with errors.Is (db.ErrNotFound), a server turns ErrNotFound into its own
// 404, and pkg/apperr's ToStatus is the one place that says what the
// others become when they reach a caller (docs/architecture.md, "Database
// errors").
var (
	// ErrNotFound: the row a statement looked for does not exist (or not
	// in the tenant). A store also returns it, wrapped, when it finds no
	// row by other means (an UPDATE that touched none).
	ErrNotFound = errors.New("not found")
	// ErrUniqueViolation: 23505; Error.Constraint names the constraint.
	ErrUniqueViolation = errors.New("unique violation")
	// ErrForeignKey: 23503; Error.Constraint names the constraint.
	ErrForeignKey = errors.New("foreign key violation")
	// ErrSerialization: 40001 or 40P01, a clash with concurrent work that
	// PostgreSQL resolved by aborting this transaction; running the whole
	// transaction again may succeed.
	ErrSerialization = errors.New("serialization failure")
	// ErrUnavailable: PostgreSQL cannot be reached or is not taking work
	// right now (a restart, a failover); see IsUnavailable for the rules.
	ErrUnavailable = errors.New("database unavailable")
)

// Error is a database error of a kind Interpret recognised. Its text is
// the original's, and both the kind and the original are in its chain:
// errors.Is(err, db.ErrUniqueViolation), errors.Is(err, pgx.ErrNoRows) and
// errors.As(err, &*pgconn.PgError) all hold.
type Error struct {
	// Kind is one of ErrNotFound, ErrUniqueViolation, ErrForeignKey,
	// ErrSerialization and ErrUnavailable.
	Kind error
	// Constraint is the violated constraint of a unique or foreign-key
	// violation, else "".
	Constraint string
	// Err is the error interpreted, as it was.
	Err error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap gives the kind and the original to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

var kinds = []error{ErrNotFound, ErrUniqueViolation, ErrForeignKey, ErrSerialization, ErrUnavailable}

// Interpret is the one reading of a database error: it returns err with
// its kind attached (an *Error) when it is one of these, and err itself
// otherwise (nil stays nil):
//
//	pgx.ErrNoRows                                    ErrNotFound
//	23505 unique_violation                           ErrUniqueViolation (with the constraint)
//	23503 foreign_key_violation                      ErrForeignKey (with the constraint)
//	40001 serialization_failure, 40P01 deadlock      ErrSerialization
//	connection failures, class 08, 57P01-57P03,      ErrUnavailable
//	53300, a connection lost mid-query
//
// An error that already carries a kind is returned as it is. The original
// stays in the chain, so errors.Is and errors.As see everything they saw
// before.
func Interpret(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return err
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &Error{Kind: ErrNotFound, Err: err}
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Whatever refused the connection (the network, or the server
		// while starting up), this request cannot be served now.
		return &Error{Kind: ErrUnavailable, Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case UniqueViolation:
			return &Error{Kind: ErrUniqueViolation, Constraint: pe.ConstraintName, Err: err}
		case ForeignKeyViolation:
			return &Error{Kind: ErrForeignKey, Constraint: pe.ConstraintName, Err: err}
		case SerializationFail, DeadlockDetected:
			return &Error{Kind: ErrSerialization, Err: err}
		case AdminShutdown, CrashShutdown, CannotConnectNow, TooManyConnections:
			return &Error{Kind: ErrUnavailable, Err: err}
		}
		if strings.HasPrefix(pe.Code, "08") {
			return &Error{Kind: ErrUnavailable, Err: err}
		}
		return err
	}
	// A connection lost in the middle of a query: a network error or an
	// unexpected end of the stream, which pgconn wraps.
	var ne *net.OpError
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Kind: ErrUnavailable, Err: err}
	}
	return err
}

// constraintOf returns the constraint of a unique or foreign-key
// violation of kind k in err, and whether err is one.
func constraintOf(err error, k error) (string, bool) {
	var e *Error
	if !errors.As(Interpret(err), &e) || !errors.Is(e.Kind, k) {
		return "", false
	}
	return e.Constraint, true
}

// Found is a handler's "get by id or 404" in one line: v and err from a
// store's read, with a missing row (ErrNotFound anywhere in err's chain)
// answered as notFound, the service's domain error naming what was not
// there. Any other error passes as it is.
func Found[T any](v T, err error, notFound error) (T, error) {
	if errors.Is(err, ErrNotFound) {
		var zero T
		return zero, notFound
	}
	return v, err
}

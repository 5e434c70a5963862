// Package ratelimit counts requests in fixed windows in PostgreSQL, so that
// every replica of a service shares one counter per client, and resolves
// the client address a limit is keyed by.
//
// The policies are the spec's (Limits → Rate limits): for example
// contact-form allows 5 requests per source IP per 15-minute window. A
// rejected request gets the flat 429 body (apperr.RateLimited, rendered by
// the gateway), with no Retry-After and no X-RateLimit-* headers.
package ratelimit

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the ratelimit schema's migrations; a service that
// limits requests lists them among its own.
func Migrations() db.Migrations {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return db.Migrations{Schema: "ratelimit", FS: sub}
}

// Policy is a fixed-window rule: at most Limit requests per key in each
// Window-long window (windows start at multiples of Window since the Unix
// epoch, so every replica agrees on them).
type Policy struct {
	Name   string
	Limit  int
	Window time.Duration
}

// ContactForm is the spec's contact-form policy: 5 requests per source IP
// per 15 minutes.
var ContactForm = Policy{Name: "contact-form", Limit: 5, Window: 15 * time.Minute}

// Execer runs statements; a pool or a connection.
type Execer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Limiter counts requests in the ratelimit schema.
type Limiter struct {
	db Execer
}

// New returns a Limiter on db. Call it outside the request's transaction:
// a counted request must stay counted when the request itself fails.
func New(db Execer) *Limiter { return &Limiter{db: db} }

// Allow counts one request of key under p, in the window of the database's
// clock, and reports whether it is within the limit.
func (l *Limiter) Allow(ctx context.Context, p Policy, key string) (bool, error) {
	return l.allow(ctx, p, key, nil)
}

// AllowAt is Allow in the window that contains at (for tests and replays).
func (l *Limiter) AllowAt(ctx context.Context, p Policy, key string, at time.Time) (bool, error) {
	return l.allow(ctx, p, key, &at)
}

func (l *Limiter) allow(ctx context.Context, p Policy, key string, at *time.Time) (bool, error) {
	secs := int64(p.Window / time.Second)
	if secs <= 0 || p.Limit <= 0 || p.Name == "" {
		return false, fmt.Errorf("ratelimit: bad policy %+v", p)
	}
	// The database's clock decides the window, so replicas whose clocks
	// drift still count into the same row.
	var n int
	err := l.db.QueryRow(ctx, `
		INSERT INTO ratelimit.counters AS c (policy, key, window_start, count, expires_at)
		SELECT $1, $2, w.start, 1, w.start + make_interval(secs => $3::bigint)
		FROM (SELECT to_timestamp(floor(extract(epoch FROM coalesce($4::timestamptz, now())) / $3::bigint) * $3::bigint) AS start) w
		ON CONFLICT (policy, key, window_start) DO UPDATE SET count = c.count + 1
		RETURNING c.count`, p.Name, key, secs, at).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("ratelimit: count %s: %w", p.Name, err)
	}
	if n > p.Limit {
		rejections.WithLabelValues(p.Name).Inc()
		return false, nil
	}
	return true, nil
}

// Exceeded reports whether key has used up p in the current window,
// without counting a request: for policies that count only failures (a
// sign-in checks it first and counts with Allow only when it fails).
func (l *Limiter) Exceeded(ctx context.Context, p Policy, key string) (bool, error) {
	secs := int64(p.Window / time.Second)
	var n int
	err := l.db.QueryRow(ctx, `
		SELECT coalesce(max(count), 0) FROM ratelimit.counters
		WHERE policy = $1 AND key = $2
		  AND window_start = to_timestamp(floor(extract(epoch FROM now()) / $3::bigint) * $3::bigint)`, p.Name, key, secs).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("ratelimit: read %s: %w", p.Name, err)
	}
	if n >= p.Limit {
		rejections.WithLabelValues(p.Name).Inc()
		return true, nil
	}
	return false, nil
}

// rejections counts requests refused under each policy.
var rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "almoner_ratelimit_rejections_total",
	Help: "Requests rejected by a rate-limit policy.",
}, []string{"policy"})

func init() { telemetry.Register(rejections) }

// Prune deletes the counters of windows that ended before before; a
// service calls it now and then so the table stays small.
func (l *Limiter) Prune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := l.db.Exec(ctx, `DELETE FROM ratelimit.counters WHERE expires_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("ratelimit: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}

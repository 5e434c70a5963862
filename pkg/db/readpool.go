package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReadPool routes the reads that may lag (docs/scaling.md lists them) to
// a streaming hot standby while the standby is up and its replay lag is
// within a bound, and to the primary otherwise. Reads that must see their
// own writes never use it: they use the primary pool (Deps.DB).
//
// The lag is measured on the WAL, not on the last replayed commit's
// time, which ages on an idle primary: at most once a second
// (lagCheckEvery) the pool notes the primary's WAL position with the
// time it read it; the standby's lag is the age of the oldest noted
// position it has not replayed yet (zero when it has replayed them all).
// Whatever has committed on the primary at a moment is on the standby
// once that lag is under the bound, give or take the second between
// checks.
//
// A read whose standby connection fails (the standby stopped, restarted,
// or cancelled the query for a recovery conflict) runs again on the
// primary, and the standby counts as down until the next check finds it
// answering: stopping the standby fails no request.
type ReadPool struct {
	primary *pgxpool.Pool
	standby *pgxpool.Pool
	maxLag  time.Duration
	logger  *slog.Logger
	now     func() time.Time

	// useStandby is the last check's verdict.
	useStandby atomic.Bool
	// checking is set while one caller checks; the others route by the
	// last verdict meanwhile.
	checking atomic.Bool

	mu        sync.Mutex
	checkedAt time.Time
	samples   []walSample
	lag       time.Duration

	standbyReads atomic.Int64
	primaryReads atomic.Int64
}

// walSample is the primary's WAL position at a time.
type walSample struct {
	lsn uint64
	at  time.Time
}

// lagCheckEvery is how often, at most, a process checks the standby.
const lagCheckEvery = time.Second

// maxSamples bounds the positions kept while a standby stays behind.
const maxSamples = 64

// NewReadPool is a ReadPool that reads from primary only.
func NewReadPool(primary *pgxpool.Pool) *ReadPool {
	return &ReadPool{primary: primary, now: time.Now, logger: slog.Default()}
}

// OpenReadPool opens s.ReadURL's pool beside primary; without a ReadURL
// every read goes to primary. The standby need not answer yet: reads go
// to the primary until it does.
func OpenReadPool(ctx context.Context, s Settings, primary *pgxpool.Pool, logger *slog.Logger) (*ReadPool, error) {
	r := NewReadPool(primary)
	if logger != nil {
		r.logger = logger
	}
	if s.ReadURL == "" {
		return r, nil
	}
	cfg, err := parsePoolConfig(s.ReadURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ReadURLVar, err)
	}
	// The standby is never behind a transaction-mode pooler of ours
	// unless the operator says so for DATABASE_URL too.
	s.configureConn(cfg.ConnConfig)
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "almoner-read"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 2*time.Second {
		cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	}
	cfg.MaxConns = primary.Config().MaxConns
	cfg.MaxConnIdleTime = primary.Config().MaxConnIdleTime
	r.standby, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the read pool (%s): %w", ReadURLVar, err)
	}
	r.maxLag = s.ReadMaxLag
	if r.maxLag <= 0 {
		r.maxLag = DefaultReadMaxLag
	}
	return r, nil
}

// Primary is the primary pool.
func (r *ReadPool) Primary() *pgxpool.Pool { return r.primary }

// HasStandby reports whether a standby is configured.
func (r *ReadPool) HasStandby() bool { return r != nil && r.standby != nil }

// Close closes the standby's pool (the primary's belongs to its opener).
func (r *ReadPool) Close() {
	if r != nil && r.standby != nil {
		r.standby.Close()
	}
}

// Counts returns how many reads went to the standby and to the primary.
func (r *ReadPool) Counts() (standby, primary int64) {
	return r.standbyReads.Load(), r.primaryReads.Load()
}

// Lag returns the standby's lag at the last check.
func (r *ReadPool) Lag() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lag
}

// Pool returns the pool a lagging read should use now: the standby's
// while it is up and within the bound, else the primary's. Prefer Do or
// BeginTx, which also go to the primary when the standby fails the read.
func (r *ReadPool) Pool(ctx context.Context) *pgxpool.Pool {
	if r == nil {
		return nil
	}
	if r.standby == nil {
		return r.primary
	}
	r.maybeCheck(ctx)
	if r.useStandby.Load() {
		return r.standby
	}
	return r.primary
}

// Do runs fn on the pool Pool chooses; when that is the standby and fn
// fails for the standby's sake (ConnectionFailure), the standby counts as
// down and fn runs again on the primary. fn must only read.
func (r *ReadPool) Do(ctx context.Context, fn func(*pgxpool.Pool) error) error {
	p := r.Pool(ctx)
	if p != r.standby {
		r.primaryReads.Add(1)
		return fn(p)
	}
	err := fn(p)
	if err == nil || ctx.Err() != nil || !r.standbyFailure(ctx, err) {
		r.standbyReads.Add(1)
		return err
	}
	r.markDown(err)
	r.primaryReads.Add(1)
	return fn(r.primary)
}

// BeginTx begins a read-only transaction on the pool Pool chooses, then
// runs setup in it (session-free settings: set_config(…, true)); when
// either fails on the standby for its sake, the standby counts as down
// and the transaction begins on the primary instead. The caller ends the
// transaction.
func (r *ReadPool) BeginTx(ctx context.Context, opts pgx.TxOptions, setup func(pgx.Tx) error) (pgx.Tx, error) {
	opts.AccessMode = pgx.ReadOnly
	var tx pgx.Tx
	err := r.Do(ctx, func(p *pgxpool.Pool) error {
		t, err := p.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		if setup != nil {
			if err := setup(t); err != nil {
				_ = t.Rollback(ctx)
				return err
			}
		}
		tx = t
		return nil
	})
	return tx, err
}

// standbyFailure reports whether err is the standby's failure rather than
// the read's: the server shutting down or starting, no connection, or a
// query cancelled for a recovery conflict. An error that is no answer of
// the server's (a connection lost, refused or timed out: pgx has no one
// type for them) counts when the standby then fails a ping too.
func (r *ReadPool) standbyFailure(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") ||
			pe.Code == SerializationFail && strings.Contains(pe.Message, "recovery")
	}
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, pgx.ErrTxClosed) {
		return false
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return r.standby.Ping(pctx) != nil
}

func (r *ReadPool) markDown(err error) {
	if r.useStandby.Swap(false) {
		r.logger.Warn("read replica failed a read; reading from the primary", "error", err.Error())
	}
	r.mu.Lock()
	r.checkedAt = r.now() // the next check is a second away
	r.mu.Unlock()
}

// maybeCheck checks the standby when the last check is a second old and
// no other caller is checking.
func (r *ReadPool) maybeCheck(ctx context.Context) {
	r.mu.Lock()
	due := r.now().Sub(r.checkedAt) >= lagCheckEvery
	r.mu.Unlock()
	if !due || !r.checking.CompareAndSwap(false, true) {
		return
	}
	defer r.checking.Store(false)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	ok, lag, err := r.check(cctx)
	if was := r.useStandby.Swap(ok); was != ok {
		if ok {
			r.logger.Info("reading from the read replica", "lag", lag.String())
		} else {
			msg := "read replica behind; reading from the primary"
			if err != nil {
				msg = "read replica unavailable; reading from the primary: " + err.Error()
			}
			r.logger.Warn(msg, "lag", lag.String(), "max_lag", r.maxLag.String())
		}
	}
}

// check measures the standby's lag and returns whether reads may go
// there.
func (r *ReadPool) check(ctx context.Context) (bool, time.Duration, error) {
	var primaryLSN string
	err := r.primary.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&primaryLSN)
	at := r.now()
	var replayed *string
	if err == nil {
		err = r.standby.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&replayed)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkedAt = r.now()
	if err != nil {
		return false, 0, err
	}
	if replayed == nil {
		return false, 0, errors.New("not a standby (pg_last_wal_replay_lsn is null)")
	}
	p, err1 := parseLSN(primaryLSN)
	s, err2 := parseLSN(*replayed)
	if err := errors.Join(err1, err2); err != nil {
		return false, 0, err
	}
	r.lag = r.noteLSN(p, s, at)
	return r.lag <= r.maxLag, r.lag, nil
}

// noteLSN records the primary's position p read at time at, drops the
// positions the standby has replayed (up to s), and returns the age of
// the oldest left. Called with mu held.
func (r *ReadPool) noteLSN(p, s uint64, at time.Time) time.Duration {
	r.samples = append(r.samples, walSample{lsn: p, at: at})
	keep := r.samples[:0]
	for _, x := range r.samples {
		if x.lsn > s {
			keep = append(keep, x)
		}
	}
	r.samples = keep
	if len(r.samples) > maxSamples {
		// The oldest sets the lag; those between it and the newest
		// only refine it once the oldest is replayed.
		r.samples = append(r.samples[:1], r.samples[len(r.samples)-maxSamples+1:]...)
	}
	if len(r.samples) == 0 {
		return 0
	}
	return r.now().Sub(r.samples[0].at)
}

// parseLSN parses PostgreSQL's text form of a WAL position ("16/B374D848").
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("WAL position %q: want X/Y", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	return h<<32 | l, nil
}

package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/config"
)

// The settings that say where a process's database connections go
// (docs/scaling.md).
const (
	// PoolModeVar says what DATABASE_URL names: the server itself or a
	// pooler in session mode ("session", the default), or a pooler in
	// transaction mode ("transaction", PgBouncer's pool_mode =
	// transaction), where no session state outlives a transaction.
	PoolModeVar = "ALMONER_DATABASE_POOL_MODE"
	// DirectURLVar names the server itself, for what needs a session
	// when DATABASE_URL names a transaction-mode pooler: migrations'
	// advisory lock.
	DirectURLVar = "ALMONER_DIRECT_DATABASE_URL"
	// ReadURLVar names a streaming hot standby for the reads that may lag
	// (ReadPool).
	ReadURLVar = "ALMONER_READ_DATABASE_URL"
	// ReadMaxLagVar bounds the standby's lag: past it, reads go to the
	// primary (default DefaultReadMaxLag).
	ReadMaxLagVar = "ALMONER_READ_MAX_LAG"
)

// Pool modes (PoolModeVar).
const (
	PoolModeSession     = "session"
	PoolModeTransaction = "transaction"
)

// DefaultReadMaxLag is the standby lag past which reads go to the primary.
const DefaultReadMaxLag = 5 * time.Second

// Settings say where a process's connections go.
type Settings struct {
	// URL is DATABASE_URL: the server, or a pooler in front of it.
	URL string
	// PoolMode is PoolModeSession or PoolModeTransaction.
	PoolMode string
	// DirectURL is the server itself ("" when URL is).
	DirectURL string
	// ReadURL is a hot standby ("" for none).
	ReadURL string
	// ReadMaxLag bounds the standby's lag.
	ReadMaxLag time.Duration
}

// LoadSettings reads the settings beside url (DATABASE_URL) from src.
func LoadSettings(src config.Source, url string) (Settings, error) {
	s := Settings{
		URL:       url,
		PoolMode:  src.String(PoolModeVar, PoolModeSession),
		DirectURL: src.String(DirectURLVar, ""),
		ReadURL:   src.String(ReadURLVar, ""),
	}
	if s.PoolMode != PoolModeSession && s.PoolMode != PoolModeTransaction {
		return Settings{}, fmt.Errorf("%s=%q: want session or transaction", PoolModeVar, s.PoolMode)
	}
	lag, err := src.Duration(ReadMaxLagVar, DefaultReadMaxLag)
	if err != nil {
		return Settings{}, err
	}
	s.ReadMaxLag = lag
	return s, nil
}

// Transaction reports whether URL names a transaction-mode pooler.
func (s Settings) Transaction() bool { return s.PoolMode == PoolModeTransaction }

// ErrNoSession is SessionURL's refusal: a transaction-mode pooler cannot
// hold a session-level advisory lock, and no direct URL is set.
var ErrNoSession = errors.New(PoolModeVar + "=transaction: migrations need a session of their own (an advisory lock held across migrations): set " +
	DirectURLVar + " to the server itself, or migrate with `almoner migrate --database-url` at the server and start with ALMONER_MIGRATE=false")

// SessionURL is the URL for what needs a session (migrations): the
// direct URL when set, else URL unless it names a transaction-mode
// pooler.
func (s Settings) SessionURL() (string, error) {
	if s.DirectURL != "" {
		return s.DirectURL, nil
	}
	if s.Transaction() {
		return "", ErrNoSession
	}
	return s.URL, nil
}

// PoolExecMode is how statements run on a transaction-mode pooler's
// connections. PgBouncer 1.18 (Debian's) passes no protocol-level
// prepared statement between server connections, so pgx's default
// (statements prepared by name once per connection and reused) fails
// with "prepared statement … does not exist" as soon as a statement
// lands on another server connection. QueryExecModeCacheDescribe keeps
// only each statement's description on the client and sends it
// unnamed, parse and execute in one round trip; the whole e2e suite ran
// with it through PgBouncer 1.18 (make test-pgbouncer). It keeps binary
// parameters, so the uuid codec (RegisterUUID) and arrays work as they
// do directly, which QueryExecModeExec's text guessing does not
// promise; a description cached before a migration changes a table is
// refreshed by pgx after the one failed execution it causes.
const PoolExecMode = pgx.QueryExecModeCacheDescribe

// configureConn sets what a transaction-mode pooler needs of a
// connection.
func (s Settings) configureConn(c *pgx.ConnConfig) {
	if s.Transaction() {
		c.DefaultQueryExecMode = PoolExecMode
	}
}

// ConnConfig parses URL for a single connection, configured for the
// pool mode.
func (s Settings) ConnConfig() (*pgx.ConnConfig, error) {
	c, err := parsePoolConfig(s.URL)
	if err != nil {
		return nil, err
	}
	cc := c.ConnConfig.Copy()
	s.configureConn(cc)
	return cc, nil
}

// Connect opens one connection for a short piece of work that needs no
// session of its own (a check at start-up): to the direct URL when set,
// else to URL configured for the pool mode.
func (s Settings) Connect(ctx context.Context) (*pgx.Conn, error) {
	if s.DirectURL != "" {
		c, err := parsePoolConfig(s.DirectURL)
		if err != nil {
			return nil, err
		}
		return pgx.ConnectConfig(ctx, c.ConnConfig)
	}
	cc, err := s.ConnConfig()
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cc)
}

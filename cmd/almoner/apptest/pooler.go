package apptest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/pkg/testpg"
)

// PoolerVar set to 1 runs every cluster's services through one PgBouncer
// in transaction mode (make test-pgbouncer): DATABASE_URL names the
// pooler, ALMONER_DATABASE_POOL_MODE=transaction, and
// ALMONER_DIRECT_DATABASE_URL the server, as docs/scaling.md deploys it.
// Tests keep reading and writing their database directly
// (Cluster.DatabaseURL), and child processes connect directly too.
const PoolerVar = "ALMONER_E2E_PGBOUNCER"

var pooler struct {
	once sync.Once
	b    *testpg.PgBouncer
	err  error
}

// PoolerOn reports whether clusters run through PgBouncer.
func PoolerOn() bool { return os.Getenv(PoolerVar) == "1" }

// StopPooler stops the run's PgBouncer, if one was started; TestMain
// calls it after m.Run.
func StopPooler() {
	if pooler.b != nil {
		pooler.b.Close()
		pooler.b = nil
	}
}

// throughPooler returns the app's database URL for dbURL and the settings
// that go with it: dbURL itself unless the pooler is on.
func throughPooler(t testing.TB, dbURL string, settings map[string]string) string {
	t.Helper()
	// A database on a server of the test's own (a standby's primary,
	// a server the test stops) stays direct: the pooler fronts the
	// shared test server only.
	if !PoolerOn() || serverOf(dbURL) != serverOf(testdb.ServerURL()) {
		return dbURL
	}
	pooler.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pooler.b, pooler.err = testpg.StartPgBouncer(ctx, testdb.ServerURL(), "transaction")
	})
	if pooler.err != nil {
		t.Fatalf("apptest: %s=1 needs PgBouncer: %v", PoolerVar, pooler.err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("apptest: parse %s: %v", dbURL, err)
	}
	if _, ok := settings[db.PoolModeVar]; !ok {
		settings[db.PoolModeVar] = db.PoolModeTransaction
	}
	if _, ok := settings[db.DirectURLVar]; !ok {
		settings[db.DirectURLVar] = dbURL
	}
	return pooler.b.URL(dbURL, strings.TrimPrefix(u.Path, "/"))
}

// serverOf is the host and port a PostgreSQL URL connects to.
func serverOf(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	host, port := u.Hostname(), u.Port()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if p := u.Query().Get("port"); p != "" {
		port = p
	}
	if port == "" {
		port = "5432"
	}
	return host + ":" + port
}

// PoolerTransactions returns how many transactions the run's PgBouncer
// passed to the cluster's database (0 when the pooler is off).
func (c *Cluster) PoolerTransactions(t testing.TB) int64 {
	t.Helper()
	if pooler.b == nil {
		return 0
	}
	u, err := url.Parse(c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := pooler.b.Transactions(t.Context(), testdb.ServerURL(), strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		t.Fatalf("apptest: %v", err)
	}
	return n
}

package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts/migrations"
	"github.com/almoner/almoner/services/contacts/store"
)

// TestStoreErrorsSayWhere: a store error keeps its kind (db.Interpret)
// and the original error in the chain, and says which call failed
// ("contacts: <verb> <thing>: …"), as every store's do.
func TestStoreErrorsSayWhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.New(t, audit.Migrations(), migrations.Set())
	pool, err := db.Open(ctx, url+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool)
	tenant := uuid.New()

	_, err = s.Get(ctx, tenant, 999)
	if !errors.Is(err, db.ErrNotFound) || !errors.Is(err, pgx.ErrNoRows) || !strings.HasPrefix(err.Error(), "contacts: get contact 999: ") {
		t.Errorf("Get of a missing contact = %v; want db.ErrNotFound, pgx.ErrNoRows kept, \"contacts: get contact 999: \" in front", err)
	}
	_, err = s.Update(ctx, tenant, 999, person(1), "test", nil)
	if !errors.Is(err, db.ErrNotFound) || !strings.HasPrefix(err.Error(), "contacts: update contact 999: ") {
		t.Errorf("Update of a missing contact = %v; want db.ErrNotFound with \"contacts: update contact 999: \" in front", err)
	}

	// The server ends the pool's one connection, as a restart does.
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	c.Release()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, tenant, 1)
	if !errors.Is(db.Interpret(err), db.ErrUnavailable) || errors.Is(err, db.ErrNotFound) || !strings.HasPrefix(err.Error(), "contacts: get contact 1: ") {
		t.Errorf("Get on a closed pool = %v; want db.ErrUnavailable (the 503 of an outage), not a not-found, with its context", err)
	}
}

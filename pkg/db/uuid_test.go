package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestUUIDRoundTrip: google/uuid values, pointers and slices go to
// PostgreSQL and back unchanged in both wire formats (the extended
// protocol's binary, the simple protocol's text), and NULL stays nil.
func TestUUIDRoundTrip(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	a, b := uuid.Must(uuid.NewV7()), uuid.New()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			var text string
			var got uuid.UUID
			if err := pool.QueryRow(ctx, `SELECT $1::uuid::text, $1::uuid`, mode, a).Scan(&text, &got); err != nil {
				t.Fatal(err)
			}
			if text != a.String() || got != a {
				t.Errorf("value: got %s and %s, want %s", text, got, a)
			}
			var list []uuid.UUID
			if err := pool.QueryRow(ctx, `SELECT $1::uuid[]`, mode, []uuid.UUID{a, b}).Scan(&list); err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0] != a || list[1] != b {
				t.Errorf("slice: got %v, want [%s %s]", list, a, b)
			}
			var none *uuid.UUID
			var isNull bool
			some := &b
			if err := pool.QueryRow(ctx, `SELECT $1::uuid IS NULL, $2::uuid, $1::uuid`, mode, none, &b).Scan(&isNull, &some, &none); err != nil {
				t.Fatal(err)
			}
			if !isNull || none != nil || some == nil || *some != b {
				t.Errorf("pointers: NULL sent as NULL %v, scanned %v; %v scanned as %v", isNull, none, b, some)
			}
			var plain uuid.UUID
			if err := pool.QueryRow(ctx, `SELECT NULL::uuid`, mode).Scan(&plain); err == nil {
				t.Errorf("NULL scanned into a uuid.UUID without an error: %s", plain)
			}
		})
	}
}

package reports

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/reports/cohorts"
)

// windowGifts is a tenant of contacts 1 to n, with one batch, on a fresh
// database, for the tests that read the same window two ways and compare
// the members.
type windowGifts struct {
	t             *testing.T
	pool          *pgxpool.Pool
	tenant, batch uuid.UUID
	gifts         int
}

func newWindowGifts(t *testing.T, contacts int) *windowGifts {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, testMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	w := &windowGifts{t: t, pool: pool, tenant: uuid.New(), batch: uuid.New()}
	for _, q := range []string{
		`INSERT INTO orders.batches (tenant_id, id, name) SELECT $1, $2, 'b' WHERE $3::int > 0`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT $1, g, 'Individual', 'Donor', 'N' || g FROM generate_series(1, $3::int) g WHERE $2::uuid IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, q, w.tenant, w.batch, contacts); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	return w
}

// gift records a gift of the contact at the instant; by its number, every
// 11th is voided, every 7th half refunded, every 13th refunded in full
// and every 17th in euros.
func (w *windowGifts) gift(contact int, at time.Time, amount int64) {
	w.t.Helper()
	w.gifts++
	n := w.gifts
	status, refunded, cur := "Completed", int64(0), "USD"
	switch {
	case n%11 == 0:
		status = "Voided"
	case n%7 == 0:
		status, refunded = "PartiallyRefunded", amount/2
	case n%13 == 0:
		status, refunded = "Refunded", amount
	case n%17 == 0:
		cur = "EUR"
	}
	if _, err := w.pool.Exec(context.Background(), `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency,
		donation_subtotal_minor, donation_refunded_minor, refunded_minor, item_subtotal_minor, total_minor, deductible_minor,
		has_donations, has_items, batch_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, 0, $7, $7, true, false, $9, $10)`,
		w.tenant, uuid.New(), n, contact, status, cur, amount, refunded, w.batch, at); err != nil {
		w.t.Fatal(err)
	}
}

// compile compiles a definition for the tenant in cal, in dollars.
func (w *windowGifts) compile(name, def string, cal cohorts.Calendar) cohorts.Query {
	w.t.Helper()
	node, err := cohorts.Parse([]byte(def))
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	q, err := (&cohorts.Compiler{Tenant: w.tenant, Currency: "USD", Calendar: cal}).Compile(context.Background(), "", node)
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	return q
}

// members are q's members, checked against its count.
func (w *windowGifts) members(name string, q cohorts.Query) []int64 {
	w.t.Helper()
	ctx := context.Background()
	st := cohorts.NewStore(w.pool)
	ids, err := st.AllIDs(ctx, q)
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	count, err := st.Count(ctx, q)
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	if count != int64(len(ids)) {
		w.t.Errorf("%s: count %d, %d ids", name, count, len(ids))
	}
	return ids
}

// Package storetest is the orders stores' test support: a store on a fresh
// database with a tenant and its fund, and a plain gift to record.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/orders/store"
)

// New is the core store on a fresh database (closed with the test), with
// its pool, a tenant and the tenant's fund "General".
func New(t *testing.T) (*store.Store, *pgxpool.Pool, uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tenant, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	return store.New(pool), pool, tenant, fund
}

// Gift is a 10.00 cash donation order to fund, computed as the handler
// would.
func Gift(tenant, fund uuid.UUID, now time.Time) store.NewOrder {
	return store.NewOrder{Now: now, Order: store.Order{TenantID: tenant, ID: uuid.Must(uuid.NewV7()), ContactID: 1, Status: store.StatusCompleted,
		Currency: "USD", DonationSubtotalMinor: 1000, TotalMinor: 1000, DeductibleMinor: 1000,
		Donations: []store.Donation{{ID: uuid.Must(uuid.NewV7()), FundID: fund, FundName: "General", AmountMinor: 1000, IsTaxDeductible: true}},
		Payments:  []store.Payment{{ID: uuid.Must(uuid.NewV7()), Method: "Cash", AmountMinor: 1000, Status: store.PaymentCaptured}}}}
}

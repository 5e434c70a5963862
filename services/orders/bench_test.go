package orders

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
)

type benchContacts struct{}

func (benchContacts) Check(context.Context, authctx.Principal, int64) (peers.ContactCheck, error) {
	return peers.ContactCheck{Exists: true, Active: true}, nil
}
func (benchContacts) AddAddress(context.Context, authctx.Principal, int64, string, *contactsv1.AddContactAddressRequest) error {
	return nil
}

func benchPool(b *testing.B) *pgxpool.Pool {
	pool, err := db.Open(context.Background(), testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// BenchmarkCreateOrderDonation measures a donation-only cash order through
// the handler (validation, fund lookup, the order transaction), contacts
// stubbed out. Run with -cpu 16 for 16 concurrent clients.
func BenchmarkCreateOrderDonation(b *testing.B) {
	pool := benchPool(b)
	tenant := uuid.Must(uuid.NewV7())
	fund := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(context.Background(), `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		b.Fatal(err)
	}
	svc := New(pool, Config{Contacts: benchContacts{}}, nil)
	srv := &orderServer{s: svc}
	p := authctx.Principal{TenantID: tenant.String(), KeyID: "k", KeyPrefix: "ak_test_bench", Scopes: []string{"orders:create"}, Currency: "USD"}
	ctx := authctx.NewIncomingContext(context.Background(), p)
	req := &ordersv1.CreateOrderRequest{TenantId: tenant.String(), ContactId: 1,
		Donations: []*ordersv1.DonationInput{{FundId: fund.String(), Amount: &typev1.Decimal{Value: "25.00"}}},
		Payments:  []*ordersv1.PaymentInput{{PaymentMethod: "Cash", Amount: &typev1.Decimal{Value: "25.00"}}}}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := srv.CreateOrder(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkListOrders compares page 1 with a page 10,000 deep (reached by
// pageToken) on a tenant with ORDERS_BENCH_ROWS orders (default 1,000,000),
// seeded with COPY. Only runs under -bench.
func BenchmarkListOrders(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ORDERS_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	pool := benchPool(b)
	ctx := context.Background()
	tenant := uuid.Must(uuid.NewV7())
	batch := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'Bench')`, tenant, batch); err != nil {
		b.Fatal(err)
	}
	base := time.Now().Add(-time.Duration(rows) * time.Second)
	ids := make([]uuid.UUID, rows)
	n, err := pool.CopyFrom(ctx, pgx.Identifier{"orders", "orders"},
		[]string{"tenant_id", "id", "order_number", "contact_id", "status", "currency", "donation_subtotal_minor", "item_subtotal_minor",
			"total_minor", "deductible_minor", "has_donations", "has_items", "batch_id", "created_at", "updated_at"},
		pgx.CopyFromSlice(rows, func(i int) ([]any, error) {
			ids[i] = uuid.Must(uuid.NewV7())
			at := base.Add(time.Duration(i) * time.Second)
			return []any{tenant, ids[i], int64(i + 1), int64(i%5000 + 1), "Completed", "USD", int64(2500), int64(0), int64(2500), int64(2500),
				true, false, batch, at, at}, nil
		}))
	if err != nil || int(n) != rows {
		b.Fatalf("seed: %d rows, %v", n, err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE orders.orders`); err != nil {
		b.Fatal(err)
	}
	st := store.New(pool)
	deep := int64(10_000)
	if deep*20 >= int64(rows) {
		deep = int64(rows/20) - 1
	}
	// The keyset cursor of page `deep`: the id just after the rows before it,
	// newest first (ids are time-ordered, so the row index runs backwards).
	after := ids[rows-1-int((deep-1)*20)+1]
	// page1 counts the tenant's orders, as the first page of a listing
	// does; deep-token is page `deep` as the handler serves it, with the
	// count carried in the token; deep-token-counted is the same page
	// counting again (what every token page did before the count was
	// carried), kept to compare the two.
	for _, c := range []struct {
		name      string
		after     *uuid.UUID
		skipCount bool
	}{{"page1", nil, false}, {"deep-token", &after, true}, {"deep-token-counted", &after, false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				list, _, err := st.ListOrders(ctx, tenant, store.OrderFilter{}, 20, 0, c.after, c.skipCount)
				if err != nil || len(list) != 20 {
					b.Fatalf("%d orders, %v", len(list), err)
				}
			}
		})
	}
}

// BenchmarkImportGifts records ORDERS_IMPORT_BENCH_ROWS gifts (default
// 1,000,000) through GiftImportService.ImportGifts in batches of 5,000,
// as the imports runner sends them: 100,000 contacts, three funds named
// in varying case, every row with its own external id. It reports rows/s
// over the whole import. Only runs under -bench; use -benchtime 1x.
func BenchmarkImportGifts(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ORDERS_IMPORT_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	const batch = 5_000
	f := newImportFixture(b)
	funds := []string{"general", "BUILDING", "General"}
	methods := []string{"Cash", "Check", "External"}
	run := 0
	for b.Loop() {
		run++
		f.importID = uuid.Must(uuid.NewV7())
		start := time.Now()
		for lo := 1; lo <= rows; lo += batch {
			req := &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: f.importID.String()}
			for r := lo; r < lo+batch && r <= rows; r++ {
				req.Rows = append(req.Rows, &ordersv1.GiftImportRow{Row: int64(r), ExternalId: fmt.Sprintf("bench-%d-%d", run, r),
					ContactId: int64(r%100_000 + 1), Date: time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r%3650).Format(time.DateOnly),
					AmountMinor: int64(500 + r%10_000), Currency: "USD", Fund: funds[r%3], PaymentMethod: methods[r%3], CheckNumber: strconv.Itoa(r)})
			}
			resp, err := f.srv.ImportGifts(f.ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			for _, res := range resp.GetResults() {
				if res.GetOutcome() != "created" {
					b.Fatalf("row %d: %v", res.GetRow(), res)
				}
			}
		}
		b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
	}
}

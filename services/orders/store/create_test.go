package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/storetest"
)

const actor = "api-key:ak_test_store"

// newStore and gift are storetest's.
var (
	newStore = storetest.New
	gift     = storetest.Gift
)

// written counts what an order left behind: its row, lines, payments and
// audit rows.
func written(t *testing.T, pool *pgxpool.Pool, o store.NewOrder) int {
	t.Helper()
	ids := []string{o.ID.String(), o.Donations[0].ID.String(), o.Payments[0].ID.String()}
	var n int
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND id = $2) +
		(SELECT count(*) FROM orders.order_donations WHERE tenant_id = $1 AND order_id = $2) +
		(SELECT count(*) FROM orders.order_payments WHERE tenant_id = $1 AND order_id = $2) +
		(SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_id = ANY($3))`, o.TenantID, o.ID, ids).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCreateOrderAllOrNothing: an order whose batch is closed or missing,
// or whose idempotency claim was lost, leaves nothing behind — not even
// the lines and audit rows sent before the failing statement in the same
// pipelined batch — and the daily batch remembered by the store is
// noticed when it closes.
func TestCreateOrderAllOrNothing(t *testing.T) {
	t.Parallel()
	s, pool, tenant, fund := newStore(t)
	ctx := context.Background()
	now := time.Now()
	first := gift(tenant, fund, now)
	if _, err := s.CreateOrder(ctx, first, actor); err != nil {
		t.Fatal(err)
	}
	if got := written(t, pool, first); got != 6 {
		t.Errorf("a recorded order left %d rows, want 6 (order, donation, payment, three audit rows)", got)
	}
	closed, err := s.CreateBatch(ctx, tenant, "Closed", "", actor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseBatch(ctx, tenant, closed.ID, actor); err != nil {
		t.Fatal(err)
	}
	missing := uuid.Must(uuid.NewV7())
	key := "key-1"
	tests := []struct {
		name    string
		prepare func(*store.NewOrder)
		want    error
	}{
		{"closed batch", func(o *store.NewOrder) { o.RequestedBatch = &closed.ID }, store.ErrBatchClosed},
		{"unknown batch", func(o *store.NewOrder) { o.RequestedBatch = &missing }, store.ErrBatchNotFound},
		{"idempotency claim lost", func(o *store.NewOrder) {
			if _, err := s.ClaimKey(ctx, tenant, key, []byte("hash"), o.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
			// Another request's order took the key meanwhile.
			if _, err := pool.Exec(ctx, `UPDATE orders.idempotency_keys SET order_id = $3 WHERE tenant_id = $1 AND key = $2`,
				tenant, key, uuid.Must(uuid.NewV7())); err != nil {
				t.Fatal(err)
			}
			o.Idempotency = &store.Completion{Key: key, Render: func(store.Order) ([]byte, error) { return []byte("response"), nil }}
		}, store.ErrClaimLost},
	}
	for _, tc := range tests {
		o := gift(tenant, fund, now)
		tc.prepare(&o)
		if _, err := s.CreateOrder(ctx, o, actor); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if got := written(t, pool, o); got != 0 {
			t.Errorf("%s: %d rows written, want none", tc.name, got)
		}
	}
}

// TestDailyBatchReopens: once staff close the day's daily batch (even the
// one the store remembers), the next order without a batch opens the day's
// next daily batch instead of failing until midnight; an order naming the
// closed batch is still refused.
func TestDailyBatchReopens(t *testing.T) {
	t.Parallel()
	s, _, tenant, fund := newStore(t)
	ctx := context.Background()
	now := time.Now()
	first, err := s.CreateOrder(ctx, gift(tenant, fund, now), actor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseBatch(ctx, tenant, first.BatchID, actor); err != nil {
		t.Fatal(err)
	}
	second, err := s.CreateOrder(ctx, gift(tenant, fund, now), actor)
	if err != nil {
		t.Fatalf("order after the daily batch closed: %v", err)
	}
	if second.BatchID == first.BatchID {
		t.Fatal("the order joined the closed daily batch")
	}
	b, err := s.GetBatch(ctx, tenant, second.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Daily " + store.Day(now).Format(time.DateOnly) + " (2)"; !b.IsDaily || b.State != store.BatchOpen || b.Name != want {
		t.Errorf("new daily batch = %+v, want an open daily batch named %q", b, want)
	}
	third, err := s.CreateOrder(ctx, gift(tenant, fund, now), actor)
	if err != nil || third.BatchID != second.BatchID {
		t.Errorf("the next order joined %v (%v), want the reopened batch %v", third.BatchID, err, second.BatchID)
	}
	named := gift(tenant, fund, now)
	named.RequestedBatch = &first.BatchID
	if _, err := s.CreateOrder(ctx, named, actor); !errors.Is(err, store.ErrBatchClosed) {
		t.Errorf("order naming the closed batch: %v, want ErrBatchClosed", err)
	}
}

// TestOrderNumbersUnderConcurrency: orders of one tenant created at once
// through one store (one replica) get distinct numbers with no gap when
// none fails (the store's blocks of the tenant's counter are used up, not
// skipped), every one in the same daily batch, each with its idempotency
// record completed. Half have an idempotency key (whose stored answer is
// rendered with the number) and half none; each answer carries the number
// stored.
func TestOrderNumbersUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, pool, tenant, fund := newStore(t)
	ctx := context.Background()
	now := time.Now()
	const n = 40
	var (
		mu      sync.Mutex
		numbers []int64
		batches = map[uuid.UUID]bool{}
		wg      sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			o := gift(tenant, fund, now)
			if i%2 == 0 {
				key := "k" + string(rune('A'+i))
				if _, err := s.ClaimKey(ctx, tenant, key, []byte("hash"), o.ID, time.Minute); err != nil {
					t.Error(err)
					return
				}
				o.Idempotency = &store.Completion{Key: key, Render: func(saved store.Order) ([]byte, error) { return []byte(saved.ID.String()), nil }}
			}
			saved, err := s.CreateOrder(ctx, o, actor)
			if err != nil {
				t.Error(err)
				return
			}
			var stored int64
			if err := pool.QueryRow(ctx, `SELECT order_number FROM orders.orders WHERE tenant_id = $1 AND id = $2`, tenant, saved.ID).Scan(&stored); err != nil || stored != saved.OrderNumber {
				t.Errorf("order %s answered number %d, stored %d (%v)", saved.ID, saved.OrderNumber, stored, err)
			}
			mu.Lock()
			numbers = append(numbers, saved.OrderNumber)
			batches[saved.BatchID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(numbers)
	for i, got := range numbers {
		if got != int64(i+1) {
			t.Fatalf("order numbers %v, want 1..%d", numbers, n)
		}
	}
	if len(batches) != 1 {
		t.Errorf("orders landed in %d batches, want the one daily batch", len(batches))
	}
	var completed, dailies int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders.idempotency_keys WHERE tenant_id = $1 AND state = 'completed' AND response IS NOT NULL),
		(SELECT count(*) FROM orders.batches WHERE tenant_id = $1 AND is_daily)`, tenant).Scan(&completed, &dailies); err != nil {
		t.Fatal(err)
	}
	if completed != n/2 || dailies != 1 {
		t.Errorf("%d completed keys, %d daily batches; want %d and 1", completed, dailies, n/2)
	}
}

// TestKeyedOrderForMergedContact: a keyed order whose contact was merged
// away after its answer was rendered is written again for the survivor,
// so its answer, stored for replays, names the contact it is recorded
// under. The order row landed on the survivor while the stored answer
// named the merged-away contact.
func TestKeyedOrderForMergedContact(t *testing.T) {
	t.Parallel()
	s, pool, tenant, fund := newStore(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO orders.contact_redirects (tenant_id, duplicate_id, survivor_id) VALUES ($1, 1, 7)`, tenant); err != nil {
		t.Fatal(err)
	}
	n := gift(tenant, fund, time.Now())
	claim, err := s.ClaimKey(ctx, tenant, "merged", []byte("hash"), n.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	n.ID = claim.OrderID
	var rendered []int64
	n.Idempotency = &store.Completion{Key: "merged", Render: func(o store.Order) ([]byte, error) {
		rendered = append(rendered, o.ContactID)
		return []byte{byte(o.ContactID)}, nil
	}}
	o, err := s.CreateOrder(ctx, n, actor)
	if err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT response FROM orders.idempotency_keys WHERE tenant_id = $1 AND key = 'merged'`, tenant).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if o.ContactID != 7 || !slices.Equal(rendered, []int64{1, 7}) || !slices.Equal(stored, []byte{7}) {
		t.Errorf("order's contact %d, answers rendered for %v, stored %v; want 7, [1 7], [7]", o.ContactID, rendered, stored)
	}
}

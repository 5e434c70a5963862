package recurringstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
)

// TestInstallmentClaims: a claimed installment is charged by one runner
// at a time with no transaction open; the schedule does not change under
// the charge; a claim whose runner died is taken over, with the same
// attempt (so the same idempotency key), once its lease is over; and the
// outcome is recorded once.
func TestInstallmentClaims(t *testing.T) {
	t.Parallel()
	s, pool, tenant, fund := newStore(t)
	ctx := context.Background()
	schedule := uuid.Must(uuid.NewV7())
	today := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 1000, 'USD', 'monthly', $3, $4, 'Cash', 'active', $3, $5)`, tenant, schedule, today, fund, uuid.Must(uuid.NewV7())); err != nil {
		t.Fatal(err)
	}
	first, ok, err := s.ClaimInstallment(ctx, tenant, schedule, today, time.Minute)
	if err != nil || !ok || first.Attempt != 1 || !first.Period.Equal(today) {
		t.Fatalf("first claim: %+v %v %v", first, ok, err)
	}
	if _, ok, err := s.ClaimInstallment(ctx, tenant, schedule, today, time.Minute); err != nil || ok {
		t.Fatalf("a second runner claimed a period in flight: %v %v", ok, err)
	}
	// A change waits for the charge in flight; one that cannot wait (its
	// context ends first) is refused.
	for name, change := range map[string]func(context.Context) error{
		"amend": func(ctx context.Context) error {
			_, err := s.UpdateSchedule(ctx, tenant, schedule, actor, func(sc store.Schedule) (store.Schedule, error) { sc.AmountMinor = 2000; return sc, nil })
			return err
		},
		"skip": func(ctx context.Context) error {
			_, err := s.SkipInstallment(ctx, tenant, schedule, today, actor, func(store.Schedule) error { return nil })
			return err
		},
		"cancel": func(ctx context.Context) error { _, err := s.CancelSchedule(ctx, tenant, schedule, actor); return err },
	} {
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if err := change(short); !errors.Is(err, store.ErrChargeInProgress) {
			t.Errorf("%s during the charge: %v, want ErrChargeInProgress", name, err)
		}
		cancel()
	}

	// The first runner dies; once its lease is over the claim is taken
	// over with its attempt.
	if _, err := pool.Exec(ctx, `UPDATE orders.recurring_charges SET lease_until = now() - interval '1 second' WHERE schedule_id = $1`, schedule); err != nil {
		t.Fatal(err)
	}
	second, ok, err := s.ClaimInstallment(ctx, tenant, schedule, today, time.Minute)
	if err != nil || !ok || second.Attempt != first.Attempt {
		t.Fatalf("takeover: %+v %v %v; want attempt %d", second, ok, err, first.Attempt)
	}
	// A cancel sent now waits for the charge to be recorded.
	type result struct {
		status string
		err    error
	}
	cancelled := make(chan result, 1)
	go func() {
		sc, err := s.CancelSchedule(ctx, tenant, schedule, actor)
		cancelled <- result{sc.Status, err}
	}()
	n := gift(tenant, fund, today)
	n.ScheduleID = &schedule
	if recorded, err := s.RecordInstallment(ctx, second, today, recurringstore.Outcome{Order: &n}); err != nil || !recorded {
		t.Fatalf("record: %v %v", recorded, err)
	}
	again := gift(tenant, fund, today)
	again.ScheduleID = &schedule
	if recorded, err := s.RecordInstallment(ctx, first, today, recurringstore.Outcome{Order: &again}); err != nil || recorded {
		t.Errorf("the dead runner's late record: %v %v, want nothing recorded", recorded, err)
	}
	if sc := <-cancelled; sc.err != nil || sc.status != store.ScheduleCancelled {
		t.Errorf("cancel that waited for the charge: %v %v", sc.status, sc.err)
	}
	var orders int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND schedule_id = $2`, tenant, schedule).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != 1 {
		t.Errorf("%d installment orders, want 1", orders)
	}
}

package orders

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
	"github.com/almoner/almoner/services/orders/recurring"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// TestRunnerChargeAnswerLost: Stripe charges an installment but its answer
// is lost (as when a runner dies after charging). The period is tried
// again with the same idempotency key and the same request, so Stripe
// replays the charge: one charge, one installment order, the schedule
// advanced. Before the order id was derived from the installment, the
// retry carried another order id in its metadata, Stripe refused the key
// (idempotency_error) and the donor kept a charge with no order.
func TestRunnerChargeAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	tenant, fund, schedule := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 1500, 'USD', 'monthly', DATE '2026-03-02', $3, 'Card', 'pm_card_visa', 'active', DATE '2026-03-02', gen_random_uuid())`,
		tenant, schedule, fund); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	proc := tenantproc.Account{Processor: stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: "sk_test_lost"}), Name: tenantproc.ProviderStripe, Mode: "test"}
	run := func() {
		svc := New(pool, Config{Now: func() time.Time { return now }, Processors: tenantproc.Static{P: proc}}, nil)
		_, _ = svc.NewRunner(recurring.RunnerConfig{}).RunOnce(ctx) // the lost answer is an error of the run
	}

	fake.LoseNextResponses(1)
	run()
	run()

	if n := len(fake.PaymentIntents()); n != 1 {
		t.Errorf("%d payment intents at Stripe, want 1", n)
	}
	for _, r := range fake.Requests() {
		if r.Status >= 400 {
			t.Errorf("Stripe answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
	var orders int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND schedule_id = $2`, tenant, schedule).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	sc, err := recurringstore.New(store.New(pool)).GetSchedule(ctx, tenant, schedule)
	if err != nil {
		t.Fatal(err)
	}
	next := ""
	if sc.NextChargeDate != nil {
		next = sc.NextChargeDate.Format(time.DateOnly)
	}
	if orders != 1 || sc.Status != store.ScheduleActive || next != "2026-04-02" {
		t.Errorf("after the replayed charge: %d installment orders, schedule %s next %q; want 1, active, 2026-04-02", orders, sc.Status, next)
	}
}

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

// TestRunnerRefusesAnotherContactsMethod: a schedule made before orders
// refused it, for contact 1 and paid by a card saved for contact 2, is
// not charged: the runner turns it past_due with the reason, and Stripe
// sees no request. It charged contact 2's customer and card off-session
// every period.
func TestRunnerRefusesAnotherContactsMethod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	tenant, fund, schedule := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, row := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, []any{tenant, fund}},
		{`INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default)
			VALUES ($1, 'pm_of_contact_2', 2, 'stripe', 'test', 'cus_contact_2', 'card', 'visa', '4242', 12, 2040, true)`, []any{tenant}},
		{`INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 1500, 'USD', 'monthly', DATE '2026-03-02', $3, 'Card', 'pm_of_contact_2', 'active', DATE '2026-03-02', gen_random_uuid())`,
			[]any{tenant, schedule, fund}},
	} {
		if _, err := pool.Exec(ctx, row.sql, row.args...); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	proc := tenantproc.Account{Processor: stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: "sk_test_owner"}), Name: tenantproc.ProviderStripe, Mode: "test"}
	svc := New(pool, Config{Now: func() time.Time { return now }, Processors: tenantproc.Static{P: proc}}, nil)
	if _, err := svc.NewRunner(recurring.RunnerConfig{}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}

	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests to Stripe for a schedule paid by another contact's card, want 0", n)
	}
	sc, err := recurringstore.New(store.New(pool)).GetSchedule(ctx, tenant, schedule)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Status != store.SchedulePastDue || sc.FailureReason != recurring.ReasonMethodOfAnotherContact {
		t.Errorf("schedule after the run: %s, reason %q; want past_due, %s", sc.Status, sc.FailureReason, recurring.ReasonMethodOfAnotherContact)
	}
	var orders int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`, tenant).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != 0 {
		t.Errorf("%d installment orders, want 0", orders)
	}
}

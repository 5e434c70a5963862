package orders

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/recurring"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// TestRunnerExactlyOnce seeds 1,000 due schedules and runs two runners at
// once, then again: exactly 1,000 installment orders, one per schedule and
// period, and every schedule advanced by one month.
func TestRunnerExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	tenant := uuid.Must(uuid.NewV7())
	fund := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		SELECT $1, gen_random_uuid(), g, 1000, 'USD', 'monthly', DATE '2026-01-31', $2, 'Cash', 'active', DATE '2026-01-31', gen_random_uuid()
		FROM generate_series(1, 1000) g`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := New(pool, Config{Now: clock}, nil)
			n, err := svc.NewRunner(recurring.RunnerConfig{}).RunOnce(ctx)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	var orders, charges int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders.orders WHERE schedule_id IS NOT NULL),
		(SELECT count(*) FROM orders.recurring_charges WHERE order_id IS NOT NULL)`).Scan(&orders, &charges); err != nil {
		t.Fatal(err)
	}
	if orders != 1000 || charges != 1000 || counts[0]+counts[1] != 1000 {
		t.Fatalf("orders %d, charges %d, runner counts %v; want 1000", orders, charges, counts)
	}
	// Nothing more is due today; the next date clamps to Feb 28.
	n, err := New(pool, Config{Now: clock}, nil).NewRunner(recurring.RunnerConfig{}).RunOnce(ctx)
	if err != nil || n != 0 {
		t.Fatalf("second run: %d, %v", n, err)
	}
	var next time.Time
	if err := pool.QueryRow(ctx, `SELECT DISTINCT next_charge_date FROM orders.recurring_donations`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next charge %v, want %v", next, want)
	}
	// A month later the next period is charged, from the start day (Mar 31).
	now = time.Date(2026, 2, 28, 9, 0, 0, 0, time.UTC)
	if n, err := New(pool, Config{Now: clock}, nil).NewRunner(recurring.RunnerConfig{}).RunOnce(ctx); err != nil || n != 1000 {
		t.Fatalf("February run: %d, %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT DISTINCT next_charge_date FROM orders.recurring_donations`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next charge %v, want %v", next, want)
	}
}

// TestRunnerDeclines: a declined card is retried on the tenant's retry
// days (default 1, 3 and 7 days after the first decline), then the
// schedule is past_due; each attempt is an installment of its own. Two
// runners run every day.
func TestRunnerDeclines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	fund := uuid.Must(uuid.NewV7())
	seed := func(tenant uuid.UUID) uuid.UUID {
		id := uuid.Must(uuid.NewV7())
		if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General') ON CONFLICT DO NOTHING`, tenant, fund); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
				fund_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
			VALUES ($1, $2, 1, 500, 'USD', 'weekly', DATE '2026-03-02', $3, 'Card', 'tok_decline', 'active', DATE '2026-03-02', gen_random_uuid())`, tenant, id, fund); err != nil {
			t.Fatal(err)
		}
		return id
	}
	byDefault, custom := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	defaultID, customID := seed(byDefault), seed(custom)
	st := recurringstore.New(store.New(pool))
	if _, err := st.SetRetryDays(ctx, custom, []int32{2}); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	for i := range 10 {
		now := day.AddDate(0, 0, i)
		runTwice(t, pool, func() time.Time { return now })
	}
	for _, c := range []struct {
		tenant, id uuid.UUID
		due        []string
	}{
		{byDefault, defaultID, []string{"2026-03-09", "2026-03-05", "2026-03-03", "2026-03-02"}},
		{custom, customID, []string{"2026-03-04", "2026-03-02"}},
	} {
		sc, err := st.GetSchedule(ctx, c.tenant, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Status != store.SchedulePastDue || int(sc.FailedAttempts) != len(c.due) || sc.FailureReason != "card_declined" {
			t.Errorf("schedule %s after %d declines (%d attempts, reason %q)", sc.Status, len(c.due), sc.FailedAttempts, sc.FailureReason)
		}
		list, total, err := st.ListInstallments(ctx, c.tenant, c.id, 100, 0)
		if err != nil || int(total) != len(c.due) {
			t.Fatalf("installments %v (%d), %v", list, total, err)
		}
		for i, in := range list {
			if in.DueDate.Format(time.DateOnly) != c.due[i] || in.Status != recurringstore.InstallmentDeclined || int(in.Attempt) != len(c.due)-i ||
				in.Period.Format(time.DateOnly) != "2026-03-02" || in.DeclineReason != "card_declined" {
				t.Errorf("installment %d = %+v, want attempt %d due %s", i, in, len(c.due)-i, c.due[i])
			}
		}
	}
}

// runTwice runs two runners at once on the clock.
func runTwice(t *testing.T, pool *pgxpool.Pool, clock func() time.Time) int {
	t.Helper()
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := New(pool, Config{Now: clock, Processors: tenantproc.Static{P: tenantproc.Account{Processor: processor.Test{}, Name: tenantproc.ProviderTest, Mode: "test"}}}, nil)
			n, err := svc.NewRunner(recurring.RunnerConfig{}).RunOnce(context.Background())
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	return counts[0] + counts[1]
}

// TestRunnerAfterDailyBatchClosed: an installment due on a day whose daily
// batch staff closed lands in the day's next daily batch.
func TestRunnerAfterDailyBatchClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	tenant, fund, id := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	closed := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name, batch_date, is_daily, state, closed_at)
		VALUES ($1, $2, 'Daily 2026-03-02', $3, true, 'Closed', now())`, tenant, closed, day); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 500, 'USD', 'weekly', $4, $3, 'Cash', 'active', $4, gen_random_uuid())`, tenant, id, fund, day); err != nil {
		t.Fatal(err)
	}
	now := day.Add(9 * time.Hour)
	svc := New(pool, Config{Now: func() time.Time { return now }}, nil)
	if n, err := svc.NewRunner(recurring.RunnerConfig{}).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("runner: %d installments, %v; want 1", n, err)
	}
	var batch uuid.UUID
	var state string
	if err := pool.QueryRow(ctx, `SELECT b.id, b.state FROM orders.orders o JOIN orders.batches b ON b.tenant_id = o.tenant_id AND b.id = o.batch_id
		WHERE o.tenant_id = $1 AND o.schedule_id = $2`, tenant, id).Scan(&batch, &state); err != nil {
		t.Fatal(err)
	}
	if batch == closed || state != store.BatchOpen {
		t.Errorf("installment joined batch %v (%s), want a new open daily batch", batch, state)
	}
}

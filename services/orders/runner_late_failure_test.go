package orders

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
	"github.com/almoner/almoner/services/orders/recurring"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// lateFailureRig is one tenant's monthly bank-debit schedule charged
// through stripeproc against the fake, on a clock the test moves.
type lateFailureRig struct {
	t        *testing.T
	pool     *pgxpool.Pool
	fake     *stripefake.Server
	proc     tenantproc.Account
	tenant   uuid.UUID
	schedule uuid.UUID
	now      time.Time
}

func newLateFailureRig(t *testing.T, pool *pgxpool.Pool, fake *stripefake.Server) *lateFailureRig {
	t.Helper()
	ctx := context.Background()
	r := &lateFailureRig{t: t, pool: pool, fake: fake, tenant: uuid.Must(uuid.NewV7()), schedule: uuid.Must(uuid.NewV7()),
		proc: tenantproc.Account{Processor: stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: "sk_test_late"}), Name: tenantproc.ProviderStripe, Mode: "test"}}
	fund := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, r.tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 2500, 'USD', 'monthly', DATE '2026-03-02', $3, 'Ach', 'pm_usBankAccount', 'active', DATE '2026-03-02', gen_random_uuid())`,
		r.tenant, r.schedule, fund); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *lateFailureRig) service() *Service {
	return New(r.pool, Config{Now: func() time.Time { return r.now }, Processors: tenantproc.Static{P: r.proc}}, nil)
}

// on runs the runner on day and returns how many installments it recorded.
func (r *lateFailureRig) on(day string) int {
	r.t.Helper()
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		r.t.Fatal(err)
	}
	r.now = d.Add(8 * time.Hour)
	n, err := r.service().NewRunner(recurring.RunnerConfig{}).RunOnce(context.Background())
	if err != nil {
		r.t.Fatalf("run on %s: %v", day, err)
	}
	return n
}

// lastIntent is the PaymentIntent of the schedule's newest installment.
func (r *lateFailureRig) lastIntent() string {
	r.t.Helper()
	var ref string
	if err := r.pool.QueryRow(context.Background(), `SELECT p.processor_reference FROM orders.order_payments p
		JOIN orders.orders o ON o.tenant_id = p.tenant_id AND o.id = p.order_id
		WHERE o.tenant_id = $1 AND o.schedule_id = $2 ORDER BY o.created_at DESC LIMIT 1`, r.tenant, r.schedule).Scan(&ref); err != nil {
		r.t.Fatal(err)
	}
	return ref
}

// deliver applies a Stripe notification as the notifications endpoint
// does, after its signature is checked.
func (r *lateFailureRig) deliver(ev stripefake.Event) {
	r.t.Helper()
	body, sig := ev.Sign("whsec_late")
	pev, err := stripeproc.ParseEvent(body, sig, "whsec_late")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.service().events.Apply(context.Background(), r.tenant.String(), pev); err != nil {
		r.t.Fatal(err)
	}
}

func (r *lateFailureRig) fail(code string) stripefake.Event {
	r.t.Helper()
	ev, err := r.fake.Fail(r.lastIntent(), code)
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// expect checks the schedule's state, next charge date, retry day and
// failed attempts.
func (r *lateFailureRig) expect(what, status, next, retry string, failed int32) {
	r.t.Helper()
	sc, err := recurringstore.New(store.New(r.pool)).GetSchedule(context.Background(), r.tenant, r.schedule)
	if err != nil {
		r.t.Fatal(err)
	}
	day := func(d *time.Time) string {
		if d == nil {
			return ""
		}
		return d.Format(time.DateOnly)
	}
	if sc.Status != status || day(sc.NextChargeDate) != next || day(sc.RetryOn) != retry || sc.FailedAttempts != failed {
		r.t.Errorf("%s: schedule %s next %q retry %q failed %d; want %s next %q retry %q failed %d", what,
			sc.Status, day(sc.NextChargeDate), day(sc.RetryOn), sc.FailedAttempts, status, next, retry, failed)
	}
}

// TestInstallmentFailingLaterIsRetried: a bank-debit installment is
// recorded when Stripe accepts it (processing); when it fails days later
// (payment_intent.payment_failed), the period counts as a declined
// attempt, as a decline at charging would: the schedule goes back to the
// period and is tried on the tenant's retry days, each attempt a new
// PaymentIntent, then advances once one goes through, or turns past_due
// when the days are used up. Before, the order failed and the schedule
// stayed on the next period, so the donor's missed gift was never tried
// again and a debit returned every month never made the schedule past_due.
func TestInstallmentFailingLaterIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	fake := stripefake.New()
	t.Cleanup(fake.Close)

	t.Run("retried, then goes through", func(t *testing.T) {
		r := newLateFailureRig(t, pool, fake)
		if n := r.on("2026-03-02"); n != 1 {
			t.Fatalf("March run recorded %d installments, want 1", n)
		}
		r.expect("debit processing", store.ScheduleActive, "2026-04-02", "", 0)
		first := r.lastIntent()

		// Returned four days later for insufficient funds; the retry day
		// (the default 1, 3, 7) counts from the day it is known.
		r.now = time.Date(2026, 3, 6, 15, 0, 0, 0, time.UTC)
		ev := r.fail("insufficient_funds")
		r.deliver(ev)
		r.expect("after the return", store.ScheduleActive, "2026-03-02", "2026-03-07", 1)
		r.deliver(ev) // redelivered: applied once
		r.expect("after the redelivery", store.ScheduleActive, "2026-03-02", "2026-03-07", 1)
		list, _, err := recurringstore.New(store.New(pool)).ListInstallments(ctx, r.tenant, r.schedule, 10, 0)
		if err != nil || len(list) != 1 || list[0].Status != recurringstore.InstallmentDeclined || list[0].DeclineReason != "insufficient_funds" || list[0].OrderID == nil {
			t.Fatalf("installments after the return = %+v, %v", list, err)
		}

		if n := r.on("2026-03-06"); n != 0 {
			t.Errorf("a run before the retry day recorded %d", n)
		}
		if n := r.on("2026-03-07"); n != 1 {
			t.Fatalf("the retry recorded %d installments, want 1", n)
		}
		if second := r.lastIntent(); second == first {
			t.Errorf("the retry reused PaymentIntent %s", first)
		}
		// Accepted is not yet paid: the decline stays counted until it settles.
		r.expect("retry processing", store.ScheduleActive, "2026-04-02", "", 1)
		settled, err := fake.Settle(r.lastIntent())
		if err != nil {
			t.Fatal(err)
		}
		r.deliver(settled)
		r.expect("retry settled", store.ScheduleActive, "2026-04-02", "", 0)
		var completed, failedOrders int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'Completed'), count(*) FILTER (WHERE status = 'Failed')
			FROM orders.orders WHERE tenant_id = $1 AND schedule_id = $2`, r.tenant, r.schedule).Scan(&completed, &failedOrders); err != nil {
			t.Fatal(err)
		}
		if completed != 1 || failedOrders != 1 {
			t.Errorf("installment orders: %d completed, %d failed; want 1 and 1", completed, failedOrders)
		}
	})

	t.Run("past due when the retry days are used up", func(t *testing.T) {
		r := newLateFailureRig(t, pool, fake)
		if _, err := recurringstore.New(store.New(pool)).SetRetryDays(ctx, r.tenant, []int32{2}); err != nil {
			t.Fatal(err)
		}
		r.on("2026-03-02")
		r.now = time.Date(2026, 3, 5, 15, 0, 0, 0, time.UTC)
		r.deliver(r.fail("account_closed"))
		r.expect("first return", store.ScheduleActive, "2026-03-02", "2026-03-07", 1)
		if n := r.on("2026-03-07"); n != 1 {
			t.Fatalf("the retry recorded %d installments, want 1", n)
		}
		r.now = time.Date(2026, 3, 11, 15, 0, 0, 0, time.UTC)
		r.deliver(r.fail("account_closed"))
		r.expect("second return", store.SchedulePastDue, "2026-03-02", "", 2)
		if n := r.on("2026-03-12"); n != 0 {
			t.Errorf("a past-due schedule was charged: %d", n)
		}
	})
}

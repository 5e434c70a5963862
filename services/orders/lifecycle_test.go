package orders

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/structpb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/recurring"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
)

func TestBoundary(t *testing.T) {
	d := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }
	for _, c := range []struct{ anchor, freq, day, want string }{
		{"2026-01-31", "monthly", "2026-01-01", "2026-01-31"},
		{"2026-01-31", "monthly", "2026-01-31", "2026-01-31"},
		{"2026-01-31", "monthly", "2026-02-01", "2026-02-28"},
		{"2026-01-31", "monthly", "2026-03-01", "2026-03-31"},
		{"2026-01-31", "monthly", "2027-02-15", "2027-02-28"},
		{"2026-01-15", "quarterly", "2026-04-16", "2026-07-15"},
		{"2024-02-29", "annually", "2025-03-01", "2026-02-28"},
		{"2026-03-02", "weekly", "2026-03-09", "2026-03-09"},
		{"2026-03-02", "weekly", "2026-03-10", "2026-03-16"},
	} {
		if got := schedule.Boundary(d(c.anchor), c.freq, d(c.day)); got.Format(time.DateOnly) != c.want {
			t.Errorf("Boundary(%s, %s, %s) = %s, want %s", c.anchor, c.freq, c.day, got.Format(time.DateOnly), c.want)
		}
	}
}

// lifecycleFixture is one Cash schedule of one tenant, the handlers on a
// clock the test moves, and two runners on the same clock.
type lifecycleFixture struct {
	t      *testing.T
	pool   *pgxpool.Pool
	mu     sync.Mutex
	now    time.Time
	srv    *recurring.ScheduleServer
	ctx    context.Context
	tenant uuid.UUID
	id     string
}

func newLifecycleFixture(t *testing.T, start string) *lifecycleFixture {
	ctx := context.Background()
	pool := testPool(t)
	f := &lifecycleFixture{t: t, pool: pool, tenant: uuid.Must(uuid.NewV7())}
	fund, id := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	f.id = id.String()
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, f.tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 1000, 'USD', 'monthly', $4, $3, 'Cash', 'active', $4, gen_random_uuid())`, f.tenant, id, fund, start); err != nil {
		t.Fatal(err)
	}
	f.srv = New(pool, Config{Now: f.clock}, nil).recurring.ScheduleServer()
	f.ctx = authctx.NewIncomingContext(ctx, authctx.Principal{TenantID: f.tenant.String(), KeyID: "k1", KeyPrefix: "ak_test_k1",
		Scopes: []string{scopes.RecurringDonationsView, scopes.RecurringDonationsManage}})
	return f
}

func (f *lifecycleFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// on moves the clock to day (noon UTC) and runs two runners at once; it
// returns how many installments they charged.
func (f *lifecycleFixture) on(day string) int {
	f.t.Helper()
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.now = d.Add(12 * time.Hour)
	f.mu.Unlock()
	return runTwice(f.t, f.pool, f.clock)
}

func (f *lifecycleFixture) get() *ordersv1.RecurringDonation {
	f.t.Helper()
	r, err := f.srv.GetRecurringDonation(f.ctx, &ordersv1.GetRecurringDonationRequest{TenantId: f.tenant.String(), ScheduleId: f.id})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.GetRecurringDonation()
}

func (f *lifecycleFixture) expect(what string, sc *ordersv1.RecurringDonation, status, next string) {
	f.t.Helper()
	if sc.GetStatus() != status || sc.GetNextChargeDate() != next {
		f.t.Fatalf("%s: status %s, next %q; want %s, %q", what, sc.GetStatus(), sc.GetNextChargeDate(), status, next)
	}
}

// TestScheduleLifecycle walks one monthly schedule through an amendment,
// a skip, a pause with a resume day, three months paused and a change of
// frequency, with two runners every day it is due: every period is
// charged at most once, never a skipped or missed one, and every change
// has its audit row.
func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	f := newLifecycleFixture(t, "2026-01-15")
	tid := f.tenant.String()
	if n := f.on("2026-01-15"); n != 1 {
		t.Fatalf("January: %d installments, want 1", n)
	}
	f.on("2026-01-20")
	am, err := f.srv.AmendRecurringDonation(f.ctx, &ordersv1.AmendRecurringDonationRequest{TenantId: tid, ScheduleId: f.id,
		Amount: &typev1.Decimal{Value: "25.00"}, EndDate: structpb.NewStringValue("2027-01-31")})
	if err != nil {
		t.Fatal(err)
	}
	if am.GetRecurringDonation().GetAmount().GetValue() != "25.00" || am.GetRecurringDonation().GetEndDate() != "2027-01-31" {
		t.Fatalf("amended = %v", am.GetRecurringDonation())
	}
	if n := f.on("2026-02-15"); n != 1 {
		t.Fatalf("February: %d installments, want 1", n)
	}
	// Skip March: nothing is charged on March 15.
	f.on("2026-02-20")
	sk, err := f.srv.SkipRecurringDonationInstallment(f.ctx, &ordersv1.SkipRecurringDonationInstallmentRequest{TenantId: tid, ScheduleId: f.id})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("skipped", sk.GetRecurringDonation(), "active", "2026-04-15")
	if n := f.on("2026-03-15"); n != 0 {
		t.Fatalf("skipped March: %d installments", n)
	}
	// Pause until May 1: April is not charged; the runner resumes it on
	// May 1, next charge May 15.
	f.on("2026-03-20")
	ps, err := f.srv.PauseRecurringDonation(f.ctx, &ordersv1.PauseRecurringDonationRequest{TenantId: tid, ScheduleId: f.id, ResumeOn: ptr("2026-05-01")})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("paused", ps.GetRecurringDonation(), "paused", "2026-05-15")
	if ps.GetRecurringDonation().GetPausedUntil() != "2026-05-01" {
		t.Errorf("pausedUntil = %q", ps.GetRecurringDonation().GetPausedUntil())
	}
	if n := f.on("2026-04-15"); n != 0 {
		t.Fatalf("paused April: %d installments", n)
	}
	f.on("2026-05-01")
	f.expect("resumed by the runner", f.get(), "active", "2026-05-15")
	if n := f.on("2026-05-15"); n != 1 {
		t.Fatalf("May: %d installments, want 1", n)
	}
	// Paused three months without a day, then resumed: June, July and
	// August are never charged; the next charge is September 15.
	f.on("2026-05-20")
	ps, err = f.srv.PauseRecurringDonation(f.ctx, &ordersv1.PauseRecurringDonationRequest{TenantId: tid, ScheduleId: f.id})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("paused until resumed", ps.GetRecurringDonation(), "paused", "")
	for _, d := range []string{"2026-06-15", "2026-07-15", "2026-08-15", "2026-08-20"} {
		if n := f.on(d); n != 0 {
			t.Fatalf("paused %s: %d installments", d, n)
		}
	}
	rs, err := f.srv.ResumeRecurringDonation(f.ctx, &ordersv1.ResumeRecurringDonationRequest{TenantId: tid, ScheduleId: f.id})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("resumed", rs.GetRecurringDonation(), "active", "2026-09-15")
	if n := f.on("2026-08-20"); n != 0 {
		t.Fatalf("resumed: %d installments for missed months", n)
	}
	if n := f.on("2026-09-15"); n != 1 {
		t.Fatalf("September: %d installments, want 1", n)
	}
	// Weekly from the next charge date (October 15).
	f.on("2026-09-16")
	am, err = f.srv.AmendRecurringDonation(f.ctx, &ordersv1.AmendRecurringDonationRequest{TenantId: tid, ScheduleId: f.id, Frequency: ptr("Weekly")})
	if err != nil {
		t.Fatal(err)
	}
	f.expect("weekly", am.GetRecurringDonation(), "active", "2026-10-15")
	if n := f.on("2026-10-15"); n != 1 {
		t.Fatalf("October 15: %d installments, want 1", n)
	}
	f.expect("after a weekly charge", f.get(), "active", "2026-10-22")
	f.checkHistory()
}

// checkHistory checks the installments and audit rows the lifecycle left.
func (f *lifecycleFixture) checkHistory() {
	t := f.t
	ctx := context.Background()
	var orders, distinct int
	var amounts []int64
	if err := f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT c.period), array_agg(o.total_minor ORDER BY o.created_at)
		FROM orders.orders o JOIN orders.recurring_charges c ON c.tenant_id = o.tenant_id AND c.order_id = o.id
		WHERE o.tenant_id = $1`, f.tenant).Scan(&orders, &distinct, &amounts); err != nil {
		t.Fatal(err)
	}
	if orders != 5 || distinct != 5 || len(amounts) != 5 || amounts[0] != 1000 || amounts[1] != 2500 {
		t.Errorf("installment orders %d over %d periods, amounts %v; want 5, January 10.00 then 25.00", orders, distinct, amounts)
	}
	r, err := f.srv.ListRecurringDonationInstallments(f.ctx, &ordersv1.ListRecurringDonationInstallmentsRequest{TenantId: f.tenant.String(), ScheduleId: f.id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range r.GetItems() {
		got = append(got, in.GetPeriod()+" "+in.GetStatus())
	}
	want := []string{"2026-10-15 charged", "2026-09-15 charged", "2026-05-15 charged", "2026-03-15 skipped", "2026-02-15 charged", "2026-01-15 charged"}
	if b, _ := json.Marshal(got); string(b) != mustJSON(want) {
		t.Errorf("installments %v, want %v", got, want)
	}
	rows, err := f.pool.Query(ctx, `SELECT actor, changes FROM audit.events WHERE tenant_id = $1 AND entity_id = $2 AND action = 'Updated' ORDER BY id`, f.tenant, f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var changes []string
	for rows.Next() {
		var actor string
		var ch map[string]any
		if err := rows.Scan(&actor, &ch); err != nil {
			t.Fatal(err)
		}
		if _, ok := ch["status"]; ok {
			changes = append(changes, actor+" "+mustJSON(ch["status"]))
		}
	}
	wantStatus := []string{
		`api-key:ak_test_k1 {"new":"paused","old":"active"}`, `system {"new":"active","old":"paused"}`,
		`api-key:ak_test_k1 {"new":"paused","old":"active"}`, `api-key:ak_test_k1 {"new":"active","old":"paused"}`,
	}
	if mustJSON(changes) != mustJSON(wantStatus) {
		t.Errorf("status changes in the audit log:\n%v\nwant\n%v", changes, wantStatus)
	}
}

func ptr[T any](v T) *T { return &v }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

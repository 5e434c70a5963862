package e2e

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// recurringRig is a cluster whose own runner is off, with two more
// processes on its database each running a runner every 30 ms, and a
// tenant of its own whose schedules tell when the runners have passed.
type recurringRig struct {
	c        *apptest.Cluster
	f        orderFixture
	sentinel orderFixture
}

func newRecurringRig(t *testing.T, settings map[string]string) *recurringRig {
	t.Helper()
	base := map[string]string{"ALMONER_ORDERS_RUNNER": "false"}
	for k, v := range settings {
		base[k] = v
	}
	c := apptest.Start(t, apptest.Options{Settings: base})
	runner := map[string]string{"ALMONER_ORDERS_RUNNER_INTERVAL": "30ms"}
	for k, v := range settings {
		runner[k] = v
	}
	for range 2 {
		apptest.Start(t, apptest.Options{DatabaseURL: c.DatabaseURL, Settings: runner})
	}
	return &recurringRig{c: c, f: newOrderFixture(t, c), sentinel: newOrderFixture(t, c)}
}

// schedule creates a monthly Cash schedule of amount starting in a month.
func (g *recurringRig) schedule(t *testing.T, f orderFixture, amount float64) string {
	t.Helper()
	body := f.cashOrder(amount)
	body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": amount, "frequency": "monthly"}}
	o := g.c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated).Map(t)
	return o["recurringDonationIds"].([]any)[0].(string)
}

// pass returns once a runner has made a whole pass that started after
// the call: it makes a sentinel schedule due today and waits until it is
// charged. Schedules due on an earlier day, or today and made before it,
// come before it in a runner's pass, except one that the other runner was
// still charging when the pass came to it: the pass skips a schedule whose
// row is locked (FOR UPDATE SKIP LOCKED) and may charge the sentinel
// before that charge commits. So pass then waits until no transaction
// holds a lock that writes or claims schedules (a charge holds one from
// its claim to its commit). It only looks: a lock of its own would make a
// runner skip a schedule.
func (g *recurringRig) pass(t *testing.T) {
	t.Helper()
	sid := g.schedule(t, g.sentinel, 1)
	g.exec(t, `UPDATE orders.recurring_donations SET next_charge_date = (now() AT TIME ZONE 'UTC')::date WHERE id = $1`, sid)
	today := time.Now().UTC().Format(time.DateOnly)
	for deadline := time.Now().Add(30 * time.Second); ; {
		sc := g.c.Do(t, "GET", tPath(g.sentinel.tn.ID, "/recurring-donations/", sid), g.sentinel.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if sc["nextChargeDate"] != today {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no runner passed in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	withDB(t, g.c, func(conn *pgx.Conn) {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			var holders int
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
				WHERE relation = 'orders.recurring_donations'::regclass AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
					AND mode IN ('RowShareLock', 'RowExclusiveLock') AND granted AND pid <> pg_backend_pid()`).Scan(&holders); err != nil {
				t.Fatal(err)
			}
			if holders == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("a charge in flight did not commit within a minute")
			}
		}
	})
}

// age moves a schedule's clock forward by interval (a PostgreSQL
// interval: '40 days', '3 months'): every date it holds, its claims and
// its installments move back by it, which is what the passing of that
// time looks like to the runner and the handlers.
func (g *recurringRig) age(t *testing.T, sid, interval string) {
	t.Helper()
	// One transaction: a runner must see the schedule and its history
	// moved together.
	withDB(t, g.c, func(conn *pgx.Conn) {
		ctx := context.Background()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, sql := range []string{
				`UPDATE orders.recurring_donations SET start_date = (start_date - $2::interval)::date,
					anchor_date = (coalesce(anchor_date, start_date) - $2::interval)::date, next_charge_date = (next_charge_date - $2::interval)::date,
					end_date = (end_date - $2::interval)::date, paused_until = (paused_until - $2::interval)::date,
					retry_on = (retry_on - $2::interval)::date, first_declined_on = (first_declined_on - $2::interval)::date WHERE id = $1`,
				`UPDATE orders.recurring_charges SET period = (period - $2::interval)::date WHERE schedule_id = $1`,
				`UPDATE orders.recurring_installments SET period = (period - $2::interval)::date, due_date = (due_date - $2::interval)::date
					WHERE schedule_id = $1`,
			} {
				if _, err := tx.Exec(ctx, sql, sid, interval); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func (g *recurringRig) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	withDB(t, g.c, func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	})
}

// installmentOrders are the orders the runners recorded for a schedule.
func (g *recurringRig) installmentOrders(t *testing.T, f orderFixture, sid string) []map[string]any {
	t.Helper()
	var page struct{ Items []map[string]any }
	g.c.Do(t, "GET", tPath(f.tn.ID, "/orders?recurringDonationId=", sid), f.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	var out []map[string]any
	for _, o := range page.Items {
		if o["notes"] != "" { // the creating order has none
			out = append(out, o)
		}
	}
	return out
}

func (g *recurringRig) installments(t *testing.T, f orderFixture, sid string) []map[string]any {
	t.Helper()
	var page struct {
		Items      []map[string]any
		TotalCount int
	}
	g.c.Do(t, "GET", tPath(f.tn.ID, "/recurring-donations/", sid, "/installments?pageSize=100"), f.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != len(page.Items) {
		t.Fatalf("installments: totalCount %d, %d items", page.TotalCount, len(page.Items))
	}
	return page.Items
}

// TestRecurringLifecycleAccess: every lifecycle endpoint needs its scope
// (403 naming it) and finds no schedule of another tenant (404); bodies
// are checked as everywhere (400 with property paths).
func TestRecurringLifecycleAccess(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_ORDERS_RUNNER": "false"}})
	g := &recurringRig{c: c, f: newOrderFixture(t, c)}
	f := g.f
	sid := g.schedule(t, f, 20)
	path := tPath(f.tn.ID, "/recurring-donations/", sid)
	calls := []struct {
		method, suffix string
		body           any
		scope          string
	}{
		{"PATCH", "", map[string]any{"amount": 30}, "recurring-donations:manage"},
		{"POST", "/pause", map[string]any{}, "recurring-donations:manage"},
		{"POST", "/resume", map[string]any{}, "recurring-donations:manage"},
		{"POST", "/skip", map[string]any{}, "recurring-donations:manage"},
		{"GET", "/installments", nil, "recurring-donations:view"},
	}
	viewOnly := c.NewKey(t, f.tn.ID, "recurring-donations:view", "recurring-donations:cancel")
	none := c.NewKey(t, f.tn.ID, "orders:view")
	other := c.NewTenant(t)
	for _, call := range calls {
		key := viewOnly
		if call.scope == "recurring-donations:view" {
			key = none
		}
		r := c.Do(t, call.method, path+call.suffix, key, call.body).Expect(t, http.StatusForbidden)
		if p := r.Map(t); p["title"] != "Missing required permission: "+call.scope {
			t.Errorf("%s %s without its scope: %v", call.method, call.suffix, p)
		}
		c.Do(t, call.method, tPath(other.ID, "/recurring-donations/", sid, call.suffix), other.Key, call.body).Expect(t, http.StatusNotFound)
		c.Do(t, call.method, tPath(f.tn.ID, "/recurring-donations/not-an-id", call.suffix), f.tn.Key, call.body).Expect(t, http.StatusNotFound)
	}
	// Nothing changed for any of them.
	sc := c.Do(t, "GET", path, f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["amount"] != 20.0 {
		t.Errorf("schedule after refused calls = %v", sc)
	}
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"amount": -1}, "Amount"},
		{map[string]any{"frequency": "daily"}, "Frequency"},
		{map[string]any{"nextChargeDate": "2020-01-01"}, "NextChargeDate"},
		{map[string]any{"nextChargeDate": "soon"}, "NextChargeDate"},
		{map[string]any{"endDate": 5}, "EndDate"},
		{map[string]any{"endDate": "2020-01-01"}, "EndDate"},
		{map[string]any{"fundId": "00000000-0000-7000-8000-000000000000"}, "FundId"},
		{map[string]any{"paymentMethodId": "pm_card_visa"}, "PaymentMethodId"},
		{map[string]any{"status": "paused"}, "Status"},
	} {
		r := c.Do(t, "PATCH", path, f.tn.Key, bad.body).Expect(t, http.StatusBadRequest)
		if e := errorsOf(t, r); len(e[bad.field]) != 1 {
			t.Errorf("PATCH %v: errors %v, want one under %s", bad.body, e, bad.field)
		}
	}
	r := c.Do(t, "POST", path+"/pause", f.tn.Key, map[string]any{"resumeOn": time.Now().UTC().Format(time.DateOnly)}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["ResumeOn"]) != 1 {
		t.Errorf("pause until today: %v", e)
	}
	// A cancelled schedule cannot be amended, paused or skipped.
	c.Do(t, "POST", path+"/cancel", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	for _, call := range []struct {
		method, suffix string
		body           any
		code           string
	}{
		{"PATCH", "", map[string]any{"amount": 30}, "RecurringDonation.NotAmendable"},
		{"POST", "/pause", map[string]any{}, "RecurringDonation.NotPausable"},
		{"POST", "/resume", map[string]any{}, "RecurringDonation.NotResumable"},
		{"POST", "/skip", map[string]any{}, "RecurringDonation.NotSkippable"},
	} {
		r := c.Do(t, call.method, path+call.suffix, f.tn.Key, call.body).Expect(t, http.StatusBadRequest)
		if e := errorsOf(t, r); len(e[""]) != 1 {
			t.Errorf("%s %s of a cancelled schedule: %v, want %s under \"\"", call.method, call.suffix, e, call.code)
		}
	}
}

// TestRecurringLifecycle: with two runners throughout, an amendment is
// charged at its new amount, a skipped installment is never charged, a
// pause with resumeOn ends by itself once the clock passes it, and a
// resume after three missed months charges nothing for them. Every
// change leaves its audit row.
func TestRecurringLifecycle(t *testing.T) {
	t.Parallel()
	g := newRecurringRig(t, nil)
	c, f := g.c, g.f
	sid := g.schedule(t, f, 20)
	path := tPath(f.tn.ID, "/recurring-donations/", sid)
	today := time.Now().UTC().Format(time.DateOnly)

	// An end date, cleared again with null.
	sc := c.Do(t, "PATCH", path, f.tn.Key, map[string]any{"endDate": "2099-12-31"}).Expect(t, http.StatusOK).Map(t)
	if sc["endDate"] != "2099-12-31" {
		t.Errorf("endDate = %v", sc["endDate"])
	}
	sc = c.Do(t, "PATCH", path, f.tn.Key, map[string]any{"endDate": nil}).Expect(t, http.StatusOK).Map(t)
	if sc["endDate"] != "" {
		t.Errorf("endDate after null = %v", sc["endDate"])
	}
	// Amend: a new amount and a campaign, due today.
	sc = c.Do(t, "PATCH", path, f.tn.Key, map[string]any{"amount": 35, "nextChargeDate": today, "campaignId": "SPRING"}).
		Expect(t, http.StatusOK).Map(t)
	if sc["amount"] != 35.0 || sc["nextChargeDate"] != today || sc["campaignId"] != "SPRING" {
		t.Fatalf("amended = %v", sc)
	}
	g.pass(t)
	g.pass(t)
	charged := g.installmentOrders(t, f, sid)
	if len(charged) != 1 || charged[0]["totalAmount"] != 35.0 {
		t.Fatalf("installment orders after the amendment = %v, want one of 35.00", charged)
	}
	sc = c.Do(t, "GET", path, f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	next := sc["nextChargeDate"].(string)
	if next <= today {
		t.Fatalf("next charge after the installment = %s", next)
	}

	// Skip: the next installment is recorded as skipped, and the date
	// moves one period.
	sc = c.Do(t, "POST", path+"/skip", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
	if sc["nextChargeDate"].(string) <= next {
		t.Fatalf("next charge after a skip = %v, was %s", sc["nextChargeDate"], next)
	}
	ins := g.installments(t, f, sid)
	if len(ins) != 2 || ins[0]["status"] != "skipped" || ins[0]["period"] != next || ins[1]["status"] != "charged" ||
		ins[1]["orderId"] != charged[0]["id"] || ins[1]["amount"] != 35.0 || ins[1]["attempt"] != 1.0 {
		t.Fatalf("installments after a skip = %v", ins)
	}

	// Pause until a day 40 days on, then let 40 days pass: the runners
	// resume it by themselves, charging nothing for the paused time.
	resumeOn := time.Now().UTC().AddDate(0, 0, 40).Format(time.DateOnly)
	sc = c.Do(t, "POST", path+"/pause", f.tn.Key, map[string]any{"resumeOn": resumeOn}).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "paused" || sc["pausedUntil"] != resumeOn || sc["nextChargeDate"].(string) < resumeOn {
		t.Fatalf("paused = %v", sc)
	}
	g.age(t, sid, "40 days")
	g.pass(t)
	sc = c.Do(t, "GET", path, f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["pausedUntil"] != "" || sc["nextChargeDate"].(string) < today {
		t.Fatalf("after its resume day = %v", sc)
	}

	// Paused without a day for three months, then resumed: the missed
	// months are never charged.
	c.Do(t, "POST", path+"/pause", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	g.age(t, sid, "3 months")
	g.pass(t)
	sc = c.Do(t, "POST", path+"/resume", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["nextChargeDate"].(string) <= today {
		t.Fatalf("resumed = %v", sc)
	}
	c.Do(t, "POST", path+"/resume", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	g.pass(t)
	g.pass(t)
	if n := len(g.installmentOrders(t, f, sid)); n != 1 {
		t.Errorf("%d installment orders after pauses and a resume, want 1", n)
	}
	if n := len(g.installments(t, f, sid)); n != 2 {
		t.Errorf("%d installments after pauses and a resume, want 2", n)
	}
	checkScheduleAudit(t, g, f, sid)
}

// checkScheduleAudit checks that each change to the schedule wrote its
// recurring_donation.updated row with the changed properties.
func checkScheduleAudit(t *testing.T, g *recurringRig, f orderFixture, sid string) {
	t.Helper()
	// The actor, then the properties each row must name. nextChargeDate
	// may change besides in a pause with a day and its resume, depending
	// on how months fall.
	want := [][]string{
		{"api-key", "endDate"},                                // PATCH an end date
		{"api-key", "endDate"},                                // PATCH endDate: null
		{"api-key", "amount", "campaignId", "nextChargeDate"}, // PATCH
		{"system", "nextChargeDate"},                          // the installment
		{"api-key", "nextChargeDate"},                         // skip
		{"api-key", "pausedUntil", "status"},                  // pause until a day
		{"system", "pausedUntil", "status"},                   // resumed by a runner
		{"api-key", "status", "nextChargeDate"},               // pause
		{"api-key", "status", "nextChargeDate"},               // resume
	}
	var got []map[string]any
	var actors []string
	withDB(t, g.c, func(conn *pgx.Conn) {
		rows, err := conn.Query(context.Background(), `SELECT actor, changes FROM audit.events
			WHERE tenant_id = $1 AND entity_id = $2 AND event = 'recurring_donation.updated' ORDER BY id`, f.tn.ID, sid)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var actor string
			var ch map[string]any
			if err := rows.Scan(&actor, &ch); err != nil {
				t.Fatal(err)
			}
			actors, got = append(actors, actor), append(got, ch)
		}
	})
	if len(got) != len(want) {
		t.Fatalf("%d recurring_donation.updated rows, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if (w[0] == "system") != (actors[i] == "system") {
			t.Errorf("row %d: actor %s, want %s", i, actors[i], w[0])
		}
		extra := len(got[i]) - (len(w) - 1)
		if _, ok := got[i]["nextChargeDate"]; ok && !slices.Contains(w, "nextChargeDate") {
			extra--
		}
		if extra != 0 {
			t.Errorf("row %d: changes %v, want %v", i, got[i], w[1:])
		}
		for _, k := range w[1:] {
			if _, ok := got[i][k]; !ok {
				t.Errorf("row %d: changes %v lack %s", i, got[i], k)
			}
		}
	}
}

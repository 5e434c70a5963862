package reports

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
)

// TestUpcomingRecurring places the installments of active schedules in a
// window: monthly dates clamped to the month's end from their anchor, a
// weekly schedule up to its end date, a declined installment on its retry
// day, an overdue one on the first day (with every boundary it missed: the
// runner catches them up), a schedule paused until a day from
// the boundary it resumes on; a schedule paused with no resume day and a
// past-due one are left out, and recurring-revenue counts paused and
// past-due schedules apart.
func TestUpcomingRecurring(t *testing.T) {
	f := newFixture(t)
	x := &server{s: f.svc}
	origin := uuid.New()
	for _, s := range []struct {
		minor                   int64
		cur, freq, status       string
		start, next, end, retry any
		pausedUntil             any
	}{
		{1000, "USD", "monthly", "active", "2026-01-31", "2026-03-31", nil, nil, nil},
		{500, "USD", "weekly", "active", "2026-03-02", "2026-03-09", "2026-03-23", nil, nil},
		{700, "USD", "monthly", "paused", "2026-01-10", nil, nil, nil, nil},
		// Paused on 2026-03-01 until 2026-04-05: it resumes at its 2026-04-20 boundary.
		{900, "USD", "monthly", "paused", "2026-01-20", "2026-04-20", nil, nil, "2026-04-05"},
		{800, "USD", "monthly", "past_due", "2026-01-12", "2026-03-12", nil, nil, nil},
		{3000, "EUR", "quarterly", "active", "2025-11-30", "2026-02-28", nil, "2026-03-03", nil},
		{200, "USD", "monthly", "active", "2026-01-15", "2026-02-15", nil, nil, nil},
		// Eight weeks overdue on From: the runner catches up the 01-05
		// installment and the seven boundaries since on From, then charges
		// every Monday of the window.
		{300, "GBP", "weekly", "active", "2025-12-01", "2026-01-05", nil, nil, nil},
	} {
		f.exec(t, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id,
				payment_method, status, next_charge_date, retry_on, origin_order_id, paused_until)
			VALUES ($1, $2, 1, $3, $4, $5, $6::date, $7::date, $8, 'Card', $9, $10::date, $11::date, $12, $13::date)`,
			f.tenant, uuid.New(), s.minor, s.cur, s.freq, s.start, s.end, f.general, s.status, s.next, s.retry, origin, s.pausedUntil)
	}
	run := func(typ string, p map[string]any) runDoc {
		t.Helper()
		body, err := x.RunReportType(f.ctx(), &reportsv1.RunReportTypeRequest{TenantId: f.tenant.String(), TypeKey: typ, Body: &reportsv1.RunBody{Parameters: params(t, p)}})
		if err != nil {
			t.Fatal(err)
		}
		var doc runDoc
		if err := json.Unmarshal(body.GetData(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	doc := run("upcoming-recurring", map[string]any{"From": "2026-03-01", "Days": 61})
	want := `[{"Date":"2026-03-01","Currency":"GBP","Installments":8,"Amount":24.00},` +
		`{"Date":"2026-03-01","Currency":"USD","Installments":1,"Amount":2.00},` +
		`{"Date":"2026-03-02","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-03-03","Currency":"EUR","Installments":1,"Amount":30.00},` +
		`{"Date":"2026-03-09","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-03-09","Currency":"USD","Installments":1,"Amount":5.00},` +
		`{"Date":"2026-03-15","Currency":"USD","Installments":1,"Amount":2.00},` +
		`{"Date":"2026-03-16","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-03-16","Currency":"USD","Installments":1,"Amount":5.00},` +
		`{"Date":"2026-03-23","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-03-23","Currency":"USD","Installments":1,"Amount":5.00},` +
		`{"Date":"2026-03-30","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-03-31","Currency":"USD","Installments":1,"Amount":10.00},` +
		`{"Date":"2026-04-06","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-04-13","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-04-15","Currency":"USD","Installments":1,"Amount":2.00},` +
		`{"Date":"2026-04-20","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-04-20","Currency":"USD","Installments":1,"Amount":9.00},` +
		`{"Date":"2026-04-27","Currency":"GBP","Installments":1,"Amount":3.00},` +
		`{"Date":"2026-04-30","Currency":"USD","Installments":1,"Amount":10.00}]`
	if string(doc.Rows) != want {
		t.Errorf("rows\n got %s\nwant %s", doc.Rows, want)
	}
	if want := `[{"Date":null,"Currency":"EUR","Installments":1,"Amount":30.00},{"Date":null,"Currency":"GBP","Installments":17,"Amount":51.00},{"Date":null,"Currency":"USD","Installments":9,"Amount":50.00}]`; string(doc.Totals) != want {
		t.Errorf("totals\n got %s\nwant %s", doc.Totals, want)
	}
	// The default window is the 30 days from the service's today
	// (2026-06-30 in the fixture).
	if doc := run("upcoming-recurring", nil); doc.TotalCount == 0 {
		t.Errorf("default window: no rows")
	}
	var rev []map[string]any
	if err := json.Unmarshal(run("recurring-revenue", map[string]any{"From": "2026-01-01", "To": "2026-12-31"}).Rows, &rev); err != nil {
		t.Fatal(err)
	}
	for _, r := range rev {
		if r["Currency"] == "USD" && (r["PausedSchedules"] != 2.0 || r["ActiveSchedules"] != 5.0) {
			t.Errorf("recurring-revenue USD = %v, want 2 paused apart, 5 active", r)
		}
	}
}

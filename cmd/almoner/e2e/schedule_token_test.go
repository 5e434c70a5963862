package e2e

import (
	"net/http"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestScheduleCardNeedsToken: a Card or Ach recurring donation without a
// payment token is a 400 under its PaymentToken, as a Card payment without
// one is. It was recorded (201, recurring_donation.created) although it
// can never be charged: no method is saved for it, and the runner's
// attempts at its installments are declined until it is past_due.
func TestScheduleCardNeedsToken(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	for _, method := range []string{"Card", "Ach"} {
		body := f.cashOrder(10)
		body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 10, "frequency": "monthly", "paymentMethod": method}}
		rows := tenantAuditRows(t, c, f.tn.ID)
		e := errorsOf(t, c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusBadRequest))
		if len(e["RecurringDonations[0].PaymentToken"]) == 0 {
			t.Errorf("%s schedule without a token: errors = %v, want RecurringDonations[0].PaymentToken", method, e)
		}
		if n := tenantAuditRows(t, c, f.tn.ID) - rows; n != 0 {
			t.Errorf("%s schedule without a token: %d audit rows, want 0", method, n)
		}
	}
	// A schedule that takes the order's first payment's method takes its
	// token too; a Cash schedule needs none.
	body := f.cashOrder(10)
	body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 10, "frequency": "monthly"}}
	c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated)
}

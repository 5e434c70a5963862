package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestOrderBatchCheckedBeforeCharging: an order naming a closed or unknown
// batch is refused before its stock is reserved and its card charged. The
// batch was first looked at when the order was written, after the charge:
// the donor's card was charged and refunded (or cancelled) for a 400, and
// the reservation wrote two inventory_item.updated events (stock down,
// then back up) for an order that was never recorded.
func TestOrderBatchCheckedBeforeCharging(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	tn := st.tn
	closed := c.Do(t, "POST", tPath(tn.ID, "/batches"), tn.Key, map[string]any{"name": "Gala night"}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	c.Do(t, "POST", tPath(tn.ID, "/batches/", closed, "/close"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)

	processorCalls := func() int {
		n := 0
		for _, r := range fake.Requests() {
			if r.Method == "POST" && strings.HasPrefix(r.Path, "/v1/") {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name, batch, code, field string
	}{
		{"closed", closed, "Order.BatchClosed", ""},
		{"unknown", uuid.NewString(), "Order.BatchNotFound", "BatchId"},
	} {
		body := st.cardOrder("Card", "pm_card_visa", 50)
		body["batchId"] = tc.batch
		body["items"] = []any{map[string]any{"itemId": st.item, "quantity": 1}}
		body["payments"] = []any{map[string]any{"paymentMethod": "Card", "amount": 75, "paymentToken": "pm_card_visa"}}
		calls, rows := processorCalls(), tenantAuditRows(t, c, tn.ID)
		e := errorsOf(t, c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusBadRequest))
		if len(e[tc.field]) == 0 || !strings.HasPrefix(e[tc.field][0], tc.code) {
			t.Errorf("%s batch: errors = %v, want %s under %q", tc.name, e, tc.code, tc.field)
		}
		if n := processorCalls() - calls; n != 0 {
			t.Errorf("%s batch: %d calls to the processor for a refused order, want 0", tc.name, n)
		}
		if n := tenantAuditRows(t, c, tn.ID) - rows; n != 0 {
			t.Errorf("%s batch: %d audit rows for a refused order, want 0", tc.name, n)
		}
	}
}

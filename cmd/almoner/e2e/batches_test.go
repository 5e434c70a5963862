package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestClosedDailyBatchOpensANewOne: closing today's daily batch to
// reconcile does not stop gifts until midnight: the next order opens the
// day's next daily batch; an order naming the closed batch is still 400.
func TestClosedDailyBatchOpensANewOne(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	orders := tPath(f.tn.ID, "/orders")
	first := c.Do(t, "POST", orders, f.tn.Key, f.cashOrder(10)).Expect(t, http.StatusCreated).Map(t)
	daily := first["batchId"].(string)
	c.Do(t, "POST", tPath(f.tn.ID, "/batches/", daily, "/close"), f.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	second := c.Do(t, "POST", orders, f.tn.Key, f.cashOrder(11)).Expect(t, http.StatusCreated).Map(t)
	if second["batchId"] == daily {
		t.Fatalf("the order joined the closed daily batch %s", daily)
	}
	b := c.Do(t, "GET", tPath(f.tn.ID, "/batches/", second["batchId"].(string)), f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if b["isDaily"] != true || b["state"] != "Open" || !strings.HasSuffix(b["name"].(string), "(2)") {
		t.Errorf("reopened daily batch = %v", b)
	}
	named := f.cashOrder(12)
	named["batchId"] = daily
	r := c.Do(t, "POST", orders, f.tn.Key, named).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Order.BatchClosed") {
		t.Errorf("order naming the closed batch: %v", e)
	}
}

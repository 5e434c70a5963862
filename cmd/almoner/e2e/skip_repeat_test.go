package e2e

import (
	"net/http"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestSkipRepeatRecordsOnce: skipping a period, moving the next charge
// date back onto it and skipping again recorded the period as skipped
// each time (41 rows on one schedule). A period has one outcome: the
// repeat is 200 with the schedule unchanged and writes nothing.
func TestSkipRepeatRecordsOnce(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_ORDERS_RUNNER": "false"}})
	f := newOrderFixture(t, c)
	g := &recurringRig{c: c, f: f}
	sid := g.schedule(t, f, 10)
	path := tPath(f.tn.ID, "/recurring-donations/", sid)
	first := c.Do(t, "GET", path, f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)["nextChargeDate"].(string)

	skipped := c.Do(t, "POST", path+"/skip", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
	if skipped["nextChargeDate"].(string) <= first {
		t.Fatalf("next charge after the skip = %v, was %s", skipped["nextChargeDate"], first)
	}
	for range 3 {
		back := c.Do(t, "PATCH", path, f.tn.Key, map[string]any{"nextChargeDate": first}).Expect(t, http.StatusOK).Map(t)
		rows := tenantAuditRows(t, c, f.tn.ID)
		again := c.Do(t, "POST", path+"/skip", f.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
		if again["nextChargeDate"] != first || again["updatedAt"] != back["updatedAt"] {
			t.Errorf("a repeated skip changed the schedule: %v, was %v", again, back)
		}
		if n := tenantAuditRows(t, c, f.tn.ID) - rows; n != 0 {
			t.Errorf("a repeated skip wrote %d audit rows, want 0", n)
		}
	}
	var skips int
	for _, in := range g.installments(t, f, sid) {
		if in["status"] == "skipped" && in["period"] == first {
			skips++
		}
	}
	if skips != 1 {
		t.Errorf("period %s recorded as skipped %d times, want 1", first, skips)
	}
}

package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// tenantAuditRows counts every audit row of a tenant.
func tenantAuditRows(t *testing.T, c *apptest.Cluster, tenantID string) int {
	t.Helper()
	var n int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProfileWithoutAddress: a profile is saved as it is filled in
// (docs/reports.md), so a body without "address" is a profile with none,
// not a 500 (a nil PostalAddress was dereferenced).
func TestProfileWithoutAddress(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	path := tPath(tn.ID, "/organization-profile")
	got := c.Do(t, "PUT", path, tn.Key, map[string]any{"legalName": "Food Bank"}).Expect(t, http.StatusOK).Map(t)
	if got["legalName"] != "Food Bank" {
		t.Errorf("profile = %v", got)
	}
	// And a bad value beside it is still a 400 naming it.
	e := errorsOf(t, c.Do(t, "PUT", path, tn.Key, map[string]any{"legalName": "Food Bank", "country": "usa"}).Expect(t, http.StatusBadRequest))
	if len(e["Country"]) == 0 {
		t.Errorf("errors = %v, want Country", e)
	}
}

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

// noopPut sends body to path twice and reports whether the second PUT,
// which changes nothing, left updatedAt and the audit log as they were.
func noopPut(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, path string, body map[string]any) {
	t.Helper()
	first := c.Do(t, "PUT", path, tn.Key, body).Expect(t, http.StatusOK).Map(t)
	rows := tenantAuditRows(t, c, tn.ID)
	again := c.Do(t, "PUT", path, tn.Key, body).Expect(t, http.StatusOK).Map(t)
	if again["updatedAt"] != first["updatedAt"] {
		t.Errorf("PUT %s changing nothing moved updatedAt %v to %v with no audit row: an integrator syncing by updatedAt sees a change no event reports",
			path, first["updatedAt"], again["updatedAt"])
	}
	if n := tenantAuditRows(t, c, tn.ID) - rows; n != 0 {
		t.Errorf("PUT %s changing nothing wrote %d audit rows, want 0", path, n)
	}
}

// TestFundNoopPut: a PUT of a fund that changes nothing writes nothing,
// as for inventory items and contacts (docs/audit-log.md: no row for a
// no-op update, so no write either).
func TestFundNoopPut(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	id := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	noopPut(t, c, tn, tPath(tn.ID, "/funds/", id), map[string]any{"name": "General", "description": "Where most needed", "processingFeePercent": 2.9})
}

// TestReportNoopPut: a PUT of a saved report that changes nothing writes
// nothing.
func TestReportNoopPut(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	body := map[string]any{"name": "Top donors", "typeKey": "top-donors", "parameters": map[string]any{"Limit": 10}}
	id := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	noopPut(t, c, tn, tPath(tn.ID, "/reports/", id), body)
}

// TestWebhookNoopPut: a PUT of a webhook endpoint that changes nothing
// writes nothing.
func TestWebhookNoopPut(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	body := map[string]any{"name": "CRM", "url": "https://8.8.8.8/hooks/almoner", "eventTypes": []string{"order.created", "contact.created"}}
	id := c.Do(t, "POST", whPath(tn.ID), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	noopPut(t, c, tn, whPath(tn.ID, "/", id), body)
	off := map[string]any{"name": "CRM", "url": "https://8.8.8.8/hooks/almoner", "eventTypes": []string{"order.created"}, "active": false}
	noopPut(t, c, tn, whPath(tn.ID, "/", id), off)
}

// TestProfileNoopPut: a PUT of the organization profile that changes
// nothing writes nothing.
func TestProfileNoopPut(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	noopPut(t, c, tn, tPath(tn.ID, "/organization-profile"), receiptProfile)
}

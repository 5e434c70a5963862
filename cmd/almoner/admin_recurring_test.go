package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestAdminRecurringRetries sets a tenant's retry days as an operator
// would, and refuses days that do not increase or are out of range.
func TestAdminRecurringRetries(t *testing.T) {
	c := startCluster(t)
	id := c.NewTenant(t).ID
	addr := "--orders-addr=" + c.ServiceAddr("orders")
	code, out, errOut := runCLI(t, "admin", "tenant", "recurring-retries", "--tenant", id, "--days", "2, 5", addr)
	if code != 0 {
		t.Fatalf("recurring-retries: %d %s", code, errOut)
	}
	if got := decodeObject(t, out); got["tenantId"] != id || fmt.Sprint(got["days"]) != "[2 5]" {
		t.Errorf("recurring-retries printed %s", out)
	}
	code, out, _ = runCLI(t, "admin", "tenant", "recurring-retries", "--tenant", id, "--days", "", addr)
	if got := decodeObject(t, out); code != 0 || fmt.Sprint(got["days"]) != "[]" {
		t.Errorf("no retries: %d %s", code, out)
	}
	for _, bad := range []string{"3,1", "0", "61", "x"} {
		code, _, errOut := runCLI(t, "admin", "tenant", "recurring-retries", "--tenant", id, "--days", bad, addr)
		if code == 0 || !strings.Contains(errOut, "days") && !strings.Contains(errOut, "Days") {
			t.Errorf("--days %q: exit %d, %q", bad, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "admin", "tenant", "recurring-retries", "--tenant", id, addr); code == 0 || !strings.Contains(errOut, "--days") {
		t.Errorf("without --days: exit %d, %q", code, errOut)
	}
}

package events

import (
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/audit"
)

func TestCatalog(t *testing.T) {
	t.Parallel()
	want := []string{"contact", "order", "order_donation", "order_payment", "batch", "fund", "shipment", "recurring_donation", "inventory_item", "payment_method", "webhook_endpoint"}
	for _, e := range want {
		for _, a := range []string{"created", "updated", "deleted"} {
			if !Known(e + "." + a) {
				t.Errorf("%s.%s is not in the catalog", e, a)
			}
		}
	}
	// Entities that are never deleted have no deleted event.
	neverDeleted := []string{"organization_profile", "tax_statement_run", "import"}
	for _, e := range neverDeleted {
		if !Known(e+".created") || !Known(e+".updated") || Known(e+".deleted") {
			t.Errorf("%s: created %v, updated %v, deleted %v; want true, true, false", e, Known(e+".created"), Known(e+".updated"), Known(e+".deleted"))
		}
	}
	// An impersonation starts and ends, never updates.
	if !Known("impersonation.created") || Known("impersonation.updated") || !Known("impersonation.deleted") {
		t.Error("impersonation events")
	}
	// The tenant settings exist with the tenant: only updated.
	if Known("tenant_settings.created") || !Known("tenant_settings.updated") || Known("tenant_settings.deleted") {
		t.Error("tenant settings events")
	}
	cat := Catalog()
	if n := 3*len(want) + 2*len(neverDeleted) + 2 + 1; len(cat) != n {
		t.Errorf("catalog has %d types, want %d", len(cat), n)
	}
	for i, c := range cat {
		if i > 0 && cat[i-1].Name >= c.Name {
			t.Errorf("not sorted or duplicated at %s", c.Name)
		}
		if c.Description == "" || strings.Contains(c.Description, "\n") || !strings.HasSuffix(c.Description, ".") {
			t.Errorf("%s: description %q is not one sentence", c.Name, c.Description)
		}
	}
	cases := []struct {
		name string
		want bool
	}{
		{audit.EventName("OrderPayment", audit.Created), true},
		{Test, false},
		{"contact.restored", false},
		{"Contact.created", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := Known(tc.name); got != tc.want {
			t.Errorf("Known(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Package events is the one catalog of the webhook event types integrators
// can subscribe to. Names are audit.EventName(entityType, action): the
// entity's snake_case name, a dot, and created, updated or deleted.
package events

import (
	"sort"

	"github.com/almoner/almoner/pkg/audit"
)

// Type is one subscribable event type.
type Type struct {
	// Name is the event name, e.g. "contact.created".
	Name string
	// Description says in one line when the event fires.
	Description string
}

// Test is the synthetic event that POST /webhooks/{id}/test sends. It is
// not subscribable: it is sent only on request, to the one endpoint tested.
const Test = "webhook.test"

// entity is an audited entity whose changes are events.
type entity struct {
	// Type is the audit entity type (PascalCase).
	Type string
	// Noun is how the descriptions name it.
	Noun string
	// Deleted describes the deleted event (soft delete, void, cancel);
	// "" for an entity that is never deleted (no deleted event).
	Deleted string
}

// entities are the audited entities integrators can subscribe to. Add an
// entity here when its service starts writing audit rows for it.
var entities = []entity{
	{"Contact", "A contact", "soft-deleted"},
	{"Order", "An order", "deleted"},
	{"OrderDonation", "A donation line of an order", "deleted"},
	{"OrderPayment", "A payment of an order", "deleted"},
	{"Batch", "A batch", "deleted"},
	{"Fund", "A fund", "deleted"},
	{"Shipment", "A shipment", "deleted"},
	{"RecurringDonation", "A recurring donation schedule", "deleted"},
	{"InventoryItem", "An inventory item", "deleted"},
	{"PaymentMethod", "A contact's saved payment method", "detached"},
	{"WebhookEndpoint", "A webhook endpoint", "deleted"},
	{"OrganizationProfile", "The organization profile receipts and statements print", ""},
	{"TaxStatementRun", "A year-end tax statement run", ""},
	{"Import", "A bulk import of contacts or gifts", ""},
	// Started and ended, never updated (docs/operators.md).
	{"Impersonation", "A platform operator's impersonation of one of the tenant's users", "ended"},
	// Every tenant has them from its creation: only updated.
	{"TenantSettings", "The tenant settings", ""},
}

// neverUpdated are the entities without an updated event.
var neverUpdated = map[string]bool{"Impersonation": true}

// neverCreated are the entities without a created event: they exist with
// the tenant (docs/operators.md, "Tenant settings").
var neverCreated = map[string]bool{"TenantSettings": true}

var (
	catalog []Type
	byName  = map[string]bool{}
)

func init() {
	for _, e := range entities {
		for _, a := range []struct{ action, verb string }{
			{audit.Created, "was created"},
			{audit.Updated, "was updated; the data carries the changed properties"},
			{audit.Deleted, "was " + e.Deleted},
		} {
			if a.action == audit.Deleted && e.Deleted == "" || a.action == audit.Updated && neverUpdated[e.Type] || a.action == audit.Created && neverCreated[e.Type] {
				continue
			}
			t := Type{Name: audit.EventName(e.Type, a.action), Description: e.Noun + " " + a.verb + "."}
			catalog = append(catalog, t)
			byName[t.Name] = true
		}
	}
	sort.Slice(catalog, func(i, j int) bool { return catalog[i].Name < catalog[j].Name })
}

// Catalog returns every subscribable event type, sorted by name.
func Catalog() []Type { return append([]Type(nil), catalog...) }

// Known reports whether name is a subscribable event type.
func Known(name string) bool { return byName[name] }

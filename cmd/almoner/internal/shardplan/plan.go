// Package shardplan is Almoner's plan for distributing its database on
// Citus by tenant_id (docs/scaling.md), in a form the tests hold the
// schema and the statements to: which tables stay on the coordinator,
// and the known departures from the plan with what changes for each.
package shardplan

import "strings"

// Role is a table's place on a Citus cluster.
type Role string

// The roles a table can have.
const (
	// Distributed tables are sharded by tenant_id, all in one colocation
	// group: a tenant's rows of every table live on one node, so every
	// statement filtered by one tenant runs on one node, joins included.
	Distributed Role = "distributed"
	// Local tables stay on the coordinator: the control plane (tenants,
	// users, sessions, keys: looked up by a key, session or token before
	// any tenant is known), platform mail, rate-limit counters keyed by
	// client, and every schema's migration bookkeeping.
	Local Role = "local"
)

// LocalSchemas are the schemas whose every table is Local.
var LocalSchemas = map[string]string{
	"auth":      "the control plane: a request's key, session or invitation token is looked up before its tenant is known (api_keys.lookup_id, sessions.id, invitations.token_hash), and operators span tenants; small, and reached by the other services over gRPC only",
	"ratelimit": "counters keyed by client address and route, not by tenant",
	"mail":      "the outbox holds platform mail too (operator invitations, password resets: tenant_id NULL); one sender drains it",
}

// LocalTables are the Local tables outside LocalSchemas.
var LocalTables = map[string]string{
	"contacts.contact_form_submissions": "the public contact form of the Almoner site, before any tenant exists",
}

// RoleOf returns the role of schema.table.
func RoleOf(qualified string) Role {
	schema, table, _ := strings.Cut(qualified, ".")
	if _, ok := LocalSchemas[schema]; ok || table == "goose_db_version" {
		return Local
	}
	if _, ok := LocalTables[qualified]; ok {
		return Local
	}
	return Distributed
}

// UniqueWithoutTenant are the unique indexes of distributed tables that
// do not include tenant_id today, by index name: Citus cannot enforce
// them across shards. Each says what changes.
var UniqueWithoutTenant = map[string]string{
	"audit.events_event_id":     "event_id is unique across tenants today; on Citus it becomes UNIQUE (tenant_id, event_id) — an event id is a UUIDv7 minted by the writer, and every reader (feed, webhooks) already knows the tenant",
	"webhooks.deliveries_first": "one first delivery per (endpoint_id, event_id) where kind = 'event'; on Citus it becomes (tenant_id, endpoint_id, event_id): an endpoint belongs to one tenant, so the constraint means the same",
}

// CrossShard are the statements that name a distributed table without
// tenant_id (file:function:relation, TestShardCrossingStatements), each
// with why it may run on every shard.
var CrossShard = map[string]string{
	// Filters assembled at run time: the statement's text holds a
	// placeholder, and the first term the code adds is the tenant's.
	"pkg/audit/log.go:List:audit.events":                                built,
	"pkg/audit/reader.go:readSQL:audit.events":                          built,
	"services/contacts/store/list.go:Store.List:contacts.contacts":      built,
	"services/imports/store/list.go:Store.List:imports.imports":         built,
	"services/inventory/store/items.go:Store.ListItems:inventory.items": built,
	"services/orders/store/list.go:Store.ListOrders:orders.orders":      built,
	// Background work over every tenant: a multi-shard query on Citus,
	// one a poll, not one a request.
	"services/imports/store/imports.go:Store.SweepUploads:imports.imports":                         sweep,
	"services/orders/store/idempotency.go:Store.PurgeKeys:orders.idempotency_keys":                 sweep,
	"services/orders/store/recurringstore/lifecycle.go:Store.ResumeDue:orders.recurring_donations": sweep,
	"services/orders/store/recurringstore/runner.go:Store.DueSchedules:orders.recurring_donations": sweep,
	"services/orders/store/shipments.go:Store.ShipmentRequests:orders.shipment_requests":           sweep,
	"services/contacts/store/merge.go:Store.PendingMerges:contacts.merges":                         sweep,
	"services/webhooks/store/queue.go:Store.PendingCount:webhooks.deliveries":                      "a gauge of the whole queue (metrics): a multi-shard count, once a scrape",
	// A catalog lookup that names a view without reading it: the read
	// that follows filters by tenant_id.
	"services/auth/settings/store.go:changeCurrency:orders.report_orders_v1": "to_regclass names the view to learn whether orders is migrated; no row is read (the EXISTS that follows filters by tenant_id)",
	// Claims of the next job of any tenant with FOR UPDATE SKIP LOCKED,
	// which Citus runs on one shard only.
	"services/imports/store/runs.go:Store.Claim:imports.imports":                     claim,
	"services/reports/letters/store.go:Store.Claim:reports.letter_runs":              claim,
	"services/reports/store/taxruns.go:Store.ClaimTaxRun:reports.tax_statement_runs": claim,
}

const (
	built = "the WHERE is assembled at run time and its first term is the tenant's (tenant_id = $1): single-shard"
	sweep = "background work over every tenant (a runner's poll or a sweep): a multi-shard query on Citus, a few a minute, never on a request's path"
	claim = "a runner claims the oldest job of any tenant FOR UPDATE SKIP LOCKED, which Citus refuses across shards: on Citus the claim reads a small coordinator-local queue table (tenant_id, id, lease) written beside the job, then locks the job on its shard by (tenant_id, id)"
)

package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

func TestPlan(t *testing.T) {
	p := Plan(2, 5, 100, 300, 1000, 3000)
	if len(p) != 4 {
		t.Fatalf("got %d tenants, want the large one and 3 small", len(p))
	}
	if p[0].ID != LargeTenantID() || p[0].Contacts != 1000 || p[0].Gifts != 3000 {
		t.Errorf("first is %+v, want the large tenant", p[0])
	}
	if p[1].ID != SmallTenantID(2) || p[1].Slug != "bench-small-2" || p[3].ID != SmallTenantID(4) {
		t.Errorf("small tenants %+v … %+v, want 2 to 4", p[1], p[3])
	}
	if again := Plan(2, 3, 1, 1, 0, 0); again[0].ID != p[1].ID || SmallTenantID(2) == SmallTenantID(3) || SmallTenantID(0) == LargeTenantID() {
		t.Error("tenant ids are not stable and distinct")
	}
	if got := Plan(0, 3, 1, 1, 0, 0); len(got) != 3 || got[0].ID != SmallTenantID(0) {
		t.Errorf("without a large tenant: %+v", got)
	}
}

// TestLoad loads two small tenants and a larger one and checks that the
// rows hang together as the services' own writes would leave them: the
// counters continue after the loaded ids, the foreign keys the load did
// not check hold, every gift's contact existed when it gave, the giving
// summaries add up to the orders, and the audit rows are in time order
// over several transactions.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, app.AllMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tenants := Plan(0, 2, 7, 20, 50, 150)
	if err := Load(ctx, pool, tenants, now, t.Logf); err != nil {
		t.Fatal(err)
	}
	for _, tn := range tenants {
		var tenantRows, settings, contacts, emails, addresses, orders, donations, payments, events int
		if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM auth.tenants WHERE id = $1 AND 'api-access:enabled' = ANY (features)),
			(SELECT count(*) FROM auth.tenant_settings WHERE tenant_id = $1),
			(SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1),
			(SELECT count(*) FROM contacts.contact_emails WHERE tenant_id = $1),
			(SELECT count(*) FROM contacts.contact_addresses WHERE tenant_id = $1),
			(SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND status = 'Completed'),
			(SELECT count(*) FROM orders.order_donations WHERE tenant_id = $1),
			(SELECT count(*) FROM orders.order_payments WHERE tenant_id = $1),
			(SELECT count(*) FROM audit.events WHERE tenant_id = $1)`, tn.ID).
			Scan(&tenantRows, &settings, &contacts, &emails, &addresses, &orders, &donations, &payments, &events); err != nil {
			t.Fatal(err)
		}
		if tenantRows != 1 || settings != 1 || contacts != tn.Contacts || emails != tn.Contacts || addresses != tn.Contacts ||
			orders != tn.Gifts || donations != tn.Gifts || payments != tn.Gifts || events != 1+tn.Contacts+tn.Gifts {
			t.Errorf("%s: tenant %d, settings %d, contacts %d/%d/%d, orders %d/%d/%d, events %d; want %d contacts, %d gifts",
				tn.Slug, tenantRows, settings, contacts, emails, addresses, orders, donations, payments, events, tn.Contacts, tn.Gifts)
		}
		rows, err := pool.Query(ctx, `SELECT name, last_value FROM contacts.counters WHERE tenant_id = $1
			UNION ALL SELECT name, last_value FROM orders.counters WHERE tenant_id = $1`, tn.ID)
		if err != nil {
			t.Fatal(err)
		}
		counters := map[string]int64{}
		var name string
		var v int64
		for rows.Next() {
			if err := rows.Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			counters[name] = v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		c, g := int64(tn.Contacts), int64(tn.Gifts)
		if counters["contact"] != c || counters["email"] != c || counters["address"] != c || counters[orderNumberCounter] != g {
			t.Errorf("%s: counters %v, want the loaded ids taken (%d contacts, %d orders)", tn.Slug, counters, c, g)
		}
	}
	var orphans, early, givingOff, eventsOff, xids, days int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM orders.order_donations d WHERE NOT EXISTS (SELECT FROM orders.orders o WHERE o.tenant_id = d.tenant_id AND o.id = d.order_id)
			OR NOT EXISTS (SELECT FROM orders.funds f WHERE f.tenant_id = d.tenant_id AND f.id = d.fund_id))
		+ (SELECT count(*) FROM orders.order_payments p WHERE NOT EXISTS (SELECT FROM orders.orders o WHERE o.tenant_id = p.tenant_id AND o.id = p.order_id))
		+ (SELECT count(*) FROM orders.orders o WHERE NOT EXISTS (SELECT FROM orders.batches b WHERE b.tenant_id = o.tenant_id AND b.id = o.batch_id))
		+ (SELECT count(*) FROM contacts.contact_emails e WHERE NOT EXISTS (SELECT FROM contacts.contacts c WHERE c.tenant_id = e.tenant_id AND c.id = e.contact_id))
		+ (SELECT count(*) FROM contacts.contact_addresses a WHERE NOT EXISTS (SELECT FROM contacts.contacts c WHERE c.tenant_id = a.tenant_id AND c.id = a.contact_id))
		+ (SELECT count(*) FROM auth.api_keys k WHERE NOT EXISTS (SELECT FROM auth.tenants t WHERE t.id = k.tenant_id)),
		(SELECT count(*) FROM orders.orders o LEFT JOIN contacts.contacts c ON c.tenant_id = o.tenant_id AND c.id = o.contact_id
			WHERE c.id IS NULL OR c.created_at > o.created_at OR o.created_at > $1),
		(SELECT count(*) FROM (SELECT o.tenant_id, o.contact_id, count(*) AS n, sum(o.total_minor) AS s FROM orders.orders o GROUP BY 1, 2) o
			FULL JOIN orders.contact_giving g ON g.tenant_id = o.tenant_id AND g.contact_id = o.contact_id
			WHERE g.gift_count IS DISTINCT FROM o.n::int OR g.net_minor IS DISTINCT FROM o.s),
		(SELECT count(*) FROM (SELECT occurred_at < lag(occurred_at) OVER (ORDER BY xid, id) AS back FROM audit.events) e WHERE back),
		(SELECT count(DISTINCT xid) FROM audit.events),
		(SELECT count(DISTINCT date_trunc('day', occurred_at AT TIME ZONE 'UTC')) FROM audit.events)`, now).
		Scan(&orphans, &early, &givingOff, &eventsOff, &xids, &days); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || early != 0 || givingOff != 0 || eventsOff != 0 {
		t.Errorf("rows without their parent %d, gifts before their contact or after now %d, giving summaries off %d, audit rows out of time order %d",
			orphans, early, givingOff, eventsOff)
	}
	if xids != days {
		t.Errorf("audit rows in %d transactions, want one per day with rows (%d)", xids, days)
	}
	// The set-based rebuild leaves what the orders service's function
	// does, tenant by tenant.
	const summaries = `(SELECT 'm', tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
		FROM orders.contact_giving_months
		UNION ALL SELECT 'l', tenant_id, NULL, NULL, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
		FROM orders.contact_giving
		UNION ALL SELECT 'h', tenant_id, fund_id, NULL, NULL, currency, gifts, net_minor, NULL, hour, NULL
		FROM orders.giving_hour_tallies)`
	if _, err := pool.Exec(ctx, `CREATE TABLE loaded_giving AS `+summaries); err != nil {
		t.Fatal(err)
	}
	for _, tn := range tenants {
		if _, err := pool.Exec(ctx, `SELECT orders.rebuild_contact_giving($1)`, tn.ID); err != nil {
			t.Fatal(err)
		}
	}
	var differ, summaryRows int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ((`+summaries+` EXCEPT ALL SELECT * FROM loaded_giving)
		UNION ALL (SELECT * FROM loaded_giving EXCEPT ALL `+summaries+`)) d), (SELECT count(*) FROM loaded_giving)`).Scan(&differ, &summaryRows); err != nil {
		t.Fatal(err)
	}
	if differ != 0 || summaryRows == 0 {
		t.Errorf("orders.rebuild_contact_giving changed %d of the %d summary rows the load wrote", differ, summaryRows)
	}
	if err := Load(ctx, pool, Plan(1, 2, 7, 20, 0, 0), now, t.Logf); !errors.Is(err, errLoaded) {
		t.Errorf("loading a tenant again: %v, want errLoaded", err)
	}
}

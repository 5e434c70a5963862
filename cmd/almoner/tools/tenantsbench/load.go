package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/features"
	contactstore "github.com/almoner/almoner/services/contacts/store"
	orderstore "github.com/almoner/almoner/services/orders/store"
)

// Tenant is one synthetic tenant to load: Contacts contacts (each with
// an email and an address) and Gifts one-line donation orders (Completed,
// cash, one fund, one batch), each with its audit row.
type Tenant struct {
	// Index seeds the tenant's names and amounts; small tenants are
	// numbered from 0, the large one is largeIndex.
	Index    int
	ID       uuid.UUID
	Name     string
	Slug     string
	Contacts int
	Gifts    int
}

// largeIndex is the large tenant's Index, apart from every small one's.
const largeIndex = 1_000_000_000

// SmallTenantID is the id of small tenant i: the same in every database
// and run, so database B (a copy of A plus more tenants) holds A's.
func SmallTenantID(i int) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("almoner-tenants-bench-small-"+strconv.Itoa(i)))
}

// LargeTenantID is the id of the large tenant.
func LargeTenantID() uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("almoner-tenants-bench-large"))
}

// Plan lists the tenants of one load: small tenants from..to-1 of
// smallContacts contacts and smallGifts gifts each, and the large tenant
// first when largeContacts > 0 (with largeGifts gifts).
func Plan(from, to, smallContacts, smallGifts, largeContacts, largeGifts int) []Tenant {
	var out []Tenant
	if largeContacts > 0 {
		out = append(out, Tenant{Index: largeIndex, ID: LargeTenantID(), Name: "Bench large", Slug: "bench-large",
			Contacts: largeContacts, Gifts: largeGifts})
	}
	for i := from; i < to; i++ {
		out = append(out, Tenant{Index: i, ID: SmallTenantID(i), Name: "Bench small " + strconv.Itoa(i), Slug: "bench-small-" + strconv.Itoa(i),
			Contacts: smallContacts, Gifts: smallGifts})
	}
	return out
}

// benchActor is the audit actor of the loaded contacts and orders: what
// an API key's writes record (api-key:<keyPrefix>).
const benchActor = "api-key:ak_test_bench"

// orderNumberCounter is the orders service's counter of order numbers
// (unexported there: services/orders/store/numbers.go). A load takes the
// numbers through orders' own TakeNumbers; the name is only needed to
// check what it left.
const orderNumberCounter = "order_number"

// The load's statements, in order, all on one connection. They read the
// session's temporary table bench_tenants (one row per Tenant, with the
// load's clock "now" and a per-tenant shift of up to a day so tenants'
// timestamps differ) and write rows as the services' own writes would,
// with ids 1…n from the counters Load took beforehand. Heap order is
// time order across the load's tenants (ORDER BY created_at), as rows
// written over two years by many tenants interleave.
//
// Contacts are created from 760 days before now to a day before; gifts
// from 730 days before to a day before, each from a contact created
// before it. The contacts' names come from two lists of 20 by a hash of
// (tenant, contact), every 10th contact an organization.
var loadSteps = []struct{ name, sql string }{
	{"tenants", `INSERT INTO auth.tenants (id, name, slug, active, features, default_currency, created_at, updated_at)
		SELECT id, name, slug, true, @features::text[], 'USD', created_at, created_at FROM bench_tenants`},
	{"tenant settings", `INSERT INTO auth.tenant_settings (tenant_id) SELECT id FROM bench_tenants`},
	// One integration key per tenant besides the benchmark's own (made
	// with the admin command): never usable (its hash is of no key), it
	// gives auth.api_keys a row per tenant, as a live deployment has.
	{"api keys", `INSERT INTO auth.api_keys (tenant_id, id, name, lookup_id, key_prefix, key_hash, environment, scopes, created_at)
		SELECT id, md5(id::text || ':key')::uuid, 'integration', 'bench' || md5(id::text || ':lookup'), 'ak_test_bench',
			sha256(convert_to(id::text, 'UTF8')), 'sandbox', ARRAY['contacts:view'], created_at
		FROM bench_tenants`},
	{"funds", `INSERT INTO orders.funds (tenant_id, id, name, is_tax_deductible, created_at, updated_at)
		SELECT id, md5(id::text || ':fund')::uuid, 'General', true, created_at, created_at FROM bench_tenants`},
	{"batches", `INSERT INTO orders.batches (tenant_id, id, name, description, created_at)
		SELECT id, md5(id::text || ':batch')::uuid, 'Gifts', 'Loaded by tenantsbench.', created_at FROM bench_tenants`},
	{"contact rows (temporary)", `INSERT INTO bench_contacts (tenant_id, i, k, contact_type, first_name, last_name, organization_name,
			name_key, email, line1, city, state, postal, created_at)
		SELECT t.id, t.i, c.k, CASE WHEN c.org THEN 'Organization' ELSE 'Individual' END,
			CASE WHEN NOT c.org THEN c.first END, CASE WHEN NOT c.org THEN c.last END,
			CASE WHEN c.org THEN c.word || ' ' || c.last || ' Foundation' END,
			lower(CASE WHEN c.org THEN c.word || ' ' || c.last || ' Foundation' ELSE c.first || ' ' || c.last END),
			CASE WHEN c.org THEN 'contact' || c.k ELSE lower(c.first) || '.' || lower(c.last) || '.' || c.k END || '@example.org',
			(1 + c.h % 9000) || ' ' || (ARRAY['Main St', 'Oak Ave', 'Maple Dr', 'Cedar Ln', 'Elm St', 'Pine Rd', 'Park Ave', 'Lake Blvd'])[1 + c.h / 400 % 8],
			(ARRAY['Springfield', 'Riverton', 'Fairview', 'Madison', 'Georgetown', 'Salem', 'Franklin', 'Clinton'])[1 + c.h / 3200 % 8],
			(ARRAY['CA', 'TX', 'NY', 'FL', 'IL', 'PA', 'OH', 'GA', 'NC', 'MI'])[1 + c.h / 25600 % 10],
			(10000 + c.h / 256000 % 30000)::text,
			t.now - interval '760 days' - t.shift + ((c.k - 1)::float8 / t.contacts) * interval '759 days'
		FROM bench_tenants t
		CROSS JOIN LATERAL (
			SELECT k, h, k % 10 = 0 AS org,
				(ARRAY['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth',
					'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen'])[1 + h % 20] AS first,
				(ARRAY['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
					'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin'])[1 + h / 20 % 20] AS last,
				(ARRAY['Acme', 'Summit', 'Harbor', 'Beacon', 'Cedar', 'Pioneer', 'Unity', 'Riverside', 'Keystone', 'Lighthouse'])[1 + h / 7 % 10] AS word
			FROM (SELECT k, abs(hashint8(t.i::bigint * 1000003 + k)::bigint) AS h FROM generate_series(1, t.contacts) k) x
		) c`},
	{"contacts", `INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, organization_name, name_key, search_text,
			created_at, updated_at)
		SELECT tenant_id, k, contact_type, first_name, last_name, organization_name, name_key, name_key, created_at, created_at
		FROM bench_contacts ORDER BY created_at, i`},
	{"contact emails", `INSERT INTO contacts.contact_emails (tenant_id, id, contact_id, position, email_address, email_key, email_type, is_primary)
		SELECT tenant_id, k, k, 0, email, email, 'Personal', true FROM bench_contacts ORDER BY created_at, i`},
	{"contact addresses", `INSERT INTO contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary, line1, city,
			state_province, postal_code, postal_key, country, name_key)
		SELECT tenant_id, k, k, 0, 'Home', true, line1, city, state, postal, postal, 'US', name_key FROM bench_contacts ORDER BY created_at, i`},
	{"order rows (temporary)", `INSERT INTO bench_orders (tenant_id, i, j, id, contact_id, amount, created_at)
		SELECT t.id, t.i, j, md5(t.id::text || ':order:' || j)::uuid,
			1 + abs(hashint8(t.i::bigint * 1000003 + j + 7)::bigint)
				% least(t.contacts, 1 + floor(t.contacts * (30 + 729 * (j - 1)::float8 / t.gifts) / 759))::bigint,
			1000 + (abs(hashint8(t.i::bigint * 1000003 + j + 11)::bigint) % 50) * (abs(hashint8(t.i::bigint * 1000003 + j + 13)::bigint) % 50) * 100,
			t.now - interval '730 days' - t.shift + ((j - 1)::float8 / t.gifts) * interval '729 days'
		FROM bench_tenants t CROSS JOIN LATERAL generate_series(1, t.gifts) j`},
	{"orders", `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor,
			total_minor, deductible_minor, refunded_minor, has_donations, has_items, batch_id, created_at, updated_at)
		SELECT tenant_id, id, j, contact_id, 'Completed', 'USD', amount, 0, amount, amount, 0, true, false,
			md5(tenant_id::text || ':batch')::uuid, created_at, created_at
		FROM bench_orders ORDER BY created_at, i`},
	{"order donations", `INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
		SELECT tenant_id, id, md5(id::text || ':donation')::uuid, 0, md5(tenant_id::text || ':fund')::uuid, 'General', amount, true
		FROM bench_orders ORDER BY created_at, i`},
	{"order payments", `INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status)
		SELECT tenant_id, id, md5(id::text || ':payment')::uuid, 0, 'Cash', amount, 'Captured'
		FROM bench_orders ORDER BY created_at, i`},
	// One audit row per tenant, contact and order, staged here and
	// written a day at a time (writeEvents).
	{"audit rows (temporary)", `INSERT INTO bench_events (tenant_id, entity_type, entity_id, event, at)
		SELECT id, 'Tenant', id::text, @tenantEvent, created_at FROM bench_tenants
		UNION ALL
		SELECT tenant_id, 'Contact', k::text, @contactEvent, created_at FROM bench_contacts
		UNION ALL
		SELECT tenant_id, 'Order', id::text, @orderEvent, created_at FROM bench_orders`},
}

// rebuildGiving is orders.rebuild_contact_giving (orders migration
// 00021) for every tenant of bench_tenants at once: the same statements
// with "tenant_id = p_tenant" become a join to bench_tenants and the
// tenant a grouping column. Called per tenant, the function took 0.1 s
// for each small tenant of 10,000 (their gifts on scattered pages), half
// an hour in all; grouped, the orders are read once. TestLoad checks
// that calling the function afterwards changes nothing.
var rebuildGiving = []string{
	`DELETE FROM orders.contact_giving_months WHERE tenant_id IN (SELECT id FROM bench_tenants)`,
	`DELETE FROM orders.contact_giving WHERE tenant_id IN (SELECT id FROM bench_tenants)`,
	`INSERT INTO orders.contact_giving_months
		(tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
	SELECT o.tenant_id, '00000000-0000-0000-0000-000000000000'::uuid, o.month, o.contact_id, o.currency,
		count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at)
	FROM (SELECT o.tenant_id, o.contact_id, o.currency, o.created_at, date_trunc('month', o.created_at AT TIME ZONE 'UTC')::date AS month,
			o.donation_subtotal_minor - o.donation_refunded_minor AS net
		FROM orders.orders o JOIN bench_tenants t ON t.id = o.tenant_id
		WHERE o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded')) o
	WHERE o.net > 0
	GROUP BY o.tenant_id, o.month, o.contact_id, o.currency`,
	`INSERT INTO orders.contact_giving_months
		(tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
	SELECT g.tenant_id, g.fund_id, g.month, g.contact_id, g.currency,
		count(*), sum(g.net), max(g.net), min(g.created_at), max(g.created_at)
	FROM (SELECT o.tenant_id, o.contact_id, o.currency, o.created_at, date_trunc('month', o.created_at AT TIME ZONE 'UTC')::date AS month,
			d.fund_id, sum(d.amount_minor - d.refunded_minor) AS net
		FROM orders.orders o
		JOIN bench_tenants t ON t.id = o.tenant_id
		JOIN orders.order_donations d ON d.tenant_id = o.tenant_id AND d.order_id = o.id
		WHERE o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded')
		GROUP BY o.tenant_id, o.id, o.contact_id, o.currency, o.created_at, d.fund_id) g
	WHERE g.net > 0
	GROUP BY g.tenant_id, g.fund_id, g.month, g.contact_id, g.currency`,
	`INSERT INTO orders.contact_giving (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
	SELECT m.tenant_id, m.contact_id, m.currency, sum(m.gift_count), sum(m.net_minor), max(m.largest_minor), min(m.first_at), max(m.last_at)
	FROM orders.contact_giving_months m JOIN bench_tenants t ON t.id = m.tenant_id
	WHERE m.fund_id = '00000000-0000-0000-0000-000000000000'::uuid
	GROUP BY m.tenant_id, m.contact_id, m.currency`,
	// The hour tallies (orders 00028, orders.rebuild_giving_hours): the
	// dashboard reads a tenant's totals and funds from them.
	`DELETE FROM orders.giving_hour_tallies WHERE tenant_id IN (SELECT id FROM bench_tenants)`,
	`INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor, compacted)
	SELECT x.tenant_id, x.hour, x.currency, x.fund_id, sum(x.gifts), sum(x.net), true
	FROM (SELECT o.tenant_id, orders.tally_hour(o.created_at) AS hour, o.currency, '00000000-0000-0000-0000-000000000000'::uuid AS fund_id,
			1 AS gifts, o.donation_subtotal_minor - o.donation_refunded_minor AS net
		FROM orders.orders o JOIN bench_tenants t ON t.id = o.tenant_id WHERE orders.gift_counts(o)
		UNION ALL
		SELECT o.tenant_id, orders.tally_hour(o.created_at), o.currency, d.fund_id, 0, d.amount_minor - d.refunded_minor
		FROM orders.orders o JOIN bench_tenants t ON t.id = o.tenant_id
		JOIN orders.order_donations d ON d.tenant_id = o.tenant_id AND d.order_id = o.id
		WHERE orders.gift_counts(o)) x
	GROUP BY x.tenant_id, x.hour, x.currency, x.fund_id`,
}

// Load writes tenants into the database of pool (migrated, without
// them), rebuilds the contacts' giving summaries, and runs VACUUM ANALYZE.
// It needs a superuser (session_replication_role) and a database nobody
// else writes: the rows go in with triggers and foreign-key checks off.
// now is the load's clock; logf reports each step's time.
func Load(ctx context.Context, pool *pgxpool.Pool, tenants []Tenant, now time.Time, logf func(string, ...any)) error {
	if len(tenants) == 0 {
		return nil
	}
	if err := takeIDs(ctx, pool, tenants); err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	n := len(tenants)
	idx, ids, names, slugs, contacts, gifts := make([]int32, n), make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]int32, n), make([]int32, n)
	for i, t := range tenants {
		idx[i], ids[i], names[i], slugs[i], contacts[i], gifts[i] = int32(t.Index), t.ID, t.Name, t.Slug, int32(t.Contacts), int32(t.Gifts)
	}
	setup := []struct {
		sql  string
		args []any
	}{
		// Sorting a million rows by time in memory rather than in batches
		// on disk; the session is the loader's alone.
		{`SET work_mem = '256MB'`, nil},
		{`SET maintenance_work_mem = '512MB'`, nil},
		{`CREATE TEMP TABLE bench_tenants (i int NOT NULL, id uuid PRIMARY KEY, name text NOT NULL, slug text NOT NULL,
			contacts int NOT NULL, gifts int NOT NULL, now timestamptz NOT NULL, shift interval NOT NULL, created_at timestamptz NOT NULL)`, nil},
		{`INSERT INTO bench_tenants
			SELECT i, id, name, slug, contacts, gifts, $7::timestamptz, s.shift, $7::timestamptz - interval '761 days' - s.shift
			FROM unnest($1::int[], $2::uuid[], $3::text[], $4::text[], $5::int[], $6::int[]) AS u(i, id, name, slug, contacts, gifts)
			CROSS JOIN LATERAL (SELECT (abs(hashint4(i)::bigint) % 86400) * interval '1 second' AS shift) s`,
			[]any{idx, ids, names, slugs, contacts, gifts, now}},
		{`CREATE TEMP TABLE bench_contacts (tenant_id uuid, i int, k bigint, contact_type text, first_name text, last_name text,
			organization_name text, name_key text, email text, line1 text, city text, state text, postal text, created_at timestamptz)`, nil},
		{`CREATE TEMP TABLE bench_orders (tenant_id uuid, i int, j bigint, id uuid, contact_id bigint, amount bigint, created_at timestamptz)`, nil},
		{`CREATE TEMP TABLE bench_events (tenant_id uuid, entity_type text, entity_id text, event text, at timestamptz)`, nil},
		// Triggers (the giving summaries' deferred trigger) and
		// foreign-key checks off, as for a bulk load (contacts/seed).
		{`SET session_replication_role = replica`, nil},
	}
	for _, s := range setup {
		if _, err := conn.Exec(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("load: %w\n%s", err, s.sql)
		}
	}
	args := pgx.NamedArgs{
		"features":    []string{features.APIAccess},
		"tenantEvent": audit.EventName("Tenant", audit.Created), "contactEvent": audit.EventName("Contact", audit.Created),
		"orderEvent": audit.EventName("Order", audit.Created),
	}
	for _, s := range loadSteps {
		start := time.Now()
		tag, err := conn.Exec(ctx, s.sql, args)
		if err != nil {
			return fmt.Errorf("load %s: %w", s.name, err)
		}
		logf("%-26s %10d rows  %6.1f s", s.name, tag.RowsAffected(), time.Since(start).Seconds())
	}
	if err := writeEvents(ctx, conn.Conn(), logf); err != nil {
		return err
	}
	start := time.Now()
	for _, q := range []string{`SET session_replication_role = origin`, `DROP TABLE bench_contacts, bench_orders, bench_events`,
		`ANALYZE orders.orders, orders.order_donations, orders.contact_giving, orders.contact_giving_months`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	logf("%-26s %17s  %6.1f s", "analyze orders", "", time.Since(start).Seconds())
	// The giving summaries the deferred trigger would have kept.
	start = time.Now()
	for _, q := range rebuildGiving {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("load: rebuild contact giving: %w\n%s", err, q)
		}
	}
	logf("%-26s %17s  %6.1f s", "rebuild contact giving", "", time.Since(start).Seconds())
	start = time.Now()
	if _, err := conn.Exec(ctx, `DROP TABLE bench_tenants`); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	// VACUUM sets the visibility map, so the list's count is an
	// index-only scan as on a database that autovacuum keeps.
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("load: vacuum: %w", err)
	}
	logf("%-26s %17s  %6.1f s", "vacuum analyze", "", time.Since(start).Seconds())
	return nil
}

// writeEvents copies the staged audit rows into audit.events a day of
// history per statement, in time order. Each statement is a transaction
// of its own, so the rows' transaction ids (the order the event feed and
// the webhook dispatcher read in, docs/events.md) grow with time as they
// would have: in one statement they would all share one, and the feed's
// start (the first row within retention, then the smallest transaction
// id near it) would fall on the tenant's first event two years back.
func writeEvents(ctx context.Context, conn *pgx.Conn, logf func(string, ...any)) error {
	start := time.Now()
	if _, err := conn.Exec(ctx, `CREATE INDEX ON bench_events (at)`); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	var first, last time.Time
	if err := conn.QueryRow(ctx, `SELECT min(at), max(at) FROM bench_events`).Scan(&first, &last); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	day := first.Truncate(24 * time.Hour)
	var rows int64
	for ; !day.After(last); day = day.Add(24 * time.Hour) {
		tag, err := conn.Exec(ctx, `INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, actor, occurred_at)
			SELECT tenant_id, gen_random_uuid(), entity_type, entity_id, $3, event,
				CASE WHEN entity_type = 'Tenant' THEN 'system' ELSE $4 END, at
			FROM bench_events WHERE at >= $1 AND at < $2 ORDER BY at`, day, day.Add(24*time.Hour), audit.Created, benchActor)
		if err != nil {
			return fmt.Errorf("load: audit events of %s: %w", day.Format(time.DateOnly), err)
		}
		rows += tag.RowsAffected()
	}
	logf("%-26s %10d rows  %6.1f s", "audit events", rows, time.Since(start).Seconds())
	return nil
}

// errLoaded is returned when a tenant's counters are already in use: a
// tenant is loaded once, into a database that does not hold it.
var errLoaded = errors.New("tenant already has contacts or orders")

// takeIDs takes each tenant's contact, email and address ids and order
// numbers through the services' own counters (pkg/counter's bulk Take),
// so that the tenants' later API writes continue after the loaded rows.
// The loaded rows are numbered 1…n, so each range must start at 1.
func takeIDs(ctx context.Context, pool *pgxpool.Pool, tenants []Tenant) error {
	ids := contactstore.New(pool).IDs()
	orders := orderstore.New(pool)
	take := func(t Tenant) error {
		for _, c := range []string{contactstore.CounterContact, contactstore.CounterEmail, contactstore.CounterAddress} {
			first, err := ids.Take(ctx, t.ID, c, int64(t.Contacts))
			if err != nil {
				return fmt.Errorf("load: take %s ids of %s: %w", c, t.ID, err)
			}
			if first != 1 {
				return fmt.Errorf("load: tenant %s: %w", t.ID, errLoaded)
			}
		}
		first, err := orders.TakeNumbers(ctx, t.ID, int64(t.Gifts))
		if err != nil {
			return fmt.Errorf("load: take order numbers of %s: %w", t.ID, err)
		}
		if first != 1 {
			return fmt.Errorf("load: tenant %s: %w", t.ID, errLoaded)
		}
		return nil
	}
	// Four at a time: one round trip each, 40,000 of them at 10,000
	// tenants.
	work := make(chan Tenant)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				if err := take(t); err != nil {
					errs <- err
					for range work { // drain: the sender stops at the first error
					}
					return
				}
			}
		}()
	}
	var err error
send:
	for _, t := range tenants {
		select {
		case work <- t:
		case err = <-errs:
			break send
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// loadSummary is what load prints.
type loadSummary struct {
	Tenants     int     `json:"tenants"`
	SmallTenant string  `json:"smallTenant,omitempty"`
	LargeTenant string  `json:"largeTenant,omitempty"`
	Seconds     float64 `json:"seconds"`
}

func runLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	url := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL of a migrated database (a superuser: the load turns triggers off)")
	from := fs.Int("small-from", 0, "first small tenant to load")
	to := fs.Int("small-to", 10, "small tenants below this are loaded")
	smallContacts := fs.Int("small-contacts", 100, "contacts of each small tenant")
	smallGifts := fs.Int("small-gifts", 300, "gifts of each small tenant")
	large := fs.Int("large", 0, "contacts of the large tenant (0: not loaded)")
	largeGifts := fs.Int("large-gifts", 0, "gifts of the large tenant (default three per contact)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *from < 0 || *to < *from || *smallContacts < 1 || *smallGifts < 1 || *large < 0 {
		return errors.New("load: -database-url, and 0 <= -small-from <= -small-to, positive sizes")
	}
	if *largeGifts <= 0 {
		*largeGifts = 3 * *large
	}
	ctx := context.Background()
	pool, err := db.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	start := time.Now()
	tenants := Plan(*from, *to, *smallContacts, *smallGifts, *large, *largeGifts)
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "load: "+format+"\n", a...) }
	if err := Load(ctx, pool, tenants, start, logf); err != nil {
		return err
	}
	s := loadSummary{Tenants: len(tenants), Seconds: time.Since(start).Seconds()}
	if *to > *from {
		s.SmallTenant = SmallTenantID(*from).String()
	}
	if *large > 0 {
		s.LargeTenant = LargeTenantID().String()
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}

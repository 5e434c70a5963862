package store_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts/migrations"
	"github.com/almoner/almoner/services/contacts/store"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(context.Background(), testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// person is a contact with one row of each kind, unique by n.
func person(n int) store.Fields {
	email := fmt.Sprintf("p%d@example.org", n)
	return store.Fields{Type: store.Individual, FirstName: "P", LastName: fmt.Sprint(n), IsActive: true,
		Phones:    []store.Phone{{Number: fmt.Sprintf("555-010-%04d", n), Key: fmt.Sprintf("555010%04d", n), Type: "Mobile", IsPrimary: true}},
		Emails:    []store.Email{{Address: email, Key: email, Type: "Personal", IsPrimary: true}},
		Addresses: []store.Address{{Type: "Home", IsPrimary: true, Line1: fmt.Sprintf("%d Main St", n), PostalCode: "02134", PostalKey: "02134", Country: "US"}},
	}
}

// rowIDs is a contact's id and its rows' ids.
func rowIDs(c store.Contact) [4]int64 {
	return [4]int64{c.ID, c.Phones[0].ID, c.Emails[0].ID, c.Addresses[0].ID}
}

// TestIDsPerTenant: two tenants creating contacts interleaved each number
// theirs 1, 2, 3…, and the phone, email and address rows as well.
func TestIDsPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(newPool(t))
	a, b := uuid.New(), uuid.New()
	want := map[uuid.UUID]int64{a: 0, b: 0}
	for i, tenant := range []uuid.UUID{a, b, b, a, b, a, a} {
		c, err := s.Create(ctx, tenant, person(i), "test")
		if err != nil {
			t.Fatal(err)
		}
		want[tenant]++
		n := want[tenant]
		if got := rowIDs(c); got != [4]int64{n, n, n, n} {
			t.Errorf("create %d: contact, phone, email, address ids %v, want %d for each", i, got, n)
		}
	}
}

// TestIDsNotWasted: a create refused for its relationships, and an update
// whose rows all continue, give their ids back: the next create takes
// them. An update's new row takes the tenant's next row id.
func TestIDsNotWasted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(newPool(t))
	tenant := uuid.New()
	first, err := s.Create(ctx, tenant, person(1), "test")
	if err != nil {
		t.Fatal(err)
	}
	refused := person(2)
	refused.Relationships = []store.Relationship{{RelatedID: 99, Type: store.Spouse}}
	var re *store.RefError
	if _, err := s.Create(ctx, tenant, refused, "test"); !errors.As(err, &re) {
		t.Fatalf("create with an unknown relative: %v", err)
	}
	// Every row kept (sent back as read), one phone added.
	f := first.Fields
	f.Notes = "changed"
	f.Phones = append(slices.Clone(f.Phones), store.Phone{Number: "555-010-9999", Key: "5550109999", Type: "Home"})
	updated, err := s.Update(ctx, tenant, first.ID, f, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{updated.Phones[0].ID, updated.Phones[1].ID, updated.Emails[0].ID, updated.Addresses[0].ID}; !slices.Equal(got, []int64{1, 2, 1, 1}) {
		t.Errorf("row ids after the update %v, want 1, 2 (the new phone), 1, 1", got)
	}
	second, err := s.Create(ctx, tenant, person(3), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowIDs(second); got != [4]int64{2, 3, 2, 2} {
		t.Errorf("next create's ids %v, want contact 2, phone 3, email 2, address 2", got)
	}
}

// TestIDsAcrossReplicas: several stores on one database (replicas), each
// creating a tenant's contacts from many goroutines, never give two
// contacts or rows one id, and every id the tenant ends with is its own.
func TestIDsAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	tenant, other := uuid.New(), uuid.New()
	const replicas, workers, each = 3, 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, replicas*workers)
	for r := range replicas {
		s := store.New(pool)
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					n := (r*workers+w)*each + i
					if _, err := s.Create(ctx, tenant, person(n), "test"); err != nil {
						errs <- err
						return
					}
					if i%5 == 0 {
						// Another tenant's contacts in between.
						if _, err := s.Create(ctx, other, person(n), "test"); err != nil {
							errs <- err
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, table := range []string{"contacts", "contact_phones", "contact_emails", "contact_addresses"} {
		var n, distinct int
		var lo, hi int64
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT id), min(id), max(id) FROM contacts.`+table+` WHERE tenant_id = $1`, tenant).
			Scan(&n, &distinct, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if total := replicas * workers * each; n != total || distinct != total || lo < 1 {
			t.Errorf("%s: %d rows, %d distinct ids from %d, want %d from 1 or more", table, n, distinct, lo, total)
		}
		// Replicas hold blocks of their own, so ids need not be dense, but
		// they never run past what the tenant's counter reserved.
		var last int64
		name := map[string]string{"contacts": store.CounterContact, "contact_phones": store.CounterPhone,
			"contact_emails": store.CounterEmail, "contact_addresses": store.CounterAddress}[table]
		if err := pool.QueryRow(ctx, `SELECT last_value FROM `+store.CounterTable+` WHERE tenant_id = $1 AND name = $2`, tenant, name).Scan(&last); err != nil || hi > last {
			t.Errorf("%s: largest id %d beyond the counter's %d (%v)", table, hi, last, err)
		}
	}
}

// TestIDsMigration: a database of the shared-sequence era (migrations
// before 00003) keeps every id, and each tenant's counters continue after
// its largest id of each kind; a new tenant starts at 1; the shared
// sequences are gone.
func TestIDsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := migrations.Set()
	old := fstest.MapFS{}
	err := fs.WalkDir(all.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") || p >= "00003" {
			return err
		}
		b, err := fs.ReadFile(all.FS, p)
		old[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	url := testdb.New(t, audit.Migrations(), db.Migrations{Schema: all.Schema, FS: old})
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Contacts of two tenants interleaved on the shared sequences, as the
	// previous version wrote them: a gets contacts 1 and 3, b 2, 4 and 5;
	// only a has a phone (id 1), emails go 1 (b), 2 (a).
	a, b := uuid.New(), uuid.New()
	for _, tenant := range []uuid.UUID{a, b, a, b, b} {
		if _, err := pool.Exec(ctx, `INSERT INTO contacts.contacts (tenant_id, contact_type, last_name) VALUES ($1, 'Individual', 'Old')`, tenant); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO contacts.contact_phones (tenant_id, contact_id, position, phone_number, phone_key, phone_type, is_primary) VALUES ('` + a.String() + `', 3, 0, '555', '555', 'Mobile', true)`,
		`INSERT INTO contacts.contact_emails (tenant_id, contact_id, position, email_address, email_key, email_type, is_primary) VALUES ('` + b.String() + `', 5, 0, 'b@x.org', 'b@x.org', 'Work', true)`,
		`INSERT INTO contacts.contact_emails (tenant_id, contact_id, position, email_address, email_key, email_type, is_primary) VALUES ('` + a.String() + `', 1, 0, 'a@x.org', 'a@x.org', 'Work', true)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx, url, audit.Migrations(), all); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, err := pool.Query(ctx, `SELECT id FROM contacts.contacts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !slices.Equal(ids, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("contact ids after the migration %v", ids)
	}
	var identities int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'contacts' AND c.relname LIKE 'contact%' AND a.attidentity <> ''`).Scan(&identities); err != nil || identities != 0 {
		t.Errorf("%d identity columns left in contacts (%v)", identities, err)
	}
	s := store.New(pool)
	for _, c := range []struct {
		tenant uuid.UUID
		want   [4]int64 // contact, phone, email, address
	}{{a, [4]int64{4, 2, 3, 1}}, {b, [4]int64{6, 1, 2, 1}}, {uuid.New(), [4]int64{1, 1, 1, 1}}} {
		made, err := s.Create(ctx, c.tenant, person(int(c.want[0])), "test")
		if err != nil {
			t.Fatal(err)
		}
		if got := rowIDs(made); got != c.want {
			t.Errorf("tenant %s: new contact, phone, email, address ids %v, want %v", c.tenant, got, c.want)
		}
	}
}

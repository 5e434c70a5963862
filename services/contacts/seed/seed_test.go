package seed_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts"
	"github.com/almoner/almoner/services/contacts/seed"
	"github.com/almoner/almoner/services/contacts/store"
)

func TestSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, contacts.Migrations()...))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tenant := uuid.New()
	res, err := seed.Seed(ctx, pool, tenant, 2001)
	if err != nil {
		t.Fatal(err)
	}
	// A tenant's ids start at 1, its own.
	if res.Contacts != 2001 || res.FirstID != 1 || res.LastID != 2001 {
		t.Fatalf("result %+v", res)
	}
	var contactsN, emails, phones, addresses, orphans int
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1),
		(SELECT count(*) FROM contacts.contact_emails WHERE tenant_id = $1),
		(SELECT count(*) FROM contacts.contact_phones WHERE tenant_id = $1),
		(SELECT count(*) FROM contacts.contact_addresses WHERE tenant_id = $1),
		(SELECT count(*) FROM contacts.contact_emails e WHERE tenant_id = $1
		   AND NOT EXISTS (SELECT 1 FROM contacts.contacts c WHERE c.tenant_id = e.tenant_id AND c.id = e.contact_id))`,
		tenant).Scan(&contactsN, &emails, &phones, &addresses, &orphans)
	if err != nil {
		t.Fatal(err)
	}
	if contactsN != 2001 || emails != 2001 || phones != 1001 || addresses != 2001 || orphans != 0 {
		t.Errorf("rows: %d contacts, %d emails, %d phones, %d addresses, %d orphans", contactsN, emails, phones, addresses, orphans)
	}
	// The rows read back as the generator made them.
	c, err := store.New(pool).Get(ctx, tenant, res.FirstID+10)
	if err != nil {
		t.Fatal(err)
	}
	want := seed.Contact(10)
	if c.Emails[0].Address != want.Emails[0].Address || c.Phones[0].Key != want.Phones[0].Key || c.Addresses[0].PostalKey != want.Addresses[0].PostalKey ||
		c.LastName != want.LastName || store.NameKey(c.Fields) != store.NameKey(want) {
		t.Errorf("contact 10 = %+v, want %+v", c, want)
	}
	// A second tenant loads next to the first one, numbered from 1 too.
	if other, err := seed.Seed(ctx, pool, uuid.New(), 10); err != nil || other.FirstID != 1 {
		t.Fatalf("second tenant: %+v, %v", other, err)
	}
	// A contact created through the store after the load continues the
	// tenant's counters: after the loaded contacts and their rows.
	made, err := store.New(pool).Create(ctx, tenant, store.Fields{Type: store.Individual, LastName: "After",
		Emails: []store.Email{{Address: "after@example.org", Key: "after@example.org", Type: "Personal", IsPrimary: true}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if made.ID != 2002 || made.Emails[0].ID != 2002 {
		t.Errorf("contact after the load: id %d, email id %d; want 2002 and 2002", made.ID, made.Emails[0].ID)
	}
}

package contacts

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/scopes"
)

// importRows sends one batch and returns the results by row number.
func (f *fixture) importRows(t *testing.T, importID, policy string, dry bool, rows ...*contactsv1.ContactImportRow) map[int64]*contactsv1.ImportRowResult {
	t.Helper()
	is := &importServer{s: f.svc}
	resp, err := is.ImportContacts(f.as(scopes.ImportsManage), &contactsv1.ImportContactsRequest{
		TenantId: f.tenant, ImportId: importID, Duplicates: policy, DryRun: dry, Rows: rows})
	if err != nil {
		t.Fatalf("ImportContacts: %v", err)
	}
	if len(resp.GetResults()) != len(rows) {
		t.Fatalf("%d results for %d rows", len(resp.GetResults()), len(rows))
	}
	out := map[int64]*contactsv1.ImportRowResult{}
	for i, r := range resp.GetResults() {
		if r.GetRow() != rows[i].GetRow() {
			t.Fatalf("result %d is row %d, want %d", i, r.GetRow(), rows[i].GetRow())
		}
		out[r.GetRow()] = r
	}
	return out
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func entity(t *testing.T, r *contactsv1.ImportRowResult) int64 {
	t.Helper()
	id, err := strconv.ParseInt(r.GetEntityId(), 10, 64)
	if err != nil {
		t.Fatalf("row %d: entity id %q", r.GetRow(), r.GetEntityId())
	}
	return id
}

// TestImportPolicies: the same file against an existing contact under each
// policy, with a bad row and rows of the batch matching each other.
func TestImportPolicies(t *testing.T) {
	rows := func() []*contactsv1.ContactImportRow {
		return []*contactsv1.ContactImportRow{
			// 1 matches Jane by email; 2 is new; 3 repeats 2's phone; 4 is
			// refused; 5 is 2 again by name at the same postal code; 6 is
			// new.
			{Row: 1, FirstName: "Janet", LastName: "Doe", Email: "JANE@example.org", Tags: []string{"gala"}, Phone: "555-000-1111"},
			{Row: 2, ExternalId: "x-2", FirstName: "Sam", LastName: "Stone", Phone: "+1 (555) 222-3333", Line1: "1 Main St", PostalCode: "02134", Country: "US"},
			{Row: 3, FirstName: "Samuel", LastName: "Stone", Phone: "555.222.3333", Email: "sam@example.org"},
			{Row: 4, LastName: "Bad", Email: "not-an-email"},
			{Row: 5, FirstName: "Sam", LastName: "Stone", Line1: "9 Elm St", PostalCode: "02134-9999", Tags: []string{"board"}},
			{Row: 6, ContactType: "Organization", OrganizationName: "Acme Trust", ExternalId: "org-6"},
		}
	}
	cases := []struct {
		policy   string
		outcomes []string
		contacts int // live contacts after, Jane included
	}{
		{"skip", []string{"skipped", "created", "skipped", "failed", "skipped", "created"}, 3},
		{"update", []string{"updated", "created", "updated", "failed", "updated", "created"}, 3},
		{"create", []string{"created", "created", "created", "failed", "created", "created"}, 6},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			f := newFixture(t, nil)
			jane := f.create(t, jane())
			res := f.importRows(t, uuid.NewString(), c.policy, false, rows()...)
			for i, want := range c.outcomes {
				if got := res[int64(i+1)].GetOutcome(); got != want {
					t.Errorf("row %d: %s, want %s (%v)", i+1, got, want, res[int64(i+1)])
				}
			}
			if r := res[4]; r.GetColumn() != "email" || r.GetMessage() == "" || r.GetEntityId() != "" {
				t.Errorf("refused row: %v", r)
			}
			if n := f.count(t, `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1`, f.tenant); n != c.contacts {
				t.Errorf("%d contacts, want %d", n, c.contacts)
			}
			switch c.policy {
			case "skip", "update":
				if entity(t, res[1]) != jane.GetId() {
					t.Errorf("row 1 names %s, want Jane %d", res[1].GetEntityId(), jane.GetId())
				}
				if entity(t, res[3]) != entity(t, res[2]) || entity(t, res[5]) != entity(t, res[2]) {
					t.Errorf("rows 3 and 5 name %s and %s, want row 2's %s", res[3].GetEntityId(), res[5].GetEntityId(), res[2].GetEntityId())
				}
			}
			if c.policy == "update" {
				got := f.get(t, jane.GetId())
				if got.GetFirstName() != "Janet" || got.GetLastName() != "Doe" || !slices.Equal(got.GetTags(), []string{"donor", "gala"}) ||
					len(got.GetPhones()) != 2 || len(got.GetEmails()) != 2 || got.GetExternalId() != "crm-17" {
					t.Errorf("Jane after update: %v", got)
				}
				if v := f.count(t, `SELECT version FROM contacts.contacts WHERE tenant_id = $1 AND id = $2`, f.tenant, jane.GetId()); v != 2 {
					t.Errorf("Jane's version %d, want 2", v)
				}
				sam := f.get(t, entity(t, res[2]))
				if sam.GetFirstName() != "Sam" || len(sam.GetEmails()) != 1 || len(sam.GetPhones()) != 1 ||
					len(sam.GetAddresses()) != 2 || !slices.Equal(sam.GetTags(), []string{"board"}) || sam.GetExternalId() != "x-2" {
					t.Errorf("Sam (rows 2, 3 and 5 folded): %v", sam)
				}
			}
			// Imported contacts carry the import, and no audit rows.
			if n := f.count(t, `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1 AND import_id IS NOT NULL`, f.tenant); n != c.contacts-1 {
				t.Errorf("%d contacts carry the import id, want %d", n, c.contacts-1)
			}
			if n := f.count(t, `SELECT count(*) FROM audit.events WHERE tenant_id = $1`, f.tenant); n != 1 {
				t.Errorf("%d audit rows, want Jane's one", n)
			}
		})
	}
}

// TestImportIdempotentAndDryRun: a batch sent again answers the same and
// writes nothing more; a dry run answers as a real run would and writes
// nothing; the counters continue after the imported ids.
func TestImportIdempotentAndDryRun(t *testing.T) {
	f := newFixture(t, nil)
	batch := []*contactsv1.ContactImportRow{
		{Row: 1, LastName: "One", Email: "one@example.org"},
		{Row: 2, LastName: "Two", Email: "two@example.org", Phone: "555 123 4567", Line1: "2 Main", PostalCode: "10001"},
		{Row: 3, LastName: "Three", Email: "one@example.org"},
	}
	dry := f.importRows(t, uuid.NewString(), "skip", true, batch...)
	if dry[1].GetOutcome() != "created" || dry[2].GetOutcome() != "created" || dry[3].GetOutcome() != "skipped" || dry[1].GetEntityId() != "" {
		t.Errorf("dry run: %v", dry)
	}
	for _, table := range []string{"contacts", "contact_emails", "contact_phones", "contact_addresses", "import_rows", "counters"} {
		if n := f.count(t, `SELECT count(*) FROM contacts.`+table+` WHERE tenant_id = $1`, f.tenant); n != 0 {
			t.Errorf("dry run left %d rows in %s", n, table)
		}
	}
	id := uuid.NewString()
	first := f.importRows(t, id, "skip", false, batch...)
	// Sent again, with a row added: the first three are answered as before.
	again := f.importRows(t, id, "skip", false, append(batch, &contactsv1.ContactImportRow{Row: 4, LastName: "Four"})...)
	for row := int64(1); row <= 3; row++ {
		if first[row].String() != again[row].String() {
			t.Errorf("row %d: %v then %v", row, first[row], again[row])
		}
	}
	if again[4].GetOutcome() != "created" {
		t.Errorf("row 4: %v", again[4])
	}
	if n := f.count(t, `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1`, f.tenant); n != 3 {
		t.Errorf("%d contacts, want 3", n)
	}
	// The API's next contact takes the id after the imported ones.
	next := f.create(t, jane())
	if want := entity(t, again[4]) + 1; next.GetId() != want {
		t.Errorf("next contact %d, want %d", next.GetId(), want)
	}
}

// TestImportRefusals: scope, tenant and request checks.
func TestImportRefusals(t *testing.T) {
	f := newFixture(t, nil)
	is := &importServer{s: f.svc}
	req := &contactsv1.ImportContactsRequest{TenantId: f.tenant, ImportId: uuid.NewString(), Duplicates: "skip",
		Rows: []*contactsv1.ContactImportRow{{Row: 1, LastName: "X"}}}
	if _, err := is.ImportContacts(f.as(scopes.ContactsCreate), req); code(err) != codes.PermissionDenied {
		t.Errorf("without imports:manage: %v", err)
	}
	other := &contactsv1.ImportContactsRequest{TenantId: uuid.NewString(), ImportId: req.ImportId, Duplicates: "skip", Rows: req.Rows}
	if _, err := is.ImportContacts(f.as(scopes.ImportsManage), other); code(err) != codes.NotFound {
		t.Errorf("another tenant: %v", err)
	}
	for _, bad := range []*contactsv1.ImportContactsRequest{
		{TenantId: f.tenant, ImportId: "nope", Duplicates: "skip"},
		{TenantId: f.tenant, ImportId: uuid.NewString(), Duplicates: "merge"},
		{TenantId: f.tenant, ImportId: uuid.NewString(), Duplicates: "skip", Rows: []*contactsv1.ContactImportRow{{Row: 1}, {Row: 1}}},
	} {
		if _, err := is.ImportContacts(f.as(scopes.ImportsManage), bad); code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestResolveContacts: ids and external ids map to live contacts; unknown
// ones are left out.
func TestResolveContacts(t *testing.T) {
	f := newFixture(t, nil)
	in := jane()
	in.ExternalId = ptr("legacy-1")
	c := f.create(t, in)
	is := &importServer{s: f.svc}
	resp, err := is.ResolveContacts(f.as(scopes.ImportsManage), &contactsv1.ResolveContactsRequest{
		TenantId: f.tenant, ContactIds: []int64{c.GetId(), 999}, ExternalIds: []string{"legacy-1", "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetByContactId()) != 1 || resp.GetByContactId()[c.GetId()] != c.GetId() ||
		len(resp.GetByExternalId()) != 1 || resp.GetByExternalId()["legacy-1"] != c.GetId() {
		t.Errorf("resolved %v", resp)
	}
}

// TestImportSameBatchTwiceAtOnce: two replicas sending the same batch at
// once (a lease taken over) write each row once and answer the same.
func TestImportSameBatchTwiceAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	id := uuid.NewString()
	rows := make([]*contactsv1.ContactImportRow, 200)
	for i := range rows {
		rows[i] = seedRow(i)
	}
	var answers [2]*contactsv1.ImportContactsResponse
	var errs [2]error
	var wg sync.WaitGroup
	is := &importServer{s: f.svc}
	for n := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[n], errs[n] = is.ImportContacts(f.as(scopes.ImportsManage), &contactsv1.ImportContactsRequest{
				TenantId: f.tenant, ImportId: id, Duplicates: "skip", Rows: rows})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	for i, a := range answers[0].GetResults() {
		if b := answers[1].GetResults()[i]; a.String() != b.String() {
			t.Errorf("row %d: %v and %v", a.GetRow(), a, b)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM contacts.import_rows WHERE tenant_id = $1`, f.tenant); n != len(rows) {
		t.Errorf("%d recorded rows, want %d", n, len(rows))
	}
	created := 0
	for _, a := range answers[0].GetResults() {
		if a.GetOutcome() == "created" {
			created++
		}
	}
	if n := f.count(t, `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1`, f.tenant); n != created || created == 0 {
		t.Errorf("%d contacts for %d created rows", n, created)
	}
}

package contacts

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/contacts/store"
)

// TestCheckContact: the orders service's question "can this contact take
// an order" — an answer for every id (unknown ids, ids of another tenant
// and non-positive ids are "does not exist", not errors), inactive
// contacts told apart, and the scopes that may ask.
func TestCheckContact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	active := f.create(t, jane()).GetId()
	inactive := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("Ina"), LastName: str("Active")}).GetId()
	if _, err := f.pool.Exec(context.Background(), `UPDATE contacts.contacts SET is_active = false WHERE tenant_id = $1 AND id = $2`,
		uuid.MustParse(f.tenant), inactive); err != nil {
		t.Fatal(err)
	}
	other, foreign := otherTenant(t, f)
	d := &directoryServer{s: f.svc}
	tests := []struct {
		name                string
		id                  int64
		scope               string
		wantExists, wantAct bool
		wantCode            codes.Code
	}{
		{"active contact", active, scopes.OrdersCreate, true, true, codes.OK},
		{"inactive contact", inactive, scopes.OrdersCreate, true, false, codes.OK},
		{"unknown id", active + inactive + foreign + 1000, scopes.OrdersCreate, false, false, codes.OK},
		{"zero id", 0, scopes.OrdersCreate, false, false, codes.OK},
		{"negative id", -active, scopes.OrdersCreate, false, false, codes.OK},
		{"another tenant's contact", foreign, scopes.OrdersCreate, false, false, codes.OK},
		{"contacts:view may ask", active, scopes.ContactsView, true, true, codes.OK},
		{"donations:view may ask", active, scopes.DonationsView, true, true, codes.OK},
		{"contacts:edit alone may not", active, scopes.ContactsEdit, false, false, codes.PermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.CheckContact(f.as(tc.scope), &contactsv1.CheckContactRequest{TenantId: f.tenant, ContactId: tc.id})
			if c := code(err); c != tc.wantCode {
				t.Fatalf("code = %v (%v), want %v", c, err, tc.wantCode)
			}
			if got.GetExists() != tc.wantExists || got.GetIsActive() != tc.wantAct {
				t.Errorf("exists, active = %v, %v; want %v, %v", got.GetExists(), got.GetIsActive(), tc.wantExists, tc.wantAct)
			}
		})
	}
	if _, err := d.CheckContact(f.as(), &contactsv1.CheckContactRequest{TenantId: other.tenant, ContactId: foreign}); code(err) == codes.OK {
		t.Error("a key of one tenant asked about another tenant's contact")
	}
}

// otherTenant adds a second tenant to f's database with a contact whose id
// is not one of f's tenant's.
func otherTenant(t *testing.T, f *fixture) (*fixture, int64) {
	t.Helper()
	other := &fixture{svc: f.svc, cs: f.cs, pool: f.pool, tenant: uuid.NewString()}
	for range 5 {
		id := other.create(t, jane()).GetId()
		var n int
		if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1 AND id = $2`,
			uuid.MustParse(f.tenant), id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return other, id
		}
	}
	t.Fatal("no contact id of the other tenant is free in the first")
	return nil, 0
}

// TestAddContactAddress: an order's address is added to its contact once
// (an equal address — same line 1, city and postal code, letter case and
// spacing aside — is not added again), the contact's version moves and a
// contact.updated audit row is written only when something was added, and
// bad requests, unknown contacts and missing scopes are refused. The cases
// run in order: later ones see what earlier ones added.
func TestAddContactAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	id := f.create(t, jane()).GetId()
	_, foreign := otherTenant(t, f)
	d := &directoryServer{s: f.svc}
	state := func() (version int64, audits int) {
		t.Helper()
		if err := f.pool.QueryRow(ctx, `SELECT version FROM contacts.contacts WHERE tenant_id = $1 AND id = $2`, uuid.MustParse(f.tenant), id).Scan(&version); err != nil {
			t.Fatal(err)
		}
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3 AND event = 'contact.updated'`,
			uuid.MustParse(f.tenant), store.EntityType, store.EntityID(id)).Scan(&audits); err != nil {
			t.Fatal(err)
		}
		return version, audits
	}
	billing := func() *contactsv1.AddContactAddressRequest {
		return &contactsv1.AddContactAddressRequest{TenantId: f.tenant, ContactId: id, AddressType: "Billing",
			Line1: "12 Elm Street", City: "Springfield", StateProvince: "IL", PostalCode: "62701", Country: "US"}
	}
	var firstID int64
	tests := []struct {
		name      string
		scope     string
		req       func() *contactsv1.AddContactAddressRequest
		wantCode  codes.Code
		wantAdded bool
		sameAs    bool   // the answer names the first address added
		field     string // the validation error's property
	}{
		{"new billing address", scopes.OrdersCreate, billing, codes.OK, true, false, ""},
		{"the same address again", scopes.OrdersCreate, billing, codes.OK, false, true, ""},
		{"the same address in other case and spacing", scopes.OrdersCreate, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.Line1, r.City, r.AddressType = "  12 ELM STREET ", "springfield", "Shipping"
			return r
		}, codes.OK, false, true, ""},
		{"another address, type in lower case, by contacts:edit", scopes.ContactsEdit, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.Line1, r.AddressType = "99 Oak Avenue", "shipping"
			return r
		}, codes.OK, true, false, ""},
		{"unknown address type", scopes.OrdersCreate, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.AddressType = "Home"
			return r
		}, codes.InvalidArgument, false, false, "AddressType"},
		{"blank line 1", scopes.OrdersCreate, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.Line1 = "   "
			return r
		}, codes.InvalidArgument, false, false, "Line1"},
		{"unknown contact", scopes.OrdersCreate, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.ContactId = id + foreign + 1000
			return r
		}, codes.NotFound, false, false, ""},
		{"another tenant's contact", scopes.OrdersCreate, func() *contactsv1.AddContactAddressRequest {
			r := billing()
			r.ContactId = foreign
			return r
		}, codes.NotFound, false, false, ""},
		{"contacts:view may not", scopes.ContactsView, billing, codes.PermissionDenied, false, false, ""},
	}
	for _, tc := range tests {
		beforeVersion, beforeAudits := state()
		got, err := d.AddContactAddress(f.as(tc.scope), tc.req())
		if c := code(err); c != tc.wantCode {
			t.Errorf("%s: code = %v (%v), want %v", tc.name, c, err, tc.wantCode)
			continue
		}
		if tc.field != "" {
			if v := violationsOf(t, err); v[tc.field] == "" {
				t.Errorf("%s: violations %v, want one under %s", tc.name, v, tc.field)
			}
		}
		if got.GetAdded() != tc.wantAdded {
			t.Errorf("%s: added = %v, want %v", tc.name, got.GetAdded(), tc.wantAdded)
		}
		if tc.wantCode == codes.OK && firstID == 0 {
			firstID = got.GetAddressId()
		}
		if tc.sameAs && got.GetAddressId() != firstID {
			t.Errorf("%s: address id %d, want the first one's %d", tc.name, got.GetAddressId(), firstID)
		}
		afterVersion, afterAudits := state()
		moved := 0
		if tc.wantAdded {
			moved = 1
		}
		if afterVersion != beforeVersion+int64(moved) || afterAudits != beforeAudits+moved {
			t.Errorf("%s: version %d → %d, contact.updated rows %d → %d; want each to grow by %d",
				tc.name, beforeVersion, afterVersion, beforeAudits, afterAudits, moved)
		}
	}
	var lines []string
	for _, a := range f.get(t, id).GetAddresses() {
		lines = append(lines, a.GetAddressType()+" "+a.GetLine1())
	}
	if want := "Home 1 Main St|Billing 12 Elm Street|Shipping 99 Oak Avenue"; strings.Join(lines, "|") != want {
		t.Errorf("addresses = %q, want %q", strings.Join(lines, "|"), want)
	}
}

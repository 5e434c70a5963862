package contacts

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/testdb"
)

type fixture struct {
	svc    *Service
	cs     *contactServer
	pool   *pgxpool.Pool
	tenant string
}

func newFixture(t *testing.T, giving ordersv1.GivingServiceServer) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, Migrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var dial func(string) (grpc.ClientConnInterface, error)
	if giving != nil {
		lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Both ends as the host builds them: the orders side verifies
		// the assertion the contacts side signs.
		key, err := authctx.ParseKey(authctx.NewKeyHex())
		if err != nil {
			t.Fatal(err)
		}
		discard := slog.New(slog.DiscardHandler)
		srv := grpc.NewServer(grpc.ChainUnaryInterceptor(apperr.UnaryServerInterceptor(discard), key.UnaryServerInterceptor(discard)))
		ordersv1.RegisterGivingServiceServer(srv, giving)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		dial = func(name string) (grpc.ClientConnInterface, error) {
			if name != OrdersService {
				return nil, fmt.Errorf("no %s", name)
			}
			return dialClosedAtEnd(t, lis.Addr().String(), key)
		}
	}
	svc := New(pool, Config{}, nil, dial)
	return &fixture{svc: svc, cs: &contactServer{s: svc}, pool: pool, tenant: uuid.NewString()}
}

// as returns a call context of a key of the fixture's tenant holding scopes
// (every scope when none are given).
func (f *fixture) as(sc ...string) context.Context {
	if len(sc) == 0 {
		sc = scopes.All()
	}
	p := authctx.Principal{TenantID: f.tenant, KeyID: uuid.NewString(), KeyPrefix: "ak_test_fixture", Scopes: sc}
	return authctx.NewIncomingContext(context.Background(), p)
}

func (f *fixture) create(t *testing.T, in *contactsv1.ContactInput) *contactsv1.Contact {
	t.Helper()
	resp, err := f.cs.CreateContact(f.as(), &contactsv1.CreateContactRequest{TenantId: f.tenant, Contact: in})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return resp.GetContact()
}

func (f *fixture) update(t *testing.T, id int64, in *contactsv1.ContactInput) *contactsv1.Contact {
	t.Helper()
	resp, err := f.cs.UpdateContact(f.as(), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: id, Contact: in})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return resp.GetContact()
}

func (f *fixture) get(t *testing.T, id int64) *contactsv1.Contact {
	t.Helper()
	resp, err := f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: id})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return resp.GetContact()
}

func (f *fixture) auditRows(t *testing.T, id int64) []*contactsv1.AuditLogEntry {
	t.Helper()
	resp, err := f.cs.ListContactAuditLogs(f.as(), &contactsv1.ListContactAuditLogsRequest{TenantId: f.tenant, ContactId: id, PageSize: ptr[int32](100)})
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return resp.GetItems()
}

func ptr[T any](v T) *T { return &v }

func code(err error) codes.Code { return apperr.ToStatus(err).Code() }

func jane() *contactsv1.ContactInput {
	return &contactsv1.ContactInput{
		ContactType: "Individual", FirstName: str("Jane"), LastName: str("Donor"),
		Emails:                   []*contactsv1.Email{{EmailAddress: "jane@example.org", EmailType: "Personal"}, {EmailAddress: "jane@work.example", EmailType: "Work"}},
		Phones:                   []*contactsv1.Phone{{PhoneNumber: "+1 (555) 123-4567", PhoneType: "Mobile"}},
		Addresses:                []*contactsv1.Address{{AddressType: "Home", Line1: "1 Main St", City: str("Boston"), StateProvince: str("MA"), PostalCode: str("02134"), Country: str("US")}},
		Tags:                     []string{"donor"},
		CommunicationPreferences: &contactsv1.CommunicationPreferences{DoNotCall: true},
		ExternalId:               str("crm-17"),
	}
}

func TestCreateGetUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.create(t, jane())
	if c.GetId() <= 0 || c.GetContactType() != "Individual" || !c.GetIsActive() || c.GetEmails()[0].GetId() <= 0 ||
		!c.GetEmails()[0].GetIsPrimary() || c.GetEmails()[1].GetIsPrimary() || !c.GetCommunicationPreferences().GetDoNotCall() {
		t.Fatalf("created %v", c)
	}
	if got := f.get(t, c.GetId()); got.GetEmails()[1].GetEmailAddress() != "jane@work.example" || got.GetExternalId() != "crm-17" {
		t.Errorf("get %v", got)
	}

	// The same body again changes nothing: no new version, no audit row.
	same := f.update(t, c.GetId(), jane())
	if !same.GetUpdatedAt().AsTime().Equal(c.GetUpdatedAt().AsTime()) || len(f.auditRows(t, c.GetId())) != 1 {
		t.Errorf("a no-op update wrote: %v", same)
	}

	// Replace: drop the work email (by omission), keep the personal one
	// (matched by address, no id sent), change the phone's type by id.
	in := jane()
	in.Emails = in.Emails[:1]
	in.Phones[0].Id = c.GetPhones()[0].GetId()
	in.Phones[0].PhoneType = "Home"
	in.LastName = str("Giver")
	up := f.update(t, c.GetId(), in)
	if up.GetEmails()[0].GetId() != c.GetEmails()[0].GetId() || len(up.GetEmails()) != 1 || up.GetPhones()[0].GetId() != c.GetPhones()[0].GetId() ||
		up.GetPhones()[0].GetPhoneType() != "Home" || up.GetLastName() != "Giver" || !up.GetUpdatedAt().AsTime().After(c.GetUpdatedAt().AsTime()) {
		t.Errorf("updated %v", up)
	}
	rows := f.auditRows(t, c.GetId())
	if len(rows) != 2 || rows[0].GetAction() != "Updated" || rows[1].GetAction() != "Created" || rows[1].GetChanges() != nil {
		t.Fatalf("audit rows %v", rows)
	}
	changes := rows[0].GetChanges().AsMap()
	if len(changes) != 3 || changes["lastName"] == nil || changes["emails"] == nil || changes["phones"] == nil {
		t.Errorf("changes %v", changes)
	}
	if ln := changes["lastName"].(map[string]any); ln["old"] != "Donor" || ln["new"] != "Giver" {
		t.Errorf("lastName change %v", ln)
	}
	if rows[0].GetUserId() != "api-key:ak_test_fixture" || rows[0].GetEvent() != "contact.updated" || rows[0].GetEntityId() != fmt.Sprint(c.GetId()) {
		t.Errorf("row %v", rows[0])
	}

	// A row id of another contact is refused under its property path.
	other := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Other"), Phones: []*contactsv1.Phone{{PhoneNumber: "555-000-1111"}}})
	in.Phones[0].Id = other.GetPhones()[0].GetId()
	_, err := f.cs.UpdateContact(f.as(), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: in})
	if v := violationsOf(t, err); !strings.Contains(v["Phones[0].Id"], "does not belong") {
		t.Errorf("foreign row id: %v", v)
	}

	// Not found, in this tenant or at all.
	for _, id := range []int64{other.GetId() + 1000, c.GetId()} {
		f2 := &fixture{svc: f.svc, cs: f.cs, tenant: uuid.NewString()}
		if id == c.GetId() {
			_, err = f2.cs.GetContact(f2.as(), &contactsv1.GetContactRequest{TenantId: f2.tenant, ContactId: id})
		} else {
			_, err = f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: id})
		}
		if code(err) != codes.NotFound {
			t.Errorf("get %d: %v", id, err)
		}
	}
	if _, err := f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: 0}); !strings.Contains(violationsOf(t, err)["ContactId"], "greater than 0") {
		t.Errorf("id 0: %v", err)
	}
}

func TestIfMatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.create(t, jane())
	withIfMatch := func(v string) context.Context {
		return metadata.NewIncomingContext(f.as(), metadata.Pairs("if-match", v))
	}
	in := jane()
	in.FirstName = str("Janet")
	if _, err := f.cs.UpdateContact(withIfMatch(`"7"`), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: in}); code(err) != codes.Aborted {
		t.Errorf("stale If-Match: %v", err)
	}
	if _, err := f.cs.UpdateContact(withIfMatch(`nonsense`), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: in}); code(err) != codes.InvalidArgument {
		t.Errorf("bad If-Match: %v", err)
	}
	if _, err := f.cs.UpdateContact(withIfMatch(`"1"`), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: in}); err != nil {
		t.Errorf("current If-Match: %v", err)
	}
	// Version 1 is gone now.
	in.FirstName = str("Jay")
	if _, err := f.cs.UpdateContact(withIfMatch(`"1"`), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: in}); code(err) != codes.Aborted {
		t.Errorf("replayed If-Match: %v", err)
	}
}

func TestRelationships(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	org := f.create(t, &contactsv1.ContactInput{ContactType: "Organization", OrganizationName: str("Acme Trust")})
	spouse := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("John"), LastName: str("Donor")})
	in := jane()
	in.Relationships = []*contactsv1.ContactRelationshipInput{
		{RelatedContactId: org.GetId(), RelationshipType: "employer"},
		{RelatedContactId: spouse.GetId(), RelationshipType: "Spouse"},
	}
	c := f.create(t, in)
	if r := c.GetRelationships(); len(r) != 2 || r[0].GetRelatedContactId() != org.GetId() || r[0].GetRelationshipType() != "Employer" ||
		r[0].GetRelatedContactName() != "Acme Trust" || r[1].GetRelationshipType() != "Spouse" || r[1].GetRelatedContactName() != "John Donor" {
		t.Fatalf("relationships %v", r)
	}
	// Each side reads it from its own point of view, and its audit feed
	// and version show the change.
	o := f.get(t, org.GetId())
	if r := o.GetRelationships(); len(r) != 1 || r[0].GetRelatedContactId() != c.GetId() || r[0].GetRelationshipType() != "Employee" || r[0].GetRelatedContactName() != "Jane Donor" {
		t.Errorf("organization side %v", r)
	}
	if rows := f.auditRows(t, org.GetId()); len(rows) != 2 || rows[0].GetChanges().AsMap()["relationships"] == nil {
		t.Errorf("organization audit %v", rows)
	}
	if s := f.get(t, spouse.GetId()); len(s.GetRelationships()) != 1 || s.GetRelationships()[0].GetRelationshipType() != "Spouse" {
		t.Errorf("spouse side %v", s.GetRelationships())
	}

	// The organization's replace removes the employment: the body holds
	// every relationship the contact is part of.
	f.update(t, org.GetId(), &contactsv1.ContactInput{ContactType: "Organization", OrganizationName: str("Acme Trust")})
	if r := f.get(t, c.GetId()).GetRelationships(); len(r) != 1 || r[0].GetRelationshipType() != "Spouse" {
		t.Errorf("after the organization's replace: %v", r)
	}

	// Type rules and unknown contacts, under the row's path.
	bad := jane()
	bad.Relationships = []*contactsv1.ContactRelationshipInput{{RelatedContactId: spouse.GetId(), RelationshipType: "Employer"}}
	_, err := f.cs.CreateContact(f.as(), &contactsv1.CreateContactRequest{TenantId: f.tenant, Contact: bad})
	if v := violationsOf(t, err); !strings.Contains(v["Relationships[0].RelatedContactId"], "must be an organization") {
		t.Errorf("employer individual: %v", v)
	}
	bad.Relationships = []*contactsv1.ContactRelationshipInput{{RelatedContactId: 987654321, RelationshipType: "Spouse"}}
	_, err = f.cs.CreateContact(f.as(), &contactsv1.CreateContactRequest{TenantId: f.tenant, Contact: bad})
	if v := violationsOf(t, err); !strings.Contains(v["Relationships[0].RelatedContactId"], "not found") {
		t.Errorf("unknown contact: %v", v)
	}
}

func listIDs(resp *contactsv1.ListContactsResponse) []int64 {
	out := make([]int64, len(resp.GetItems()))
	for i, c := range resp.GetItems() {
		out[i] = c.GetId()
	}
	return out
}

func TestListContacts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var all []int64
	for i := range 25 {
		in := &contactsv1.ContactInput{ContactType: "Individual", FirstName: str(fmt.Sprintf("Person%02d", i)), LastName: str("Smith"),
			Emails: []*contactsv1.Email{{EmailAddress: fmt.Sprintf("p%02d@example.org", i)}}}
		if i%5 == 0 {
			in.Tags = []string{"Major-Donor"}
		}
		if i == 7 {
			in = &contactsv1.ContactInput{ContactType: "Organization", OrganizationName: str("Smithsonian Friends"), ExternalId: str("ext-7")}
		}
		if i == 9 {
			in.IsActive = ptr(false)
		}
		all = append(all, f.create(t, in).GetId())
	}
	list := func(req *contactsv1.ListContactsRequest) *contactsv1.ListContactsResponse {
		t.Helper()
		req.TenantId = f.tenant
		resp, err := f.cs.ListContacts(f.as(scopes.ContactsView), req)
		if err != nil {
			t.Fatalf("list %v: %v", req, err)
		}
		return resp
	}
	// Pages by token cover everything once, in id order.
	var got []int64
	req := &contactsv1.ListContactsRequest{PageSize: ptr[int32](10)}
	for page := int32(1); ; page++ {
		resp := list(req)
		if resp.GetPage() != page || resp.GetPageSize() != 10 || resp.GetTotalCount() != 25 {
			t.Fatalf("page %d: %d/%d/%d", page, resp.GetPage(), resp.GetPageSize(), resp.GetTotalCount())
		}
		got = append(got, listIDs(resp)...)
		if resp.GetNextPageToken() == "" {
			break
		}
		req = &contactsv1.ListContactsRequest{PageSize: ptr[int32](10), PageToken: resp.GetNextPageToken()}
	}
	if fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("token pages %v, want %v", got, all)
	}
	// The total is counted when a listing starts and travels in its token:
	// a contact created meanwhile shows in the next fresh listing's count.
	first := list(&contactsv1.ListContactsRequest{PageSize: ptr[int32](10)})
	extra := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Late")})
	if next := list(&contactsv1.ListContactsRequest{PageSize: ptr[int32](10), PageToken: first.GetNextPageToken()}); next.GetTotalCount() != 25 {
		t.Errorf("token page total %d, want the listing's 25", next.GetTotalCount())
	}
	if fresh := list(&contactsv1.ListContactsRequest{}); fresh.GetTotalCount() != 26 {
		t.Errorf("fresh total %d", fresh.GetTotalCount())
	}
	if _, err := f.svc.store.Pool().Exec(context.Background(), `UPDATE contacts.contacts SET tenant_id = $1 WHERE id = $2`, uuid.New(), extra.GetId()); err != nil {
		t.Fatal(err)
	}
	// Page numbers reach the same rows.
	if p3 := list(&contactsv1.ListContactsRequest{Page: ptr[int32](3), PageSize: ptr[int32](10)}); fmt.Sprint(listIDs(p3)) != fmt.Sprint(all[20:]) || p3.GetNextPageToken() != "" {
		t.Errorf("page 3 = %v", listIDs(p3))
	}
	// Filters.
	for _, c := range []struct {
		req  *contactsv1.ListContactsRequest
		want []int64
	}{
		{&contactsv1.ListContactsRequest{Search: "person0"}, append(append([]int64{}, all[:7]...), all[8:10]...)},
		{&contactsv1.ListContactsRequest{Search: "SMITHSON"}, all[7:8]},
		{&contactsv1.ListContactsRequest{Search: "p1"}, []int64{all[10], all[11], all[12], all[13], all[14], all[15], all[16], all[17], all[18], all[19]}},
		{&contactsv1.ListContactsRequest{Search: "100%_"}, nil},
		{&contactsv1.ListContactsRequest{Tag: "major-donor"}, []int64{all[0], all[5], all[10], all[15], all[20]}},
		{&contactsv1.ListContactsRequest{ContactType: "organization"}, all[7:8]},
		{&contactsv1.ListContactsRequest{ExternalId: "ext-7"}, all[7:8]},
		{&contactsv1.ListContactsRequest{IsActive: ptr(false)}, all[9:10]},
		{&contactsv1.ListContactsRequest{UpdatedSince: timestamppb.New(time.Now().Add(time.Hour))}, nil},
	} {
		resp := list(c.req)
		if fmt.Sprint(listIDs(resp)) != fmt.Sprint(nonNilIDs(c.want)) || resp.GetTotalCount() != int64(len(c.want)) {
			t.Errorf("%v: %v (total %d), want %v", c.req, listIDs(resp), resp.GetTotalCount(), c.want)
		}
	}
	// A token is bound to its filters and page size.
	smiths := list(&contactsv1.ListContactsRequest{PageSize: ptr[int32](5), Search: "smith"})
	for _, req := range []*contactsv1.ListContactsRequest{
		{PageSize: ptr[int32](5), Search: "jones", PageToken: smiths.GetNextPageToken()},
		{PageSize: ptr[int32](6), Search: "smith", PageToken: smiths.GetNextPageToken()},
		{PageToken: "garbage!"},
	} {
		req.TenantId = f.tenant
		_, err := f.cs.ListContacts(f.as(), req)
		if _, ok := violationsOf(t, err)["PageToken"]; !ok {
			t.Errorf("%v: %v", req, err)
		}
	}
	_, err := f.cs.ListContacts(f.as(), &contactsv1.ListContactsRequest{TenantId: f.tenant, ContactType: "Robot", Page: ptr[int32](0)})
	if v := violationsOf(t, err); v["ContactType"] == "" || v["Page"] == "" {
		t.Errorf("bad filters: %v", v)
	}
}

func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func TestCheckDuplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	janeC := f.create(t, jane())
	namesake := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("Jane"), LastName: str("Donnor"),
		Addresses: []*contactsv1.Address{{Line1: "9 Elm St", PostalCode: str("02134-9999"), Country: str("US")}}})
	farAway := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("Jane"), LastName: str("Donor"),
		Addresses: []*contactsv1.Address{{Line1: "9 Elm St", PostalCode: str("90210"), Country: str("US")}}})
	check := func(cand *contactsv1.ContactInput, exclude int64) []*contactsv1.DuplicateMatch {
		t.Helper()
		resp, err := f.cs.CheckDuplicateContacts(f.as(scopes.ContactsView), &contactsv1.CheckDuplicateContactsRequest{TenantId: f.tenant, Candidate: cand, ExcludeContactId: exclude})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		return resp.GetMatches()
	}
	m := check(&contactsv1.ContactInput{
		FirstName: str("Jane"), LastName: str("Donor"),
		Emails:    []*contactsv1.Email{{EmailAddress: "JANE@example.org"}},
		Phones:    []*contactsv1.Phone{{PhoneNumber: "555.123.4567"}},
		Addresses: []*contactsv1.Address{{Line1: "x", PostalCode: str("02134")}},
	}, 0)
	if len(m) != 2 {
		t.Fatalf("matches %v (the namesake at %d is at another postal code)", m, farAway.GetId())
	}
	if m[0].GetContact().GetId() != janeC.GetId() || m[0].GetScore() != 0.99 || strings.Join(m[0].GetMatchedFields(), ",") != "Email,Phone,Name,PostalCode" {
		t.Errorf("best match %v", m[0])
	}
	if m[1].GetContact().GetId() != namesake.GetId() || m[1].GetScore() >= m[0].GetScore() || strings.Join(m[1].GetMatchedFields(), ",") != "Name,PostalCode" {
		t.Errorf("second match %v", m[1])
	}
	// Excluding the contact itself, as when checking an existing contact.
	if m := check(&contactsv1.ContactInput{Emails: []*contactsv1.Email{{EmailAddress: "jane@example.org"}}}, janeC.GetId()); len(m) != 0 {
		t.Errorf("excluded contact matched: %v", m)
	}
	_, err := f.cs.CheckDuplicateContacts(f.as(), &contactsv1.CheckDuplicateContactsRequest{TenantId: f.tenant, Candidate: &contactsv1.ContactInput{FirstName: str("Jane")}})
	if v := violationsOf(t, err); !strings.HasPrefix(v[""], "Give an email") {
		t.Errorf("nothing to compare: %v", v)
	}
}

type fakeGiving struct {
	ordersv1.UnimplementedGivingServiceServer
	fail bool
}

func (g fakeGiving) GetContactGivingSummary(ctx context.Context, req *ordersv1.GetContactGivingSummaryRequest) (*ordersv1.GetContactGivingSummaryResponse, error) {
	if _, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.ContactsView); err != nil {
		return nil, err
	}
	if g.fail {
		return nil, apperr.Unavailable("down", nil)
	}
	d := func(s string) *typev1.Decimal { return &typev1.Decimal{Value: s} }
	at := timestamppb.New(time.Date(2026, 4, 12, 0, 0, 0, 0, time.UTC))
	return &ordersv1.GetContactGivingSummaryResponse{
		Totals: []*ordersv1.CurrencyGivingTotal{{Currency: "USD", LifetimeTotal: d("150.00"), GiftCount: 2,
			FirstGift: &ordersv1.Gift{Date: at, Amount: d("50.00")}, LastGift: &ordersv1.Gift{Date: at, Amount: d("100.00")},
			LargestGift: &ordersv1.Gift{Date: at, Amount: d("100.00")}, ThisYear: d("150.00"), LastYear: d("0.00")}},
		RecentOrders:    []*ordersv1.RecentOrder{{Id: "o1", OrderNumber: 1001, Date: at, Total: d("100.00"), Currency: "USD", Status: "Completed"}},
		ActiveSchedules: []*ordersv1.ActiveSchedule{{Id: "s1", Amount: d("10.00"), Currency: "USD", Frequency: "Monthly", NextChargeDate: "2026-05-01"}},
	}, nil
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakeGiving{})
	org := f.create(t, &contactsv1.ContactInput{ContactType: "Organization", OrganizationName: str("Acme Trust")})
	in := jane()
	in.Relationships = []*contactsv1.ContactRelationshipInput{{RelatedContactId: org.GetId(), RelationshipType: "Employer"}}
	c := f.create(t, in)
	resp, err := f.cs.GetContactDashboard(f.as(scopes.ContactsView), &contactsv1.GetContactDashboardRequest{TenantId: f.tenant, ContactId: c.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDashboard()
	if d.GetContact().GetId() != c.GetId() || len(d.GetGivingTotals()) != 1 || d.GetGivingTotals()[0].GetLifetimeTotal().GetValue() != "150.00" ||
		d.GetGivingTotals()[0].GetGiftCount() != 2 || d.GetRecentOrders()[0].GetOrderNumber() != 1001 || d.GetRecurringSchedules()[0].GetFrequency() != "Monthly" ||
		strings.Join(d.GetTags(), ",") != "donor" || len(d.GetOrganizations()) != 1 || d.GetOrganizations()[0].GetRelatedContactName() != "Acme Trust" {
		t.Errorf("dashboard %v", d)
	}
	// Orders down: the dashboard fails rather than show invented zeros.
	down := newFixture(t, fakeGiving{fail: true})
	c2 := down.create(t, jane())
	if _, err := down.cs.GetContactDashboard(down.as(), &contactsv1.GetContactDashboardRequest{TenantId: down.tenant, ContactId: c2.GetId()}); code(err) != codes.Unavailable {
		t.Errorf("orders down: %v", err)
	}
	// No orders service configured at all.
	none := newFixture(t, nil)
	c3 := none.create(t, jane())
	if _, err := none.cs.GetContactDashboard(none.as(), &contactsv1.GetContactDashboardRequest{TenantId: none.tenant, ContactId: c3.GetId()}); code(err) != codes.Unavailable {
		t.Errorf("orders missing: %v", err)
	}
}

func TestAuditLogPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.create(t, jane())
	for i := range 4 {
		in := jane()
		in.Notes = str(fmt.Sprintf("note %d", i))
		f.update(t, c.GetId(), in)
	}
	var seen []int64
	req := &contactsv1.ListContactAuditLogsRequest{TenantId: f.tenant, ContactId: c.GetId(), PageSize: ptr[int32](2)}
	for {
		resp, err := f.cs.ListContactAuditLogs(f.as(scopes.AuditLogsView), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetTotalCount() != 5 {
			t.Fatalf("total %d", resp.GetTotalCount())
		}
		for _, it := range resp.GetItems() {
			seen = append(seen, it.GetId())
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if len(seen) != 5 {
		t.Fatalf("rows %v", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Errorf("not newest first: %v", seen)
		}
	}
	if _, err := f.cs.ListContactAuditLogs(f.as(), &contactsv1.ListContactAuditLogsRequest{TenantId: f.tenant, ContactId: c.GetId() + 99}); code(err) != codes.NotFound {
		t.Errorf("unknown contact: %v", err)
	}
	if _, err := f.cs.ListContactAuditLogs(f.as(scopes.ContactsView), &contactsv1.ListContactAuditLogsRequest{TenantId: f.tenant, ContactId: c.GetId()}); code(err) != codes.PermissionDenied {
		t.Errorf("without audit-logs:view: %v", err)
	}
}

func TestContactForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	fs := &formServer{s: f.svc}
	from := func(ip string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(ratelimit.MetadataKey, ip))
	}
	good := &contactsv1.CreateContactFormSubmissionRequest{Name: "Ann", Email: "ann@example.org", Message: "Hello\nthere", Organization: str("Acme")}
	_, err := fs.CreateContactFormSubmission(from("198.51.100.1"), &contactsv1.CreateContactFormSubmissionRequest{Email: "nope"})
	if v := violationsOf(t, err); v["Name"] == "" || v["Email"] == "" || v["Message"] == "" {
		t.Errorf("invalid form: %v", v)
	}
	for i := 2; i <= 5; i++ {
		if _, err := fs.CreateContactFormSubmission(from("198.51.100.1"), good); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if _, err := fs.CreateContactFormSubmission(from("198.51.100.1"), good); code(err) != codes.ResourceExhausted {
		t.Errorf("sixth post: %v", err)
	}
	if _, err := fs.CreateContactFormSubmission(from("198.51.100.2"), good); err != nil {
		t.Errorf("another address: %v", err)
	}
	admin := &formAdminServer{s: f.svc}
	resp, err := admin.ListContactFormSubmissions(context.Background(), &contactsv1.ListContactFormSubmissionsRequest{PageSize: 3})
	if err != nil || len(resp.GetSubmissions()) != 3 || resp.GetSubmissions()[0].GetClientIp() != "198.51.100.2" || resp.GetSubmissions()[1].GetMessage() != "Hello\nthere" {
		t.Fatalf("admin list %v, %v", resp, err)
	}
	next, err := admin.ListContactFormSubmissions(context.Background(), &contactsv1.ListContactFormSubmissionsRequest{Before: resp.GetSubmissions()[2].GetId()})
	if err != nil || len(next.GetSubmissions()) != 2 {
		t.Errorf("next page %v, %v", next, err)
	}
	var events []string
	rows, err := f.pool.Query(context.Background(), `SELECT event FROM audit.events WHERE tenant_id = $1`, uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		_ = rows.Scan(&e)
		events = append(events, e)
	}
	if len(events) != 5 || events[0] != "contact_form_submission.created" {
		t.Errorf("audit events %v", events)
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.create(t, jane())
	none := f.as(scopes.DonationsView)
	calls := map[string]func() error{
		"list": func() error {
			_, err := f.cs.ListContacts(none, &contactsv1.ListContactsRequest{TenantId: f.tenant})
			return err
		},
		"get": func() error {
			_, err := f.cs.GetContact(none, &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: c.GetId()})
			return err
		},
		"create": func() error {
			_, err := f.cs.CreateContact(f.as(scopes.ContactsView, scopes.ContactsEdit), &contactsv1.CreateContactRequest{TenantId: f.tenant, Contact: jane()})
			return err
		},
		"update": func() error {
			_, err := f.cs.UpdateContact(f.as(scopes.ContactsView, scopes.ContactsCreate), &contactsv1.UpdateContactRequest{TenantId: f.tenant, ContactId: c.GetId(), Contact: jane()})
			return err
		},
		"duplicates": func() error {
			_, err := f.cs.CheckDuplicateContacts(none, &contactsv1.CheckDuplicateContactsRequest{TenantId: f.tenant, Candidate: jane()})
			return err
		},
		"dashboard": func() error {
			_, err := f.cs.GetContactDashboard(none, &contactsv1.GetContactDashboardRequest{TenantId: f.tenant, ContactId: c.GetId()})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); code(err) != codes.PermissionDenied {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := f.cs.GetContact(context.Background(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: c.GetId()}); code(err) != codes.Unauthenticated {
		t.Errorf("no principal: %v", err)
	}
}

// dialClosedAtEnd dials addr as the host does and closes the connection
// when the test ends, as Host.Stop closes the ones it dialled: the
// service does not own the connections it is handed.
func dialClosedAtEnd(t *testing.T, addr string, key *authctx.Key) (grpc.ClientConnInterface, error) {
	conn, err := grpc.NewClient(addr, append(key.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, nil
}

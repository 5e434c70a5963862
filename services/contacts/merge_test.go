package contacts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/scopes"
)

// fakeMover is the orders service's ContactMoveService: it records the
// calls and fails the first failures of them. ships is the inventory
// service's ShipmentContactMoveService.
type fakeMover struct {
	ordersv1.UnimplementedContactMoveServiceServer
	mu       sync.Mutex
	calls    []*ordersv1.MoveContactRecordsRequest
	actors   []string
	failures int
	ships    fakeShipMover
}

// fakeShipMover records the calls and fails the first failures of them.
type fakeShipMover struct {
	inventoryv1.UnimplementedShipmentContactMoveServiceServer
	mu       sync.Mutex
	calls    []*inventoryv1.MoveContactShipmentsRequest
	failures int
}

func (m *fakeShipMover) MoveContactShipments(ctx context.Context, req *inventoryv1.MoveContactShipmentsRequest) (*inventoryv1.MoveContactShipmentsResponse, error) {
	if _, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsMerge); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures > 0 {
		m.failures--
		return nil, apperr.Unavailable("inventory down", nil)
	}
	m.calls = append(m.calls, req)
	return &inventoryv1.MoveContactShipmentsResponse{}, nil
}

func (m *fakeMover) MoveContactRecords(ctx context.Context, req *ordersv1.MoveContactRecordsRequest) (*ordersv1.MoveContactRecordsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsMerge)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures > 0 {
		m.failures--
		return nil, apperr.Unavailable("orders down", nil)
	}
	m.calls = append(m.calls, req)
	m.actors = append(m.actors, p.Actor())
	return &ordersv1.MoveContactRecordsResponse{}, nil
}

// newMergeFixture is a fixture whose orders and inventory services are
// mover, reached over gRPC with signed principals as the host wires it.
func newMergeFixture(t *testing.T, mover *fakeMover) *fixture {
	t.Helper()
	f := newFixture(t, nil)
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(apperr.UnaryServerInterceptor(discard), key.UnaryServerInterceptor(discard)))
	ordersv1.RegisterContactMoveServiceServer(srv, mover)
	inventoryv1.RegisterShipmentContactMoveServiceServer(srv, &mover.ships)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	svc := New(f.pool, Config{}, nil, func(name string) (grpc.ClientConnInterface, error) {
		if name != OrdersService && name != InventoryService {
			return nil, fmt.Errorf("no %s", name)
		}
		return dialClosedAtEnd(t, lis.Addr().String(), key)
	})
	f.svc, f.cs = svc, &contactServer{s: svc}
	return f
}

func (f *fixture) merge(ctx context.Context, survivor, duplicate int64, choices map[string]string) (*contactsv1.Contact, error) {
	resp, err := f.cs.MergeContacts(ctx, &contactsv1.MergeContactsRequest{TenantId: f.tenant, ContactId: survivor, DuplicateId: duplicate, FieldChoices: choices})
	return resp.GetContact(), err
}

// mergedInto is the mergedInto member of the problem document err becomes.
func mergedInto(err error) string {
	d := problem.Renderer{}.FromStatus(apperr.ToStatus(err))
	return string(d.Extensions["mergedInto"])
}

func emailsOf(c *contactsv1.Contact) (all []string, primary string) {
	for _, e := range c.GetEmails() {
		all = append(all, e.GetEmailAddress())
		if e.GetIsPrimary() {
			primary = e.GetEmailAddress()
		}
	}
	return all, primary
}

// TestMerge: the duplicate's rows, tags and relationships move, the field
// choices apply, the duplicate is a tombstone every read answers as such,
// and both have their audit rows.
func TestMerge(t *testing.T) {
	mover := &fakeMover{}
	f := newMergeFixture(t, mover)
	survivor := f.create(t, jane())
	spouse := f.create(t, &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("Sam"), LastName: str("Donor")})
	dup := f.create(t, &contactsv1.ContactInput{
		ContactType: "Individual", FirstName: str("Janet"), LastName: str("Donor"), ExternalId: str("legacy-9"),
		Emails: []*contactsv1.Email{{EmailAddress: "janet@home.example", IsPrimary: true}, {EmailAddress: "JANE@example.org"}},
		Phones: []*contactsv1.Phone{{PhoneNumber: "555 987 6543"}}, Tags: []string{"gala", "DONOR"},
		CommunicationPreferences: &contactsv1.CommunicationPreferences{DoNotEmail: true},
		Relationships:            []*contactsv1.ContactRelationshipInput{{RelatedContactId: spouse.GetId(), RelationshipType: "Spouse"}},
	})
	got, err := f.merge(f.as(scopes.ContactsMerge), survivor.GetId(), dup.GetId(), map[string]string{"firstName": "duplicate", "email": "duplicate"})
	if err != nil {
		t.Fatal(err)
	}
	emails, primary := emailsOf(got)
	if got.GetId() != survivor.GetId() || got.GetFirstName() != "Janet" || got.GetExternalId() != "crm-17" ||
		!slices.Equal(emails, []string{"jane@example.org", "jane@work.example", "janet@home.example"}) || primary != "janet@home.example" ||
		len(got.GetPhones()) != 2 || !slices.Equal(got.GetTags(), []string{"donor", "gala"}) ||
		!got.GetCommunicationPreferences().GetDoNotEmail() || !got.GetCommunicationPreferences().GetDoNotCall() ||
		len(got.GetRelationships()) != 1 || got.GetRelationships()[0].GetRelatedContactId() != spouse.GetId() {
		t.Errorf("survivor after the merge: %v", got)
	}
	if len(mover.calls) != 1 || mover.calls[0].GetDuplicateId() != dup.GetId() || mover.calls[0].GetSurvivorId() != survivor.GetId() ||
		mover.actors[0] != "api-key:ak_test_fixture" {
		t.Errorf("orders moves: %v by %v", mover.calls, mover.actors)
	}
	if sc := mover.ships.calls; len(sc) != 1 || sc[0].GetDuplicateId() != dup.GetId() || sc[0].GetSurvivorId() != survivor.GetId() || sc[0].GetTenantId() != f.tenant {
		t.Errorf("shipment moves: %v", sc)
	}
	// The tombstone: 404 naming the survivor, everywhere.
	want := fmt.Sprint(survivor.GetId())
	_, err = f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: dup.GetId()})
	if code(err) != codes.NotFound || mergedInto(err) != want {
		t.Errorf("GET of the tombstone: %v (mergedInto %q)", err, mergedInto(err))
	}
	if _, err := f.cs.GetContactDashboard(f.as(), &contactsv1.GetContactDashboardRequest{TenantId: f.tenant, ContactId: dup.GetId()}); mergedInto(err) != want {
		t.Errorf("dashboard of the tombstone: %v", err)
	}
	list, err := f.cs.ListContacts(f.as(), &contactsv1.ListContactsRequest{TenantId: f.tenant})
	if err != nil || list.GetTotalCount() != 2 || slices.Contains(listIDs(list), dup.GetId()) {
		t.Errorf("list after the merge: %v %v", listIDs(list), err)
	}
	dups, err := f.cs.CheckDuplicateContacts(f.as(), &contactsv1.CheckDuplicateContactsRequest{TenantId: f.tenant,
		Candidate: &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Donor"), Emails: []*contactsv1.Email{{EmailAddress: "janet@home.example"}}}})
	if err != nil || len(dups.GetMatches()) != 1 || dups.GetMatches()[0].GetContact().GetId() != survivor.GetId() {
		t.Errorf("check-duplicates after the merge: %v %v", dups, err)
	}
	if f.get(t, spouse.GetId()).GetRelationships()[0].GetRelatedContactId() != survivor.GetId() {
		t.Errorf("the spouse's relationship does not point at the survivor")
	}
	resolved, err := (&importServer{s: f.svc}).ResolveContacts(f.as(), &contactsv1.ResolveContactsRequest{
		TenantId: f.tenant, ContactIds: []int64{dup.GetId()}, ExternalIds: []string{"legacy-9"}})
	if err != nil || resolved.GetByContactId()[dup.GetId()] != survivor.GetId() || resolved.GetByExternalId()["legacy-9"] != survivor.GetId() {
		t.Errorf("resolve the tombstone: %v %v", resolved, err)
	}
	checkMergeAudit(t, f, survivor.GetId(), dup.GetId(), spouse.GetId())
	// Sent again, the same merge answers the survivor; nothing moves twice.
	if again, err := f.merge(f.as(scopes.ContactsMerge), survivor.GetId(), dup.GetId(), nil); err != nil || again.GetFirstName() != "Janet" ||
		len(mover.calls) != 1 || len(mover.ships.calls) != 1 {
		t.Errorf("repeated merge: %v %v, %d moves, %d shipment moves", again, err, len(mover.calls), len(mover.ships.calls))
	}
}

func checkMergeAudit(t *testing.T, f *fixture, survivor, dup, spouse int64) {
	t.Helper()
	rows := f.auditRows(t, dup)
	if len(rows) == 0 || rows[0].GetAction() != "Deleted" {
		t.Fatalf("duplicate's audit rows: %v", rows)
	}
	changes, _ := json.Marshal(rows[0].GetChanges().AsMap())
	if string(changes) != fmt.Sprintf(`{"mergedInto":{"new":%d,"old":null}}`, survivor) {
		t.Errorf("duplicate's Deleted changes: %s", changes)
	}
	rows = f.auditRows(t, survivor)
	if rows[0].GetAction() != "Updated" || rows[0].GetChanges().AsMap()["emails"] == nil {
		t.Errorf("survivor's audit row: %v", rows[0])
	}
	if rows := f.auditRows(t, spouse); rows[0].GetAction() != "Updated" || rows[0].GetChanges().AsMap()["relationships"] == nil {
		t.Errorf("spouse's audit row: %v", rows[0])
	}
}

// TestMergeRefusals: itself, unknown, another tenant's, a tombstone, a
// scope, bad choices and mixed types.
func TestMergeRefusals(t *testing.T) {
	f := newMergeFixture(t, &fakeMover{})
	a, b := f.create(t, jane()), f.create(t, jane())
	org := f.create(t, &contactsv1.ContactInput{ContactType: "Organization", OrganizationName: str("Acme")})
	_, otherID := otherTenant(t, f)
	merger := f.as(scopes.ContactsMerge)
	cases := []struct {
		name      string
		ctx       context.Context
		survivor  int64
		duplicate int64
		choices   map[string]string
		want      codes.Code
	}{
		{"itself", merger, a.GetId(), a.GetId(), nil, codes.InvalidArgument},
		{"unknown duplicate", merger, a.GetId(), 99999, nil, codes.NotFound},
		{"unknown survivor", merger, 99999, a.GetId(), nil, codes.NotFound},
		{"another tenant's contact", merger, a.GetId(), otherID, nil, codes.NotFound},
		{"without contacts:merge", f.as(scopes.ContactsEdit), a.GetId(), b.GetId(), nil, codes.PermissionDenied},
		{"unknown property", merger, a.GetId(), b.GetId(), map[string]string{"tags": "duplicate"}, codes.InvalidArgument},
		{"bad side", merger, a.GetId(), b.GetId(), map[string]string{"email": "both"}, codes.InvalidArgument},
		{"types", merger, a.GetId(), org.GetId(), nil, codes.InvalidArgument},
	}
	for _, c := range cases {
		if _, err := f.merge(c.ctx, c.survivor, c.duplicate, c.choices); code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	if _, err := f.merge(merger, a.GetId(), b.GetId(), nil); err != nil {
		t.Fatal(err)
	}
	// Into the tombstone, or the tombstone into a third: 404 naming a.
	for _, pair := range [][2]int64{{b.GetId(), org.GetId()}, {org.GetId(), b.GetId()}} {
		_, err := f.merge(merger, pair[0], pair[1], nil)
		if code(err) != codes.NotFound || mergedInto(err) != fmt.Sprint(a.GetId()) {
			t.Errorf("merge %v: %v (mergedInto %q)", pair, err, mergedInto(err))
		}
	}
}

// TestMergeRecovery: the orders service fails after the merge is recorded;
// the merge stays pending and invisible, and the recovery loop finishes it
// with the asking key as the actor.
func TestMergeRecovery(t *testing.T) {
	mover := &fakeMover{failures: 1}
	f := newMergeFixture(t, mover)
	a, b := f.create(t, jane()), f.create(t, jane())
	if _, err := f.merge(f.as(scopes.ContactsMerge), a.GetId(), b.GetId(), nil); code(err) != codes.Unavailable {
		t.Fatalf("merge with orders down: %v", err)
	}
	f.get(t, b.GetId()) // still a live contact
	// Another merge of either contact waits for this one.
	c := f.create(t, jane())
	if _, err := f.merge(f.as(scopes.ContactsMerge), c.GetId(), a.GetId(), nil); code(err) != codes.Aborted {
		t.Errorf("merge of a contact with a pending merge: %v", err)
	}
	f.svc.cfg.MergeRecoveryAge = time.Nanosecond
	if err := f.svc.recoverMerges(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: b.GetId()}); mergedInto(err) != fmt.Sprint(a.GetId()) {
		t.Errorf("after recovery: %v", err)
	}
	if len(mover.calls) != 1 || mover.actors[0] != "api-key:ak_test_fixture" {
		t.Errorf("moves %v by %v", mover.calls, mover.actors)
	}
	if rows := f.auditRows(t, b.GetId()); rows[0].GetUserId() != "api-key:ak_test_fixture" {
		t.Errorf("recovered merge's audit actor: %v", rows[0])
	}
	if n := f.count(t, `SELECT count(*) FROM contacts.merges WHERE tenant_id = $1 AND state = 'pending'`, f.tenant); n != 0 {
		t.Errorf("%d merges still pending", n)
	}
}

// TestMergeResumesAfterShipments: the inventory service fails after the
// orders moved; the merge stays pending, and sending the request again
// repeats the orders step (harmless: it is idempotent) and finishes.
func TestMergeResumesAfterShipments(t *testing.T) {
	mover := &fakeMover{ships: fakeShipMover{failures: 1}}
	f := newMergeFixture(t, mover)
	a, b := f.create(t, jane()), f.create(t, jane())
	if _, err := f.merge(f.as(scopes.ContactsMerge), a.GetId(), b.GetId(), nil); code(err) != codes.Unavailable {
		t.Fatalf("merge with inventory down: %v", err)
	}
	f.get(t, b.GetId()) // still a live contact
	if n := f.count(t, `SELECT count(*) FROM contacts.merges WHERE tenant_id = $1 AND state = 'pending'`, f.tenant); n != 1 {
		t.Fatalf("%d merges pending, want 1", n)
	}
	got, err := f.merge(f.as(scopes.ContactsMerge), a.GetId(), b.GetId(), nil)
	if err != nil || got.GetId() != a.GetId() {
		t.Fatalf("merge sent again: %v, %v", got, err)
	}
	if len(mover.calls) != 2 || len(mover.ships.calls) != 1 || mover.ships.calls[0].GetDuplicateId() != b.GetId() {
		t.Errorf("orders moves %d (want 2), shipment moves %v", len(mover.calls), mover.ships.calls)
	}
	if _, err := f.cs.GetContact(f.as(), &contactsv1.GetContactRequest{TenantId: f.tenant, ContactId: b.GetId()}); mergedInto(err) != fmt.Sprint(a.GetId()) {
		t.Errorf("after the resumed merge: %v", err)
	}
}

// TestMergeRace: two merges of the same pair in opposite directions at
// once: one wins, the other is refused, and no contact is lost.
func TestMergeRace(t *testing.T) {
	f := newMergeFixture(t, &fakeMover{})
	a, b := f.create(t, jane()), f.create(t, jane())
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, pair := range [][2]int64{{a.GetId(), b.GetId()}, {b.GetId(), a.GetId()}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.merge(f.as(scopes.ContactsMerge), pair[0], pair[1], nil)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch code(err) {
		case codes.OK:
			ok++
		case codes.Aborted, codes.NotFound:
		default:
			t.Errorf("racing merge: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d merges won: %v", ok, errs)
	}
	if n := f.count(t, `SELECT count(*) FROM contacts.contacts WHERE tenant_id = $1 AND merged_into IS NULL`, f.tenant); n != 1 {
		t.Errorf("%d live contacts, want 1", n)
	}
}

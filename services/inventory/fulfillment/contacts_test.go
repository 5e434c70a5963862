package fulfillment_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/fulfillment"
	"github.com/almoner/almoner/services/inventory/store"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// TestMoveContactShipments: a merge's move takes the duplicate's
// shipments, and only those of its tenant, to the survivor with a
// shipment.updated row each; a repeat moves and writes nothing.
func TestMoveContactShipments(t *testing.T) {
	e := newEnv(t, 100)
	other := e.inTenant(t, uuid.New())
	const dup, surv, bystander = 41, 42, 43
	moved := []uuid.UUID{e.orderFor(t, 1, 1, dup), e.orderFor(t, 2, 1, dup)}
	kept := e.orderFor(t, 3, 1, bystander)
	foreign := other.orderFor(t, 1, 1, dup)

	srv := fulfillment.New(e.ships).ContactMover()
	ctx := authctx.NewIncomingContext(context.Background(), authctx.System(e.tenant.String(), "api-key:ak_test_merge", scopes.ContactsMerge))
	req := &inventoryv1.MoveContactShipmentsRequest{TenantId: e.tenant.String(), DuplicateId: dup, SurvivorId: surv}
	for i, want := range []int64{2, 0} {
		resp, err := srv.MoveContactShipments(ctx, req)
		if err != nil || resp.GetShipments() != want {
			t.Fatalf("call %d: moved %d, %v; want %d", i+1, resp.GetShipments(), err, want)
		}
	}
	for _, id := range moved {
		if got := contactOf(t, e, id); got != surv {
			t.Errorf("moved shipment %s names contact %d, want %d", id, got, surv)
		}
		ev, err := audit.ListEntity(context.Background(), e.core.Pool(), audit.EntityQuery{TenantID: e.tenant.String(),
			EntityType: shipstore.EntityType, EntityID: id.String(), Limit: 10})
		if err != nil || len(ev) == 0 {
			t.Fatalf("audit rows of %s: %d, %v", id, len(ev), err)
		}
		var ch map[string]audit.Change
		if err := json.Unmarshal(ev[0].Changes, &ch); err != nil || ev[0].Event != "shipment.updated" || len(ch) != 1 ||
			ch["contactId"].Old != float64(dup) || ch["contactId"].New != float64(surv) || ev[0].Actor != "api-key:ak_test_merge" {
			t.Errorf("move's audit row of %s: %s %s by %s (%v)", id, ev[0].Event, ev[0].Changes, ev[0].Actor, err)
		}
		if moves := contactMoves(t, ev); moves != 1 {
			t.Errorf("shipment %s has %d contactId rows, want 1 (the repeat wrote one)", id, moves)
		}
	}
	if got := contactOf(t, e, kept); got != bystander {
		t.Errorf("another contact's shipment names %d", got)
	}
	if got := contactOf(t, other, foreign); got != dup {
		t.Errorf("another tenant's shipment names %d, want %d", got, dup)
	}
	moveContactRefusals(t, srv, e)
}

// TestShipmentAfterMergeIsTheSurvivors: checkout hands an order's shipment
// over just after the order commits, with the contact it was recorded
// for; one that arrives after the merge's move is created for the
// survivor, also when the survivor is merged in turn (the earlier merge is
// re-pointed), and only in the merge's tenant. Creations racing a move
// leave no shipment on the duplicate.
func TestShipmentAfterMergeIsTheSurvivors(t *testing.T) {
	e := newEnv(t, 100)
	other := e.inTenant(t, uuid.New())
	const dup, surv, third, bystander = 51, 52, 53, 54
	srv := fulfillment.New(e.ships).ContactMover()
	ctx := authctx.NewIncomingContext(context.Background(), authctx.System(e.tenant.String(), "api-key:ak_test_merge", scopes.ContactsMerge))
	move := func(from, to int64) {
		t.Helper()
		if _, err := srv.MoveContactShipments(ctx, &inventoryv1.MoveContactShipmentsRequest{TenantId: e.tenant.String(), DuplicateId: from, SurvivorId: to}); err != nil {
			t.Fatal(err)
		}
	}
	move(dup, surv)
	late := e.orderFor(t, 1, 1, dup)
	if got := contactOf(t, e, late); got != surv {
		t.Errorf("a shipment handed over after the merge names %d, want the survivor %d", got, surv)
	}
	move(surv, third)
	if got := contactOf(t, e, late); got != third {
		t.Errorf("after the survivor's own merge the shipment names %d, want %d", got, third)
	}
	if got := contactOf(t, e, e.orderFor(t, 2, 1, dup)); got != third {
		t.Errorf("a late shipment for the first duplicate names %d, want %d (one hop)", got, third)
	}
	if got := contactOf(t, e, e.orderFor(t, 3, 1, bystander)); got != bystander {
		t.Errorf("a bystander's shipment names %d", got)
	}
	if got := contactOf(t, other, other.orderFor(t, 1, 1, dup)); got != dup {
		t.Errorf("another tenant's shipment names %d, want %d", got, dup)
	}

	// Creations for a fresh duplicate while it is merged.
	const racer, winner = 61, 62
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5 {
				e.orderFor(t, int64(100+g*10+i), 1, racer)
			}
		})
	}
	wg.Go(func() { move(racer, winner) })
	wg.Wait()
	for c, want := range map[int64]int64{racer: 0, winner: 20} {
		_, n, err := e.ships.List(context.Background(), e.tenant, shipstore.Filter{ContactID: &c}, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("contact %d has %d shipments, want %d", c, n, want)
		}
	}
}

// moveContactRefusals: bad ids and a principal without contacts:merge are
// refused before anything moves.
func moveContactRefusals(t *testing.T, srv inventoryv1.ShipmentContactMoveServiceServer, e env) {
	t.Helper()
	for _, tc := range []struct {
		name      string
		scope     string
		dup, surv int64
		want      codes.Code
	}{
		{"into itself", scopes.ContactsMerge, 42, 42, codes.InvalidArgument},
		{"no duplicate", scopes.ContactsMerge, 0, 42, codes.InvalidArgument},
		{"no survivor", scopes.ContactsMerge, 42, -1, codes.InvalidArgument},
		{"without contacts:merge", scopes.ShipmentsManage, 42, 41, codes.PermissionDenied},
	} {
		ctx := authctx.NewIncomingContext(context.Background(), authctx.System(e.tenant.String(), "test", tc.scope))
		_, err := srv.MoveContactShipments(ctx, &inventoryv1.MoveContactShipmentsRequest{TenantId: e.tenant.String(), DuplicateId: tc.dup, SurvivorId: tc.surv})
		if got := apperr.ToStatus(err).Code(); got != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// inTenant is e's store with a stocked item in another tenant.
func (e env) inTenant(t *testing.T, tenant uuid.UUID) env {
	t.Helper()
	o := env{core: e.core, ships: e.ships, tenant: tenant}
	var err error
	o.item, err = e.core.CreateItem(context.Background(), store.Item{TenantID: tenant, SKU: "TOTE-1", Name: "Tote bag", PriceMinor: 2500,
		Currency: "USD", FairMarketValueMinor: 1000, TrackStock: true, StockOnHand: 10, Active: true}, actor)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func contactOf(t *testing.T, e env, id uuid.UUID) int64 {
	t.Helper()
	sh, err := e.ships.Get(context.Background(), e.tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return sh.ContactID
}

// contactMoves counts the rows naming a contactId change.
func contactMoves(t *testing.T, ev []audit.Event) int {
	t.Helper()
	n := 0
	for _, e := range ev {
		var ch map[string]audit.Change
		if err := json.Unmarshal(e.Changes, &ch); err != nil {
			t.Fatal(err)
		}
		if _, ok := ch["contactId"]; ok {
			n++
		}
	}
	return n
}

package orders

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// moveFixture is a tenant with a fund, its services and a principal that
// may create orders and merge contacts.
type moveFixture struct {
	pool   *pgxpool.Pool
	tenant uuid.UUID
	fund   uuid.UUID
	orders *orderServer
	moves  *contactMoveServer
	ctx    context.Context
}

func newMoveFixture(t *testing.T) *moveFixture {
	t.Helper()
	ctx := context.Background()
	pool := testPool(t)
	f := &moveFixture{pool: pool, tenant: uuid.Must(uuid.NewV7()), fund: uuid.Must(uuid.NewV7())}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, f.tenant, f.fund); err != nil {
		t.Fatal(err)
	}
	svc := New(pool, Config{Contacts: benchContacts{}}, nil)
	f.orders, f.moves = &orderServer{s: svc}, &contactMoveServer{s: svc}
	p := authctx.Principal{TenantID: f.tenant.String(), KeyID: "k", KeyPrefix: "ak_test_merge", Currency: "USD",
		Scopes: []string{scopes.OrdersCreate, scopes.ContactsMerge}}
	f.ctx = authctx.NewIncomingContext(ctx, p)
	return f
}

// order records a 10.00 cash gift for contact, with a monthly schedule
// when withSchedule, and answers the contact it was recorded under.
func (f *moveFixture) order(t *testing.T, contact int64, withSchedule bool) int64 {
	t.Helper()
	req := &ordersv1.CreateOrderRequest{TenantId: f.tenant.String(), ContactId: contact,
		Donations: []*ordersv1.DonationInput{{FundId: f.fund.String(), Amount: &typev1.Decimal{Value: "10.00"}}},
		Payments:  []*ordersv1.PaymentInput{{PaymentMethod: "Cash", Amount: &typev1.Decimal{Value: "10.00"}}}}
	if withSchedule {
		req.RecurringDonations = []*ordersv1.RecurringDonationInput{{FundId: f.fund.String(), Amount: &typev1.Decimal{Value: "10.00"},
			Frequency: "monthly", PaymentMethod: "Cash"}}
	}
	resp, err := f.orders.CreateOrder(f.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetOrder().GetContactId()
}

func (f *moveFixture) move(dup, surv int64) (*ordersv1.MoveContactRecordsResponse, error) {
	return f.moves.MoveContactRecords(f.ctx, &ordersv1.MoveContactRecordsRequest{TenantId: f.tenant.String(), DuplicateId: dup, SurvivorId: surv})
}

// held counts the contact's orders, schedules and saved methods.
func (f *moveFixture) held(t *testing.T, contact int64) [3]int64 {
	t.Helper()
	var n [3]int64
	err := f.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND contact_id = $2),
		(SELECT count(*) FROM orders.recurring_donations WHERE tenant_id = $1 AND contact_id = $2),
		(SELECT count(*) FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = $2)`, f.tenant, contact).Scan(&n[0], &n[1], &n[2])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *moveFixture) saveMethod(t *testing.T, contact int64, id string, isDefault bool) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, is_default)
		VALUES ($1, $2, $3, 'test', 'test', $5, 'card', $4)`, f.tenant, id, contact, isDefault, fmt.Sprint("cus_", contact)); err != nil {
		t.Fatal(err)
	}
}

// TestMoveContactRecords: the duplicate's orders, schedules and saved
// methods move to the survivor with an audit row each (the survivor keeps
// its own default method); a repeat moves nothing; an order created for
// the duplicate afterwards is recorded under the survivor.
func TestMoveContactRecords(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	const dup, surv = 7, 3
	f.order(t, dup, true)
	f.order(t, dup, false)
	f.order(t, surv, false)
	f.saveMethod(t, dup, "pm_dup_1", true)
	f.saveMethod(t, dup, "pm_dup_2", false)
	f.saveMethod(t, surv, "pm_surv", true)

	resp, err := f.move(dup, surv)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetOrders() != 2 || resp.GetSchedules() != 1 || resp.GetPaymentMethods() != 2 {
		t.Errorf("moved %v, want 2 orders, 1 schedule, 2 payment methods", resp)
	}
	if got := f.held(t, dup); got != [3]int64{} {
		t.Errorf("duplicate still holds %v", got)
	}
	if got, want := f.held(t, surv), [3]int64{3, 1, 3}; got != want {
		t.Errorf("survivor holds %v, want %v", got, want)
	}
	var defaults, audits int
	if err := f.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = $2 AND is_default),
		(SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND action = 'Updated' AND changes->'contactId'->>'new' = $2::text)`,
		f.tenant, surv).Scan(&defaults, &audits); err != nil {
		t.Fatal(err)
	}
	if defaults != 1 || audits != 5 {
		t.Errorf("survivor has %d default methods (want 1), %d audit rows of moves (want 5)", defaults, audits)
	}

	again, err := f.move(dup, surv)
	if err != nil {
		t.Fatal(err)
	}
	if again.GetOrders() != 0 || again.GetSchedules() != 0 || again.GetPaymentMethods() != 0 {
		t.Errorf("repeat moved %v, want nothing", again)
	}
	if got := f.order(t, dup, true); got != surv {
		t.Errorf("an order for the merged duplicate answered contact %d, want %d", got, surv)
	}
	if got, want := f.held(t, surv), [3]int64{4, 2, 3}; got != want {
		t.Errorf("survivor holds %v after a later order for the duplicate, want %v", got, want)
	}
}

// TestMoveContactRecordsRefusals: a bad pair is a 400, a missing scope a
// 403, a duplicate merged elsewhere or a survivor merged away a rule
// violation (400 with the code Contact.Merged).
func TestMoveContactRecordsRefusals(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	if _, err := f.move(1, 2); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		dup, surv int64
		code      codes.Code
	}{
		{"itself", 5, 5, codes.InvalidArgument},
		{"zero", 0, 5, codes.InvalidArgument},
		{"duplicate merged elsewhere", 1, 3, codes.InvalidArgument},
		{"survivor merged away", 4, 1, codes.InvalidArgument},
	} {
		_, err := f.move(c.dup, c.surv)
		if got := apperr.ToStatus(err).Code(); got != c.code {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.code)
		}
	}
	noScope := authctx.NewIncomingContext(context.Background(), authctx.Principal{TenantID: f.tenant.String(), KeyID: "k", KeyPrefix: "ak_x",
		Scopes: []string{scopes.OrdersCreate}})
	_, err := f.moves.MoveContactRecords(noScope, &ordersv1.MoveContactRecordsRequest{TenantId: f.tenant.String(), DuplicateId: 8, SurvivorId: 9})
	if got := status.Code(apperr.ToStatus(err).Err()); got != codes.PermissionDenied {
		t.Errorf("without contacts:merge: %v, want PermissionDenied", got)
	}
}

// TestMoveContactRecordsChain: A merged into B, then B into C: A's and
// B's records end under C, and an order for A is recorded under C.
func TestMoveContactRecordsChain(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	const a, b, c = 11, 12, 13
	f.order(t, a, false)
	f.order(t, b, true)
	if _, err := f.move(a, b); err != nil {
		t.Fatal(err)
	}
	resp, err := f.move(b, c)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetOrders() != 2 || resp.GetSchedules() != 1 {
		t.Errorf("second merge moved %v, want 2 orders and 1 schedule", resp)
	}
	if got := f.order(t, a, false); got != c {
		t.Errorf("an order for A answered contact %d, want C (%d)", got, c)
	}
	if got, want := f.held(t, c), [3]int64{3, 1, 0}; got != want {
		t.Errorf("C holds %v, want %v", got, want)
	}
	if _, err := f.move(a, b); err == nil {
		t.Error("merging A into B again (A now points at C) was accepted")
	}
}

// TestMoveContactRecordsRacingOrder: an order for the duplicate that
// arrives while the merge holds the duplicate's lock waits for it and is
// recorded under the survivor; an order in flight when the merge starts
// makes the merge wait, and is moved by it.
func TestMoveContactRecordsRacingOrder(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	ctx := context.Background()
	const dup, surv = 21, 22 // dup < surv: the merge locks dup first

	// An order racing a merge: a third transaction holds the survivor's
	// lock shared (an order of the survivor in flight), so the merge,
	// holding the duplicate's lock, waits; the order for the duplicate
	// then waits for the merge.
	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	if _, err := holder.Exec(ctx, `SELECT orders.contact_for_write($1, $2)`, f.tenant, surv); err != nil {
		t.Fatal(err)
	}
	merged := make(chan error, 1)
	go func() { _, err := f.move(dup, surv); merged <- err }()
	f.waitForLockWaiters(t, 1)
	ordered := make(chan int64, 1)
	go func() {
		resp, err := f.orders.CreateOrder(f.ctx, &ordersv1.CreateOrderRequest{TenantId: f.tenant.String(), ContactId: dup,
			Donations: []*ordersv1.DonationInput{{FundId: f.fund.String(), Amount: &typev1.Decimal{Value: "5.00"}}},
			Payments:  []*ordersv1.PaymentInput{{PaymentMethod: "Cash", Amount: &typev1.Decimal{Value: "5.00"}}}})
		if err != nil {
			t.Error(err)
		}
		ordered <- resp.GetOrder().GetContactId()
	}()
	f.waitForLockWaiters(t, 2)
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
	if got := <-ordered; got != surv {
		t.Errorf("the racing order answered contact %d, want the survivor %d", got, surv)
	}
	if got := f.held(t, dup); got[0] != 0 {
		t.Errorf("the duplicate holds %d orders after the race, want 0", got[0])
	}

	// An order in flight when a merge starts: the merge waits for it and
	// moves it.
	const dup2, surv2 = 31, 32
	inflight, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inflight.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	batch := uuid.Must(uuid.NewV7())
	if _, err := inflight.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'Race')`, f.tenant, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := inflight.Exec(ctx, `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor,
			item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id)
		VALUES ($1, gen_random_uuid(), 999999, orders.contact_for_write($1, $2), 'Completed', 'USD', 100, 0, 100, 100, true, false, $3)`,
		f.tenant, dup2, batch); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := f.move(dup2, surv2); merged <- err }()
	f.waitForLockWaiters(t, 1)
	if err := inflight.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
	if got := f.held(t, surv2); got[0] != 1 {
		t.Errorf("the survivor holds %d orders, want the in-flight one moved to it", got[0])
	}
}

// waitForLockWaiters waits until n sessions wait for an advisory lock.
func (f *moveFixture) waitForLockWaiters(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if f.lockWaiters(t) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal(errors.New("timed out waiting for sessions to wait for advisory locks"))
}

// lockWaiters counts the sessions waiting for an advisory lock.
func (f *moveFixture) lockWaiters(t *testing.T) int {
	t.Helper()
	var waiting int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	return waiting
}

// TestMoveContactRecordsRepeatRacingOrder: a repeat of a completed merge
// takes no lock, so an order for the duplicate in flight (holding the
// duplicate's lock, about to take the survivor's) neither waits for it nor
// deadlocks with it. The survivor's id is the lower: the order in which a
// repeat that locked deadlocked.
func TestMoveContactRecordsRepeatRacingOrder(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	ctx := context.Background()
	const dup, surv = 42, 41
	f.order(t, dup, false)
	if _, err := f.move(dup, surv); err != nil {
		t.Fatal(err)
	}

	// An order for the duplicate, stopped after contact_for_write's first
	// lock.
	order, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer order.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	if _, err := order.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(orders.contact_lock_key($1, $2))`, f.tenant, dup); err != nil {
		t.Fatal(err)
	}
	repeated := make(chan error, 1)
	go func() {
		resp, err := f.move(dup, surv)
		if err == nil && resp.GetOrders()+resp.GetSchedules()+resp.GetPaymentMethods() != 0 {
			err = fmt.Errorf("the repeat moved %v, want nothing", resp)
		}
		repeated <- err
	}()
	returned, repeatErr := false, error(nil)
	for deadline := time.Now().Add(30 * time.Second); !returned && f.lockWaiters(t) == 0; {
		select {
		case repeatErr = <-repeated:
			returned = true
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the repeat neither returned nor waited for a lock")
		}
	}
	if !returned {
		t.Error("the repeat of a completed merge waits for the lock of an order in flight")
	}

	// The order goes on: the duplicate resolves to the survivor, whose
	// lock it takes.
	var got int64
	if err := order.QueryRow(ctx, `SELECT orders.contact_for_write($1, $2)`, f.tenant, dup).Scan(&got); err != nil {
		t.Fatalf("the order: %v", err)
	}
	if got != surv {
		t.Errorf("the order resolved contact %d, want the survivor %d", got, surv)
	}
	if err := order.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !returned {
		repeatErr = <-repeated
	}
	if repeatErr != nil {
		t.Errorf("the repeat: %v", repeatErr)
	}
}

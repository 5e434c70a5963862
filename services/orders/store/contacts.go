package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Contacts and merges. A merge of duplicate contacts (ContactMoveService)
// moves the duplicate's rows to the survivor and records a redirect in
// orders.contact_redirects. Writers and merges meet on advisory locks, all
// taken here and in the migration's SQL functions (00011):
//
//   - every write of one contact's row (an order, a schedule, a saved
//     method, a detach, a processor customer) names its contact through
//     contactForWrite, the SQL function orders.contact_for_write: it holds
//     the contact's lock shared until the writer's transaction ends and
//     answers the survivor when the contact was merged;
//   - a bulk writer (a gift import's batch) holds the tenant's bulk lock
//     exclusively (LockContactsBulk) and maps redirects itself;
//   - a merge holds the bulk lock shared and both contacts' locks
//     exclusively (MoveContactRecords).
//
// So a write racing a merge either commits first (and the merge, waiting
// for its lock, moves the row) or waits for the merge and lands on the
// survivor.

// contactForWrite is the SQL of the contact a row is written under, for a
// tenant and a contact given as the statement's parameters (e.g.
// contactForWrite("$1", "$4")). Every INSERT of a row with a contact id
// uses it.
func contactForWrite(tenantParam, contactParam string) string {
	return "orders.contact_for_write(" + tenantParam + ", " + contactParam + ")"
}

// ContactSurvivor is the contact a write for contactID lands on: the
// survivor it was merged into, else the contact itself. Read ahead of an
// order, it lets the order check and answer with the contact it is
// recorded under; contactForWrite still settles a merge that commits in
// between.
func (s *Store) ContactSurvivor(ctx context.Context, tenantID uuid.UUID, contactID int64) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT survivor_id FROM orders.contact_redirects
		WHERE tenant_id = $1 AND duplicate_id = $2), $2)`, tenantID, contactID).Scan(&id); err != nil {
		return 0, fmt.Errorf("orders: read the survivor of contact %d: %w", contactID, err)
	}
	return id, nil
}

// LockContactsBulk takes the tenant's bulk contact lock for tx: merges of
// the tenant wait until tx ends, and redirects read after it are final for
// tx.
func LockContactsBulk(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(orders.contact_bulk_lock_key($1))`, tenantID); err != nil {
		return fmt.Errorf("lock the tenant's contacts: %w", err)
	}
	return nil
}

// Errors of MoveContactRecords.
var (
	// ErrAlreadyMerged: the duplicate was merged into another contact.
	ErrAlreadyMerged = errors.New("duplicate already merged into another contact")
	// ErrSurvivorMerged: the survivor was itself merged away.
	ErrSurvivorMerged = errors.New("survivor merged into another contact")
)

// MoveCounts counts what a merge moved.
type MoveCounts struct {
	Orders, Schedules, PaymentMethods int64
}

// MoveContactRecords merges duplicate into survivor in one transaction:
// it records the redirect (pointing contacts merged into the duplicate
// earlier at the survivor too), then moves the duplicate's orders,
// schedules, saved payment methods and processor customers, each moved
// row with an audit row naming the contact change. A repeated call for the
// same pair moves nothing (alreadyMoved). Idempotency records keep their
// stored answers, which name the contact as it was then.
func (s *Store) MoveContactRecords(ctx context.Context, tenantID uuid.UUID, duplicateID, survivorID int64, actor string) (MoveCounts, error) {
	var out MoveCounts
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if done, err := alreadyMoved(ctx, tx, tenantID, duplicateID, survivorID); err != nil || done {
			return err
		}
		if err := lockForMerge(ctx, tx, tenantID, duplicateID, survivorID); err != nil {
			return err
		}
		if err := recordRedirect(ctx, tx, tenantID, duplicateID, survivorID); err != nil {
			return err
		}
		var err error
		out, err = moveRows(ctx, tx, tenantID, duplicateID, survivorID, actor)
		return err
	})
	if err != nil {
		return MoveCounts{}, fmt.Errorf("orders: move contact %d to %d: %w", duplicateID, survivorID, err)
	}
	return out, nil
}

// alreadyMoved reports whether the redirect duplicate → survivor is
// recorded. The move committed with it, and every write since resolved the
// duplicate to the survivor, so a repeat has nothing left to move and
// takes no lock. Taking them deadlocked with an order for the duplicate
// when the survivor's id is the lower: the order holds the duplicate's lock
// shared and waits for the survivor's, while the repeat holds the
// survivor's and waits for the duplicate's.
func alreadyMoved(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, duplicateID, survivorID int64) (bool, error) {
	var done bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders.contact_redirects
		WHERE tenant_id = $1 AND duplicate_id = $2 AND survivor_id = $3)`, tenantID, duplicateID, survivorID).Scan(&done)
	if err != nil {
		return false, fmt.Errorf("read the redirect: %w", err)
	}
	return done, nil
}

// lockForMerge holds the tenant's bulk lock shared, then both contacts'
// locks exclusively, the lower id first, so two merges of the same pair
// (either way round) queue instead of deadlocking.
func lockForMerge(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, a, b int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(orders.contact_bulk_lock_key($1))`, tenantID); err != nil {
		return fmt.Errorf("lock the tenant's contacts: %w", err)
	}
	ids := []int64{a, b}
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(orders.contact_lock_key($1, $2))`, tenantID, id); err != nil {
			return fmt.Errorf("lock contact %d: %w", id, err)
		}
	}
	return nil
}

// recordRedirect records duplicate → survivor and re-points the contacts
// merged into the duplicate before, keeping every chain one step long. A
// survivor that was merged away, or a duplicate merged into a third
// contact, is refused; the same redirect again is a repeat.
func recordRedirect(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, duplicateID, survivorID int64) error {
	rows, err := tx.Query(ctx, `SELECT duplicate_id, survivor_id FROM orders.contact_redirects
		WHERE tenant_id = $1 AND duplicate_id IN ($2, $3)`, tenantID, duplicateID, survivorID)
	if err != nil {
		return fmt.Errorf("read redirects: %w", err)
	}
	redirects := map[int64]int64{}
	var from, to int64
	if _, err := pgx.ForEachRow(rows, []any{&from, &to}, func() error { redirects[from] = to; return nil }); err != nil {
		return fmt.Errorf("read redirects: %w", err)
	}
	if to, ok := redirects[survivorID]; ok {
		return fmt.Errorf("contact %d is merged into %d: %w", survivorID, to, ErrSurvivorMerged)
	}
	if to, ok := redirects[duplicateID]; ok && to != survivorID {
		return fmt.Errorf("contact %d is merged into %d: %w", duplicateID, to, ErrAlreadyMerged)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders.contact_redirects (tenant_id, duplicate_id, survivor_id) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, duplicate_id) DO NOTHING`, tenantID, duplicateID, survivorID); err != nil {
		return fmt.Errorf("record redirect: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders.contact_redirects SET survivor_id = $3 WHERE tenant_id = $1 AND survivor_id = $2`,
		tenantID, duplicateID, survivorID); err != nil {
		return fmt.Errorf("re-point earlier redirects: %w", err)
	}
	return nil
}

// moveRows moves the duplicate's rows to the survivor, each statement
// answering the ids it moved, and queues one audit row per moved entity.
// A moved payment method stays the default only when the survivor has no
// default of its own; a processor customer moves only when the survivor
// has none for that processor and mode (the duplicate's saved methods keep
// naming their own customer, which is what charging them needs).
func moveRows(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, dup, surv int64, actor string) (MoveCounts, error) {
	var c MoveCounts
	var entries []audit.Entry
	moved := func(entity string, ids []string) {
		for _, id := range ids {
			entries = append(entries, audit.Entry{TenantID: tenantID.String(), EntityType: entity, EntityID: id, Action: audit.Updated,
				Changes: map[string]audit.Change{"contactId": {Old: dup, New: surv}}, Actor: actor})
		}
	}
	steps := []struct {
		entity string
		sql    string
		count  *int64
	}{
		{EntityOrder, `UPDATE orders.orders SET contact_id = $3, updated_at = now() WHERE tenant_id = $1 AND contact_id = $2 RETURNING id::text`, &c.Orders},
		{EntityRecurringDonation, `UPDATE orders.recurring_donations SET contact_id = $3, updated_at = now()
			WHERE tenant_id = $1 AND contact_id = $2 RETURNING id::text`, &c.Schedules},
		{EntityPaymentMethod, `UPDATE orders.payment_methods SET contact_id = $3,
				is_default = is_default AND NOT EXISTS (SELECT 1 FROM orders.payment_methods s
					WHERE s.tenant_id = $1 AND s.contact_id = $3 AND s.is_default AND s.detached_at IS NULL)
			WHERE tenant_id = $1 AND contact_id = $2 RETURNING id`, &c.PaymentMethods},
	}
	for _, st := range steps {
		rows, err := tx.Query(ctx, st.sql, tenantID, dup, surv)
		if err != nil {
			return MoveCounts{}, fmt.Errorf("move %s rows: %w", st.entity, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return MoveCounts{}, fmt.Errorf("move %s rows: %w", st.entity, err)
		}
		*st.count = int64(len(ids))
		moved(st.entity, ids)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders.processor_customers c SET contact_id = $3 WHERE tenant_id = $1 AND contact_id = $2
		AND NOT EXISTS (SELECT 1 FROM orders.processor_customers s WHERE s.tenant_id = $1 AND s.contact_id = $3
			AND s.provider = c.provider AND s.mode = c.mode)`, tenantID, dup, surv); err != nil {
		return MoveCounts{}, fmt.Errorf("move processor customers: %w", err)
	}
	if len(entries) == 0 {
		return c, nil
	}
	b := &pgx.Batch{}
	if err := audit.QueueAll(ctx, b, entries); err != nil {
		return MoveCounts{}, fmt.Errorf("queue audit: %w", err)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return MoveCounts{}, fmt.Errorf("record audit of %d moved rows: %w", len(entries), err)
	}
	return c, nil
}

// LockScheduleContact holds the contact lock of schedule id's contact for
// tx (see contactForWrite), before the schedule row is locked: a merge
// waiting for that row while holding the contact's lock would otherwise
// deadlock with the runner. It reports false when there is no such
// schedule.
func LockScheduleContact(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (bool, error) {
	var contact int64
	err := tx.QueryRow(ctx, `SELECT `+contactForWrite("tenant_id", "contact_id")+` FROM orders.recurring_donations
		WHERE tenant_id = $1 AND id = $2`, tenantID, id).Scan(&contact)
	if db.IsNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock the schedule's contact: %w", err)
	}
	return true, nil
}

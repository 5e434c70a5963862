package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Reservation states.
const (
	StateReserved = "reserved"
	StateReleased = "released"
)

// ReserveLine is one order line to reserve.
type ReserveLine struct {
	LineNumber int32
	ItemID     uuid.UUID
	Quantity   int32
}

// Reservation is a row of inventory.reservations: one order line, with the
// item's pricing as it was when the line was reserved.
type Reservation struct {
	TenantID             uuid.UUID
	OrderID              uuid.UUID
	LineNumber           int32
	ItemID               uuid.UUID
	Quantity             int32
	State                string
	StockMoved           bool
	SKU                  string
	Name                 string
	UnitPriceMinor       int64
	FairMarketValueMinor int64
	Currency             string
	ReservedAt           time.Time
	ReleasedAt           *time.Time
	// Replayed is set on a line that an earlier call already reserved (by
	// Reserve) or released (by Release): this call changed nothing for it.
	Replayed bool
}

const reservationColumns = `tenant_id, order_id, line_number, item_id, quantity, state, stock_moved, sku, name,
	unit_price_minor, fair_market_value_minor, currency, reserved_at, released_at`

func scanReservation(row pgx.Row) (Reservation, error) {
	var r Reservation
	err := row.Scan(&r.TenantID, &r.OrderID, &r.LineNumber, &r.ItemID, &r.Quantity, &r.State, &r.StockMoved, &r.SKU, &r.Name,
		&r.UnitPriceMinor, &r.FairMarketValueMinor, &r.Currency, &r.ReservedAt, &r.ReleasedAt)
	if err != nil {
		return Reservation{}, fmt.Errorf("read reservation: %w", err)
	}
	return r, nil
}

// LineReason says why one line of a Reserve or Release call failed.
type LineReason int

// The reasons a line fails.
const (
	// ItemNotFound: the line's item does not exist in the tenant.
	ItemNotFound LineReason = iota + 1
	// ItemInactive: the line's item exists but is not active.
	ItemInactive
	// InsufficientStock: the item tracks stock and has too little left.
	InsufficientStock
	// ReservationMismatch: the line was reserved before with another item
	// or quantity.
	ReservationMismatch
	// ReservationReleased: the line was reserved and released before; a
	// released line is never reserved again.
	ReservationReleased
	// ReservationNotFound: a line to release was never reserved.
	ReservationNotFound
)

// LineError is the failure of one line of a call. The call moved nothing.
type LineError struct {
	// Index is the line's position in the request.
	Index      int
	Reason     LineReason
	LineNumber int32
	// SKU names the item when it exists.
	SKU string
	// Available and Requested are the units left for the line and the
	// units it asked for (InsufficientStock).
	Available int64
	Requested int64
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d (request index %d): reason %d", e.LineNumber, e.Index, e.Reason)
}

// Reserve reserves lines for an order in one transaction: all of them, or,
// when a line fails with a *LineError, none. Lines the order already holds
// are returned as first reserved (Replayed) and move nothing again.
//
// Concurrency: calls for the same order are serialised by a transaction
// advisory lock, so a duplicated call sees the first one's rows; the rows
// of items that track stock are then locked in id order, so calls for
// different orders sharing such items queue behind each other without
// deadlocking, and stock is checked and taken under the lock. Items that
// do not track stock are read without a lock (beginReserve).
//
// Round trips: two. The transaction is pipelined (db.PipelinedTx): BEGIN,
// the locks and the reads go in one, the stock moves, their audit rows,
// the reservations and COMMIT in the other; a refused call ends with a
// ROLLBACK instead.
func (s *Store) Reserve(ctx context.Context, tenantID, orderID uuid.UUID, lines []ReserveLine, actor string) ([]Reservation, error) {
	out, err := s.reserve(ctx, tenantID, orderID, lines, actor)
	if err != nil {
		return nil, callError("reserve stock", err)
	}
	return out, nil
}

// callError says which call failed; a *LineError stays in the chain for
// the caller to map line by line.
func callError(op string, err error) error {
	return fmt.Errorf("inventory: %s: %w", op, err)
}

func (s *Store) reserve(ctx context.Context, tenantID, orderID uuid.UUID, lines []ReserveLine, actor string) ([]Reservation, error) {
	nums := make([]int32, len(lines))
	var ids []uuid.UUID
	for i, l := range lines {
		nums[i] = l.LineNumber
		if !slices.Contains(ids, l.ItemID) {
			ids = append(ids, l.ItemID)
		}
	}
	tx, err := db.BeginPipelined(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Close(ctx) }()
	existing, items, err := beginReserve(ctx, tx, tenantID, orderID, nums, ids)
	if err != nil {
		return nil, err
	}
	out, taken, err := planReservations(tenantID, orderID, lines, existing, items)
	if err != nil {
		return nil, err
	}
	if err := commitReservations(ctx, tx, tenantID, items, taken, out, actor); err != nil {
		return nil, err
	}
	return out, nil
}

// planReservations checks every line in request order, so the error names
// the first failing line, and returns each line's reservation (an
// existing one Replayed) and the units to take from each item that tracks
// stock (per item: two lines may share one).
func planReservations(tenantID, orderID uuid.UUID, lines []ReserveLine, existing map[int32]Reservation, items map[uuid.UUID]Item) ([]Reservation, map[uuid.UUID]int64, error) {
	out := make([]Reservation, len(lines))
	taken := map[uuid.UUID]int64{}
	for i, l := range lines {
		if r, ok := existing[l.LineNumber]; ok {
			switch {
			case r.ItemID != l.ItemID || r.Quantity != l.Quantity:
				return nil, nil, &LineError{Index: i, Reason: ReservationMismatch, LineNumber: l.LineNumber, SKU: r.SKU}
			case r.State == StateReleased:
				return nil, nil, &LineError{Index: i, Reason: ReservationReleased, LineNumber: l.LineNumber, SKU: r.SKU}
			}
			r.Replayed = true
			out[i] = r
			continue
		}
		it, ok := items[l.ItemID]
		switch {
		case !ok:
			return nil, nil, &LineError{Index: i, Reason: ItemNotFound, LineNumber: l.LineNumber}
		case !it.Active:
			return nil, nil, &LineError{Index: i, Reason: ItemInactive, LineNumber: l.LineNumber, SKU: it.SKU}
		}
		if it.TrackStock {
			avail := int64(it.StockOnHand) - taken[it.ID]
			if int64(l.Quantity) > avail {
				return nil, nil, &LineError{Index: i, Reason: InsufficientStock, LineNumber: l.LineNumber, SKU: it.SKU,
					Available: avail, Requested: int64(l.Quantity)}
			}
			taken[it.ID] += int64(l.Quantity)
		}
		out[i] = Reservation{
			TenantID: tenantID, OrderID: orderID, LineNumber: l.LineNumber, ItemID: it.ID, Quantity: l.Quantity,
			State: StateReserved, StockMoved: it.TrackStock, SKU: it.SKU, Name: it.Name,
			UnitPriceMinor: it.PriceMinor, FairMarketValueMinor: it.FairMarketValueMinor, Currency: it.Currency,
		}
	}
	return out, taken, nil
}

// commitReservations takes the stock, inserts the new reservations (their
// ReservedAt set from the rows) and commits, in one round trip.
func commitReservations(ctx context.Context, tx *db.PipelinedTx, tenantID uuid.UUID, items map[uuid.UUID]Item, taken map[uuid.UUID]int64, out []Reservation, actor string) error {
	b := &pgx.Batch{}
	moves, err := queueStockMoves(ctx, b, tenantID, items, taken, -1, actor)
	if err != nil {
		return err
	}
	inserted := queueReservations(b, out)
	br := tx.CommitBatch(ctx, b)
	for range moves {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return fmt.Errorf("take stock: %w", err)
		}
	}
	for _, i := range inserted {
		if err := br.QueryRow().Scan(&out[i].ReservedAt); err != nil {
			_ = br.Close()
			return fmt.Errorf("insert reservation: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Release gives back the stock of an order's reserved lines and marks them
// released, in one transaction. lineNumbers nil or empty means every line
// of the order. A listed line that was never reserved fails the call with a
// *LineError and nothing moves; a line already released is returned as it
// is (Replayed).
func (s *Store) Release(ctx context.Context, tenantID, orderID uuid.UUID, lineNumbers []int32, actor string) ([]Reservation, error) {
	var out []Reservation
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockOrder(ctx, tx, tenantID, orderID); err != nil {
			return err
		}
		var err error
		if out, err = releaseTargets(ctx, tx, tenantID, orderID, lineNumbers); err != nil {
			return err
		}
		release, given := pendingReleases(out)
		if len(release) == 0 {
			return nil
		}
		if len(lineNumbers) == 0 && s.OnRelease != nil {
			shipped, handled, err := s.OnRelease(ctx, tx, tenantID, orderID, actor)
			if err != nil {
				return err
			}
			if handled {
				given = shipped
			}
		}
		at, err := releaseLines(ctx, tx, tenantID, orderID, release, given, actor)
		if err != nil {
			return err
		}
		for i := range out {
			if !out[i].Replayed {
				out[i].State, out[i].ReleasedAt = StateReleased, &at
			}
		}
		return nil
	})
	if err != nil {
		return nil, callError("release stock", err)
	}
	return out, nil
}

// releaseTargets reads the reservations a release is about: every line of
// the order, in line order, or the lines asked for, in the order asked
// (each once); a line asked for that was never reserved is a LineError.
func releaseTargets(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, lineNumbers []int32) ([]Reservation, error) {
	var filter []int32
	if len(lineNumbers) > 0 {
		filter = lineNumbers
	}
	existing, err := readReservations(ctx, tx, tenantID, orderID, filter)
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	var out []Reservation
	if filter == nil {
		for _, r := range existing {
			out = append(out, r)
		}
		slices.SortFunc(out, func(a, b Reservation) int { return int(a.LineNumber - b.LineNumber) })
		return out, nil
	}
	seen := map[int32]bool{}
	for i, n := range filter {
		r, ok := existing[n]
		if !ok {
			return nil, &LineError{Index: i, Reason: ReservationNotFound, LineNumber: n}
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// pendingReleases marks the lines released before as replayed and returns
// the lines still to release with the stock each item gets back (only
// lines whose reservation moved stock give any).
func pendingReleases(out []Reservation) ([]int32, map[uuid.UUID]int64) {
	given := map[uuid.UUID]int64{}
	var release []int32
	for i, r := range out {
		if r.State == StateReleased {
			out[i].Replayed = true
			continue
		}
		release = append(release, r.LineNumber)
		if r.StockMoved {
			given[r.ItemID] += int64(r.Quantity)
		}
	}
	return release, given
}

// releaseLines locks the items getting stock back, then sends their stock
// moves (with audit rows) and the reservations' release as one batch, and
// returns when the lines were released.
func releaseLines(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, release []int32, given map[uuid.UUID]int64, actor string) (time.Time, error) {
	ids := make([]uuid.UUID, 0, len(given))
	for id := range given {
		ids = append(ids, id)
	}
	locked, err := lockItems(ctx, tx, tenantID, ids)
	if err != nil {
		return time.Time{}, fmt.Errorf("lock items: %w", err)
	}
	b := &pgx.Batch{}
	moves, err := queueStockMoves(ctx, b, tenantID, locked, given, +1, actor)
	if err != nil {
		return time.Time{}, err
	}
	b.Queue(`
		WITH u AS (
			UPDATE inventory.reservations SET state = 'released', released_at = now()
			WHERE tenant_id = $1 AND order_id = $2 AND line_number = ANY($3) AND state = 'reserved'
			RETURNING released_at)
		SELECT coalesce(max(released_at), now()) FROM u`, tenantID, orderID, release)
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	for range moves {
		if _, err := br.Exec(); err != nil {
			return time.Time{}, fmt.Errorf("give stock back: %w", err)
		}
	}
	var at time.Time
	if err := br.QueryRow().Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("release reservations: %w", err)
	}
	if err := br.Close(); err != nil {
		return time.Time{}, fmt.Errorf("release reservations: %w", err)
	}
	return at, nil
}

// beginReserve opens the transaction and, in the same round trip, turns
// off the commit's wait for its WAL flush, takes the order's advisory lock,
// reads the order's existing reservations of lines and reads the items,
// row-locking those that track stock (the statements are pipelined and run
// in order, so the reads come after the lock). Only the items that track
// stock are locked: an item whose stock is not tracked has nothing to take,
// and locking it made every order of a popular untracked item wait for the
// previous one's commit. Such an item is priced as read; an edit committed
// meanwhile orders after this reservation. An item that the statement's
// snapshot shows tracking stock but that its locking part did not return
// (it stopped tracking stock while the statement waited for its lock) is
// locked and read again on its own (TestItemStopsTrackingWhileReserving).
func beginReserve(ctx context.Context, tx *db.PipelinedTx, tenantID, orderID uuid.UUID, lines []int32, ids []uuid.UUID) (map[int32]Reservation, map[uuid.UUID]Item, error) {
	br := tx.SendBatch(ctx, reserveBatch(tenantID, orderID, lines, ids))
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil { // the setting and the lock
		return nil, nil, fmt.Errorf("lock order: %w", err)
	}
	existing, err := collectReservations(br.Query())
	if err != nil {
		return nil, nil, err
	}
	items, relock, err := collectReadItems(br, tenantID)
	if err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("read items: %w", err)
	}
	if len(relock) == 0 {
		return existing, items, nil
	}
	again, err := lockItems(ctx, tx, tenantID, relock)
	if err != nil {
		return nil, nil, fmt.Errorf("lock items again: %w", err)
	}
	for id, it := range again {
		items[id] = it
	}
	return existing, items, nil
}

// reserveBatch is beginReserve's round trip: the commit setting and the
// order's lock, the order's reservations of lines, and the items.
func reserveBatch(tenantID, orderID uuid.UUID, lines []int32, ids []uuid.UUID) *pgx.Batch {
	b := &pgx.Batch{}
	// A reservation commits without waiting for its WAL flush. Its order
	// is what makes it durable: the orders service commits the order, in
	// the same database and so the same WAL, synchronously and after this
	// commit, and WAL is flushed in order, so a recorded order never loses
	// its reservation in a crash. A crash that loses a reservation also
	// loses any order that could have used it, which leaves the state of a
	// crash just before reserving; the retry reserves again (docs/inventory.md).
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(hashtextextended($1, 0))`,
		orderLockKey(tenantID, orderID))
	b.Queue(`SELECT `+reservationColumns+` FROM inventory.reservations
		WHERE tenant_id = $1 AND order_id = $2 AND line_number = ANY($3)`, tenantID, orderID, lines)
	// One statement reads every item: those that track stock locked, in
	// id order, at their latest version; the others as of the statement.
	// It reads only the columns a reservation uses (reserveItemColumns).
	b.Queue(`WITH locked AS (SELECT `+reserveItemColumns+lockItemsFrom+` AND track_stock`+lockItemsOrder+`)
		SELECT `+reserveItemColumns+`, true FROM locked
		UNION ALL
		SELECT `+reserveItemColumns+`, false`+lockItemsFrom+` AND id NOT IN (SELECT id FROM locked)`, tenantID, ids)
	return b
}

// reserveItemColumns are the columns of an item that reserving it reads:
// what planReservations checks and copies into the reservation, and the
// stock queueStockMoves audits. The item's other columns (its description,
// category, location, times) are not read on the order path.
const reserveItemColumns = `id, sku, name, price_minor, currency, fair_market_value_minor, track_stock, stock_on_hand, active`

// scanReserveItem scans reserveItemColumns, then locked.
func scanReserveItem(row pgx.Row, tenantID uuid.UUID, locked *bool) (Item, error) {
	it := Item{TenantID: tenantID}
	if err := row.Scan(&it.ID, &it.SKU, &it.Name, &it.PriceMinor, &it.Currency, &it.FairMarketValueMinor, &it.TrackStock,
		&it.StockOnHand, &it.Active, locked); err != nil {
		return Item{}, fmt.Errorf("read inventory item: %w", db.Interpret(err))
	}
	return it, nil
}

// collectReservations gathers reservation rows by line number.
func collectReservations(rows pgx.Rows, err error) (map[int32]Reservation, error) {
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Reservation, error) { return scanReservation(r) })
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	m := make(map[int32]Reservation, len(list))
	for _, r := range list {
		m[r.LineNumber] = r
	}
	return m, nil
}

// collectReadItems reads reserveBatch's items: by id, except those that
// track stock but were not locked, which it returns to lock again.
func collectReadItems(br pgx.BatchResults, tenantID uuid.UUID) (map[uuid.UUID]Item, []uuid.UUID, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("read items: %w", err)
	}
	type readItem struct {
		Item
		locked bool
	}
	read, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (readItem, error) {
		var ri readItem
		var err error
		ri.Item, err = scanReserveItem(r, tenantID, &ri.locked)
		return ri, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read items: %w", err)
	}
	items := make(map[uuid.UUID]Item, len(read))
	var relock []uuid.UUID
	for _, it := range read {
		if !it.locked && it.TrackStock {
			relock = append(relock, it.ID)
			continue
		}
		items[it.ID] = it.Item
	}
	return items, relock, nil
}

// collectItems reads the next result of br as items by id.
func collectItems(br pgx.BatchResults) (map[uuid.UUID]Item, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Item, error) { return scanItem(r) })
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	m := make(map[uuid.UUID]Item, len(list))
	for _, it := range list {
		m[it.ID] = it
	}
	return m, nil
}

// lockOrder serialises the reservation calls of one order for the rest of
// the transaction. A hash collision between two orders only makes them
// wait for each other.
func lockOrder(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID) error {
	if err := advisoryLock(ctx, tx, orderLockKey(tenantID, orderID), true); err != nil {
		return fmt.Errorf("lock order: %w", err)
	}
	return nil
}

// LockContact takes contact's lock for the rest of tx: exclusive for a
// merge's move of its shipments, shared for a shipment's creation, so a
// creation never falls between the move's update and its commit (where
// the update would not see it and it would not see the merge).
func LockContact(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, contact int64, exclusive bool) error {
	key := "inventory.contact:" + tenantID.String() + ":" + strconv.FormatInt(contact, 10)
	if err := advisoryLock(ctx, tx, key, exclusive); err != nil {
		return fmt.Errorf("lock contact %d: %w", contact, err)
	}
	return nil
}

// advisoryLock takes the transaction-scoped advisory lock named by key's
// hash, exclusive or shared. A hash collision only makes two holders wait
// for each other.
func advisoryLock(ctx context.Context, tx pgx.Tx, key string, exclusive bool) error {
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	_, err := tx.Exec(ctx, `SELECT `+fn+`(hashtextextended($1, 0))`, key)
	return err
}

// orderLockKey is the text whose hash is an order's advisory lock.
func orderLockKey(tenantID, orderID uuid.UUID) string {
	return "inventory.reservations:" + tenantID.String() + ":" + orderID.String()
}

// readReservations returns the order's reservations by line number, those
// of lineNumbers only unless it is nil.
func readReservations(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, lineNumbers []int32) (map[int32]Reservation, error) {
	return collectReservations(tx.Query(ctx, `SELECT `+reservationColumns+` FROM inventory.reservations
		WHERE tenant_id = $1 AND order_id = $2 AND ($3::integer[] IS NULL OR line_number = ANY($3))`,
		tenantID, orderID, lineNumbers))
}

// lockItemsSQL and lockItemsOrder read and row-lock a tenant's items by
// id ($1, $2), with any further condition between them; lockItemsFrom is
// lockItemsSQL after its columns, for a statement that reads fewer. The
// locks are taken in id order (the rows pass the lock in the ORDER BY's
// order), which is what keeps concurrent multi-item calls deadlock-free.
const (
	lockItemsFrom  = ` FROM inventory.items WHERE tenant_id = $1 AND id = ANY($2)`
	lockItemsSQL   = `SELECT ` + itemColumns + lockItemsFrom
	lockItemsOrder = ` ORDER BY id FOR UPDATE`
)

// batchSender is a transaction, plain (pgx.Tx) or pipelined (db.PipelinedTx).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// lockItems reads and row-locks the tenant's items with the given ids.
func lockItems(ctx context.Context, tx batchSender, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]Item, error) {
	if len(ids) == 0 {
		return map[uuid.UUID]Item{}, nil
	}
	b := &pgx.Batch{}
	b.Queue(lockItemsSQL+lockItemsOrder, tenantID, ids)
	br := tx.SendBatch(ctx, b)
	m, err := collectItems(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return m, err
}

// queueStockMoves queues on b the addition of sign × units[id] to each
// item's stock and the audit row of each change, and returns the number of
// UPDATE statements queued (each has a result; the audit rows come after
// them as one statement). The rows must be locked: the audit's old value
// is the locked stock in items, which nobody else can change before this
// transaction ends.
func queueStockMoves(ctx context.Context, b *pgx.Batch, tenantID uuid.UUID, items map[uuid.UUID]Item, units map[uuid.UUID]int64, sign int64, actor string) (int, error) {
	ids := make([]uuid.UUID, 0, len(units))
	for id, n := range units {
		if n != 0 {
			ids = append(ids, id)
		}
	}
	// A stable order keeps the audit rows of one call in a predictable
	// sequence.
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	entries := make([]audit.Entry, 0, len(ids))
	for _, id := range ids {
		before := int64(items[id].StockOnHand)
		after := before + sign*units[id]
		b.Queue(`UPDATE inventory.items SET stock_on_hand = stock_on_hand + $3, updated_at = now()
			WHERE tenant_id = $1 AND id = $2`, tenantID, id, sign*units[id])
		entries = append(entries, audit.Entry{TenantID: tenantID.String(), EntityType: EntityType, EntityID: id.String(),
			Action: audit.Updated, Changes: map[string]audit.Change{"stockOnHand": {Old: before, New: after}}, Actor: actor})
	}
	if err := audit.QueueAll(ctx, b, entries); err != nil {
		return 0, fmt.Errorf("queue audit: %w", err)
	}
	n := len(ids)
	if len(entries) > 0 {
		n++
	}
	return n, nil
}

// queueReservations queues on b the insert of each line of rs that is not
// a replay, each returning its reserved_at, and returns their indexes in
// rs in queue order.
func queueReservations(b *pgx.Batch, rs []Reservation) []int {
	var idx []int
	for i, r := range rs {
		if r.Replayed {
			continue
		}
		idx = append(idx, i)
		b.Queue(`INSERT INTO inventory.reservations (tenant_id, order_id, line_number, item_id, quantity, state,
				stock_moved, sku, name, unit_price_minor, fair_market_value_minor, currency)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			RETURNING reserved_at`,
			r.TenantID, r.OrderID, r.LineNumber, r.ItemID, r.Quantity, r.State, r.StockMoved, r.SKU, r.Name,
			r.UnitPriceMinor, r.FairMarketValueMinor, r.Currency)
	}
	return idx
}

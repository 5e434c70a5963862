package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Batch states.
const (
	BatchOpen   = "Open"
	BatchClosed = "Closed"
)

// CurrencyTotal is a batch's orders in one currency.
type CurrencyTotal struct {
	Currency   string
	OrderCount int64
	TotalMinor int64
}

// Batch is a row of orders.batches with its figures.
type Batch struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        string
	Description string
	BatchDate   *time.Time
	IsDaily     bool
	State       string
	CreatedAt   time.Time
	ClosedAt    *time.Time
	OrderCount  int64
	Totals      []CurrencyTotal
}

const batchColumns = `tenant_id, id, name, description, batch_date, is_daily, state, created_at, closed_at`

func scanBatch(row pgx.Row) (Batch, error) {
	var b Batch
	if err := row.Scan(&b.TenantID, &b.ID, &b.Name, &b.Description, &b.BatchDate, &b.IsDaily, &b.State, &b.CreatedAt, &b.ClosedAt); err != nil {
		return Batch{}, fmt.Errorf("read batch: %w", db.Interpret(err))
	}
	return b, nil
}

// figures fills the batches' counts and totals. Voided, Pending and Failed
// orders count but add nothing to the totals (a Pending charge has not
// settled); refunds are netted out.
func (s *Store) figures(ctx context.Context, q Querier, tenantID uuid.UUID, bs []Batch) error {
	if len(bs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(bs))
	idx := map[uuid.UUID]int{}
	for i, b := range bs {
		ids[i], idx[b.ID] = b.ID, i
		bs[i].Totals = []CurrencyTotal{}
	}
	rows, err := q.Query(ctx, `SELECT batch_id, currency, count(*),
			coalesce(sum(CASE WHEN status IN ('Voided', 'Pending', 'Failed') THEN 0 ELSE total_minor - refunded_minor END), 0)::bigint
		FROM orders.orders WHERE tenant_id = $1 AND batch_id = ANY($2)
		GROUP BY batch_id, currency ORDER BY batch_id, currency`, tenantID, ids)
	if err != nil {
		return fmt.Errorf("batch figures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var t CurrencyTotal
		if err := rows.Scan(&id, &t.Currency, &t.OrderCount, &t.TotalMinor); err != nil {
			return fmt.Errorf("batch figures: %w", err)
		}
		b := &bs[idx[id]]
		b.OrderCount += t.OrderCount
		b.Totals = append(b.Totals, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("batch figures: %w", err)
	}
	return nil
}

// ListBatches returns a page of batches, newest first.
func (s *Store) ListBatches(ctx context.Context, tenantID uuid.UUID, state string, limit int32, offset int64) ([]Batch, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders.batches WHERE tenant_id = $1 AND ($2 = '' OR state = $2)`, tenantID, state).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("orders: count batches: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+batchColumns+` FROM orders.batches WHERE tenant_id = $1 AND ($2 = '' OR state = $2)
		ORDER BY id DESC LIMIT $3 OFFSET $4`, tenantID, state, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list batches: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list batches: %w", err)
	}
	if err := s.figures(ctx, s.pool, tenantID, list); err != nil {
		return nil, 0, fmt.Errorf("orders: list batches: %w", err)
	}
	return list, total, nil
}

// GetBatch reads one batch with its figures.
func (s *Store) GetBatch(ctx context.Context, tenantID, id uuid.UUID) (Batch, error) {
	b, err := scanBatch(s.pool.QueryRow(ctx, `SELECT `+batchColumns+` FROM orders.batches WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Batch{}, fmt.Errorf("orders: get batch %s: %w", id, err)
	}
	bs := []Batch{b}
	if err := s.figures(ctx, s.pool, tenantID, bs); err != nil {
		return Batch{}, fmt.Errorf("orders: get batch %s: %w", id, err)
	}
	return bs[0], nil
}

// CreateBatch opens a named batch with its description.
func (s *Store) CreateBatch(ctx context.Context, tenantID uuid.UUID, name, description, actor string) (Batch, error) {
	var b Batch
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		b, err = scanBatch(tx.QueryRow(ctx, `INSERT INTO orders.batches (tenant_id, id, name, description) VALUES ($1, $2, $3, $4) RETURNING `+batchColumns,
			tenantID, uuid.Must(uuid.NewV7()), name, description))
		if err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityBatch, EntityID: b.ID.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return Batch{}, fmt.Errorf("orders: create batch: %w", err)
	}
	b.Totals = []CurrencyTotal{}
	return b, nil
}

// CloseBatch closes a batch; closing a closed batch changes nothing. The
// FOR UPDATE waits for orders being attached (they hold FOR KEY SHARE), so
// no order lands in a batch after it is closed.
func (s *Store) CloseBatch(ctx context.Context, tenantID, id uuid.UUID, actor string) (Batch, error) {
	var b Batch
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		b, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchColumns+` FROM orders.batches WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return fmt.Errorf("lock batch: %w", err)
		}
		if b.State == BatchClosed {
			return nil
		}
		b, err = scanBatch(tx.QueryRow(ctx, `UPDATE orders.batches SET state = 'Closed', closed_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+batchColumns, tenantID, id))
		if err != nil {
			return fmt.Errorf("update batch row: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityBatch, EntityID: id.String(), Action: audit.Updated,
			Changes: map[string]audit.Change{"state": {Old: BatchOpen, New: BatchClosed}}, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return Batch{}, fmt.Errorf("orders: close batch %s: %w", id, err)
	}
	bs := []Batch{b}
	if err := s.figures(ctx, s.pool, tenantID, bs); err != nil {
		return Batch{}, fmt.Errorf("orders: close batch %s: %w", id, err)
	}
	return bs[0], nil
}

// attachBatch returns the id of the batch a new order joins, holding a
// key-share lock on it until the order commits: batchID when given (it
// must be open), else the tenant's open daily batch of day, opened on
// first use and opened again when staff closed the day's batch.
func attachBatch(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, batchID *uuid.UUID, day time.Time, actor string) (uuid.UUID, error) {
	if batchID != nil {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM orders.batches WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE`, tenantID, *batchID).Scan(&state)
		switch {
		case db.IsNoRows(err):
			return uuid.Nil, fmt.Errorf("batch %s: %w", *batchID, ErrBatchNotFound)
		case err != nil:
			return uuid.Nil, fmt.Errorf("lock batch %s: %w", *batchID, err)
		case state != BatchOpen:
			return uuid.Nil, fmt.Errorf("batch %s: %w", *batchID, ErrBatchClosed)
		}
		return *batchID, nil
	}
	// A close that commits while this waits for the row makes the locked
	// read find nothing (the row no longer matches state = 'Open'); the
	// next round opens a new batch. Two rounds always suffice unless staff
	// close the day's batch again within the same instant.
	for range 3 {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id FROM orders.batches WHERE tenant_id = $1 AND is_daily AND batch_date = $2 AND state = 'Open' FOR KEY SHARE`,
			tenantID, day).Scan(&id)
		if err == nil {
			return id, nil
		}
		if !db.IsNoRows(err) {
			return uuid.Nil, fmt.Errorf("read daily batch: %w", err)
		}
		if err := openDailyBatch(ctx, tx, tenantID, day, actor); err != nil {
			return uuid.Nil, err
		}
	}
	return uuid.Nil, fmt.Errorf("daily batch of %s closed while opened: %w", day.Format(time.DateOnly), ErrBatchClosed)
}

// openDailyBatch opens the day's daily batch unless another order just did
// (ON CONFLICT on the one open daily batch per day). The day's second
// batch, after staff closed the first, is named "Daily <day> (2)".
func openDailyBatch(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, day time.Time, actor string) error {
	newID := uuid.Must(uuid.NewV7())
	tag, err := tx.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name, batch_date, is_daily)
		SELECT $1, $2, 'Daily ' || $3::date::text || CASE WHEN n > 0 THEN ' (' || (n + 1) || ')' ELSE '' END, $3, true
		FROM (SELECT count(*) AS n FROM orders.batches WHERE tenant_id = $1 AND is_daily AND batch_date = $3) c
		ON CONFLICT (tenant_id, batch_date) WHERE is_daily AND state = 'Open' DO NOTHING`, tenantID, newID, day)
	if err != nil {
		return fmt.Errorf("open daily batch: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityBatch, EntityID: newID.String(), Action: audit.Created, Actor: actor}); err != nil {
		return fmt.Errorf("record audit of daily batch: %w", err)
	}
	return nil
}

// batchFor returns the batch a new API order joins: batchID when given,
// else the tenant's daily batch of day, opened on first use. It takes no
// lock: the order's own insert checks that the batch is still open and
// locks it (writeOrder).
func (s *Store) batchFor(ctx context.Context, tenantID uuid.UUID, batchID *uuid.UUID, day time.Time, actor string) (uuid.UUID, error) {
	if batchID != nil {
		return *batchID, nil
	}
	if id, ok := s.daily.get(tenantID, day); ok {
		return id, nil
	}
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM orders.batches WHERE tenant_id = $1 AND is_daily AND batch_date = $2 AND state = 'Open'`,
		tenantID, day).Scan(&id)
	if db.IsNoRows(err) {
		// Not opened yet (or closed by staff): open one in a transaction
		// of its own, with its audit row. An order that then fails leaves
		// an empty daily batch, which is harmless.
		err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			id, err = attachBatch(ctx, tx, tenantID, nil, day, actor)
			return err
		})
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("daily batch: %w", err)
	}
	s.daily.put(tenantID, day, id)
	return id, nil
}

// CheckBatch reports whether the tenant's batch id can take an order: nil
// when it is open, else ErrBatchNotFound or ErrBatchClosed. An order
// naming a batch asks before it reserves stock or charges a card; the
// order's insert checks again (a batch may close in between).
func (s *Store) CheckBatch(ctx context.Context, tenantID, id uuid.UUID) error {
	var state string
	err := s.pool.QueryRow(ctx, `SELECT state FROM orders.batches WHERE tenant_id = $1 AND id = $2`, tenantID, id).Scan(&state)
	switch {
	case db.IsNoRows(err):
		return fmt.Errorf("batch %s: %w", id, ErrBatchNotFound)
	case err != nil:
		return fmt.Errorf("orders: read batch %s: %w", id, err)
	case state != BatchOpen:
		return fmt.Errorf("batch %s: %w", id, ErrBatchClosed)
	}
	return nil
}

// batchError says why an order could not join batch id: it is closed, or
// there is no such batch in the tenant.
func (s *Store) batchError(ctx context.Context, tenantID, id uuid.UUID) error {
	var state string
	err := s.pool.QueryRow(ctx, `SELECT state FROM orders.batches WHERE tenant_id = $1 AND id = $2`, tenantID, id).Scan(&state)
	switch {
	case db.IsNoRows(err):
		return fmt.Errorf("batch %s: %w", id, ErrBatchNotFound)
	case err != nil:
		return fmt.Errorf("read batch %s: %w", id, err)
	case state != BatchOpen:
		return fmt.Errorf("batch %s: %w", id, ErrBatchClosed)
	}
	// Open again by now: only a batch that was closed refuses an order,
	// and closed batches do not reopen, so this is not expected.
	return fmt.Errorf("batch %s: %w", id, ErrBatchClosed)
}

// dailyBatches remembers the id of each tenant's open daily batch of a day,
// so an order does not look it up. An entry can only go stale by the batch
// being closed, which the order's insert notices (writeOrder); then the
// entry is forgotten.
type dailyBatches struct {
	mu sync.Mutex
	m  map[dailyKey]uuid.UUID
}

type dailyKey struct {
	tenant uuid.UUID
	day    time.Time
}

// maxDailyBatches bounds the memory of dailyBatches: past it, the map
// starts again empty (entries of past days are never used again anyway).
const maxDailyBatches = 10_000

func (d *dailyBatches) get(tenant uuid.UUID, day time.Time) (uuid.UUID, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.m[dailyKey{tenant, day}]
	return id, ok
}

func (d *dailyBatches) put(tenant uuid.UUID, day time.Time, id uuid.UUID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxDailyBatches {
		d.m = map[dailyKey]uuid.UUID{}
	}
	d.m[dailyKey{tenant, day}] = id
}

func (d *dailyBatches) forget(tenant uuid.UUID, day time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, dailyKey{tenant, day})
}

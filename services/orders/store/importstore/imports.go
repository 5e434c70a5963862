package importstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/store"
)

// Gift imports (GiftImportService). A batch of rows is recorded set-based
// in one transaction: the rows are copied into a temporary table, and a
// handful of statements decide each row's outcome and write every created
// gift's order, donation line and payment, whatever the batch's size.
//
// Imported gifts write no audit rows (so fire no per-order events): the
// imports service announces the import's own state changes instead. The
// orders carry their import's id and their external id; they are
// Completed, dated by the gift's date (created_at at noon UTC of it, the
// column every report view and the giving summary date gifts by), in the
// import's batch, so they count everywhere as any completed order.

// Import row outcomes.
const (
	ImportCreated = "created"
	ImportSkipped = "skipped"
	ImportFailed  = "failed"
)

// GiftRow is one row of a gift import, checked by the caller.
type GiftRow struct {
	Row         int64
	ExternalID  string
	ContactID   int64
	Date        time.Time
	AmountMinor int64
	Currency    string
	// Fund is the fund's name, "" for the tenant's default fund.
	Fund                           string
	CampaignID                     string
	Method, CheckNumber, Reference string
	// FailColumn and FailMessage refuse the row before it is looked at
	// (the caller's own checks); it is recorded failed.
	FailColumn, FailMessage string
}

// GiftImport is one batch of a gift import.
type GiftImport struct {
	TenantID, ImportID uuid.UUID
	// DryRun does all the work in a transaction that is rolled back.
	DryRun bool
	Rows   []GiftRow
}

// GiftResult is what became of one row.
type GiftResult struct {
	Row     int64
	Outcome string
	// OrderID is the created order, or for a skipped row the order already
	// recorded with its external id; nil when failed.
	OrderID         *uuid.UUID
	Column, Message string
}

// ErrImportBatchClosed means staff closed the import's batch before the import
// finished.
var ErrImportBatchClosed = errors.New("import batch closed")

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// ImportActor is the audit actor of an import's writes.
func ImportActor(importID uuid.UUID) string { return "import:" + importID.String() }

// ImportGifts records one batch of a gift import and answers every row, in
// the order of in.Rows. It is idempotent by (import, row): rows recorded
// by an earlier call are answered from orders.import_rows and not written
// again. The tenant's bulk contact lock (contacts.go) serialises the
// batches of a tenant's gift imports, which makes the external-id check
// exact, and keeps merges out while contact ids are mapped.
func (s *Store) ImportGifts(ctx context.Context, in GiftImport) ([]GiftResult, error) {
	first, recorded, err := s.importNumbers(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("orders: import gifts: %w", err)
	}
	var results []GiftResult
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := store.LockContactsBulk(ctx, tx, in.TenantID); err != nil {
			return err
		}
		var err error
		if results, err = importBatch(ctx, tx, in, first, recorded > 0); err != nil {
			return err
		}
		if in.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, fmt.Errorf("orders: import gifts: %w", err)
	}
	return results, nil
}

// importNumbers counts the batch's rows an earlier call recorded, and
// takes the order numbers of the others not refused already from the
// tenant's counter in one statement, before the transaction (a refill must
// not wait for a second pooled connection inside it). Rows then skipped
// leave their numbers unused, a gap as after any failed order. A dry run
// takes none: its orders, rolled back, are numbered below zero.
func (s *Store) importNumbers(ctx context.Context, in GiftImport) (first, recorded int64, err error) {
	rows, valid := make([]int64, len(in.Rows)), make([]bool, len(in.Rows))
	var nValid int64
	for i, r := range in.Rows {
		rows[i], valid[i] = r.Row, r.FailColumn == ""
		if valid[i] {
			nValid++
		}
	}
	recorded, recordedValid, err := countRecorded(ctx, s.pool, in.TenantID, in.ImportID, rows, valid)
	if err != nil {
		return 0, 0, err
	}
	n := nValid - recordedValid
	switch {
	case in.DryRun:
		return math.MinInt64 / 2, recorded, nil
	case n <= 0:
		return 0, recorded, nil
	}
	if first, err = s.TakeNumbers(ctx, in.TenantID, n); err != nil {
		return 0, 0, fmt.Errorf("take %d order numbers: %w", n, err)
	}
	return first, recorded, nil
}

// countRecorded counts the rows an earlier call recorded, all and those
// of them that are valid. A batch is a run of consecutive rows (less the
// ones the imports service refused itself), so one range scan of the
// primary key reads whatever is recorded of it: 5,000 index probes per
// batch (a sub-select per row) cost about 45 ms on a busy machine for a
// batch that, but for a resend, finds nothing. A join could be planned
// as a scan of the import's rows, which grow with every batch.
func countRecorded(ctx context.Context, q store.Querier, tenantID, importID uuid.UUID, rows []int64, valid []bool) (all, ofValid int64, err error) {
	if len(rows) == 0 {
		return 0, 0, nil
	}
	in := make(map[int64]bool, len(rows))
	lo, hi := rows[0], rows[0]
	for i, r := range rows {
		in[r], lo, hi = valid[i], min(lo, r), max(hi, r)
	}
	qr, err := q.Query(ctx, `SELECT row FROM orders.import_rows WHERE tenant_id = $1 AND import_id = $2 AND row BETWEEN $3 AND $4`,
		tenantID, importID, lo, hi)
	if err != nil {
		return 0, 0, fmt.Errorf("count recorded rows: %w", err)
	}
	var row int64
	if _, err := pgx.ForEachRow(qr, []any{&row}, func() error {
		if v, ok := in[row]; ok {
			all++
			if v {
				ofValid++
			}
		}
		return nil
	}); err != nil {
		return 0, 0, fmt.Errorf("count recorded rows: %w", err)
	}
	return all, ofValid, nil
}

// importBatch does the batch's work inside tx: funds resolved, rows
// staged, outcomes decided, gifts written (numbered from first), outcomes
// recorded and read. replays says whether rows of the batch were recorded
// by an earlier call, as counted before tx began: when another replica
// records them meanwhile, the outcomes' insert fails on their key and
// nothing of this call stays (its retry answers them).
func importBatch(ctx context.Context, tx pgx.Tx, in GiftImport, first int64, replays bool) ([]GiftResult, error) {
	funds, err := readImportFunds(ctx, tx, in.TenantID)
	if err != nil {
		return nil, err
	}
	if err := stageGifts(ctx, tx, in.Rows, funds); err != nil {
		return nil, err
	}
	created, err := decideOutcomes(ctx, tx, in, replays)
	if err != nil {
		return nil, err
	}
	if created > 0 {
		batchID, err := importBatchID(ctx, tx, in.TenantID, in.ImportID)
		if err != nil {
			return nil, err
		}
		if err := writeGifts(ctx, tx, in, batchID, first); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders.import_rows (tenant_id, import_id, row, outcome, order_id, "column", message)
		SELECT $1, $2, row, coalesce(outcome, 'created'), CASE WHEN outcome = 'failed' THEN NULL ELSE order_id END, fail_column, fail_message
		FROM import_gifts WHERE NOT replay`, in.TenantID, in.ImportID); err != nil {
		return nil, fmt.Errorf("record row outcomes: %w", err)
	}
	return readOutcomes(ctx, tx, in.Rows)
}

// importFunds are a tenant's funds by lower-cased name, and its default.
type importFunds struct {
	byName map[string]store.Fund
	// def is the default fund: the only active one, else the active one
	// named General; nil when there is neither.
	def *store.Fund
}

func readImportFunds(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) (importFunds, error) {
	rows, err := tx.Query(ctx, `SELECT `+store.FundColumns+` FROM orders.funds WHERE tenant_id = $1`, tenantID)
	if err != nil {
		return importFunds{}, fmt.Errorf("read funds: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Fund, error) { return store.ScanFund(r) })
	if err != nil {
		return importFunds{}, fmt.Errorf("read funds: %w", err)
	}
	f := importFunds{byName: make(map[string]store.Fund, len(list))}
	var active []store.Fund
	for _, fd := range list {
		f.byName[strings.ToLower(fd.Name)] = fd
		if fd.IsActive {
			active = append(active, fd)
		}
	}
	if g, ok := f.byName["general"]; len(active) != 1 && ok && g.IsActive {
		active = []store.Fund{g}
	}
	if len(active) == 1 {
		f.def = &active[0]
	}
	return f, nil
}

// resolve returns the row's fund, or the column and message refusing it.
func (f importFunds) resolve(name string) (store.Fund, string) {
	if name == "" {
		if f.def == nil {
			return store.Fund{}, "No fund is named and the tenant has no default fund (a single active fund, or an active fund named General)."
		}
		return *f.def, ""
	}
	fd, ok := f.byName[strings.ToLower(name)]
	switch {
	case !ok:
		return store.Fund{}, fmt.Sprintf("Fund '%s' was not found.", name)
	case !fd.IsActive:
		return store.Fund{}, fmt.Sprintf("Fund '%s' is inactive.", fd.Name)
	}
	return fd, ""
}

// stageColumns are the staged row's columns, in COPY order.
var stageColumns = []string{"row", "external_id", "contact_id", "gift_at", "amount_minor", "currency", "fund_id", "fund_name", "deductible",
	"campaign_id", "method", "check_number", "reference", "order_id", "donation_id", "payment_id", "outcome", "fail_column", "fail_message"}

// stageGifts copies the rows into the transaction's temporary table,
// their funds resolved and their ids made. A row whose outcome stays NULL
// is to be created.
func stageGifts(ctx context.Context, tx pgx.Tx, rows []GiftRow, funds importFunds) error {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_gifts (
			row bigint PRIMARY KEY, external_id text NOT NULL, contact_id bigint NOT NULL, gift_at timestamptz, amount_minor bigint NOT NULL,
			currency text NOT NULL, fund_id uuid, fund_name text NOT NULL, deductible boolean NOT NULL, campaign_id text NOT NULL,
			method text NOT NULL, check_number text NOT NULL, reference text NOT NULL, order_id uuid, donation_id uuid, payment_id uuid,
			outcome text, fail_column text NOT NULL, fail_message text NOT NULL, replay boolean NOT NULL DEFAULT false
		) ON COMMIT DROP`); err != nil {
		return fmt.Errorf("create staging table: %w", err)
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"import_gifts"}, stageColumns, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		return stagedRow(rows[i], funds), nil
	}))
	if err != nil {
		return fmt.Errorf("copy rows: %w", err)
	}
	return nil
}

// stagedRow is one row's values in stageColumns order. A row refused
// already, or whose fund is refused, is staged failed.
func stagedRow(r GiftRow, funds importFunds) []any {
	var outcome *string
	failColumn, failMessage := r.FailColumn, r.FailMessage
	var fd store.Fund
	if failColumn == "" {
		var msg string
		if fd, msg = funds.resolve(r.Fund); msg != "" {
			failColumn, failMessage = "fund", msg
		}
	}
	if failColumn != "" {
		failed := ImportFailed
		outcome = &failed
	}
	at := r.Date.Add(12 * time.Hour)
	var fundID *uuid.UUID
	if fd.ID != uuid.Nil {
		fundID = &fd.ID
	}
	return []any{r.Row, r.ExternalID, r.ContactID, at, r.AmountMinor, r.Currency, fundID, fd.Name, fd.IsTaxDeductible,
		r.CampaignID, r.Method, r.CheckNumber, r.Reference, idAt(at), idAt(at), idAt(at), outcome, failColumn, failMessage}
}

// idAt is a UUIDv7 whose time is t rather than now: order ids are
// time-ordered (lists run newest first by id), so an imported gift sorts
// by its date among the others.
func idAt(t time.Time) uuid.UUID {
	id := uuid.Must(uuid.NewV7())
	if ms := t.UnixMilli(); ms > 0 {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(ms))
		copy(id[:6], b[2:])
	}
	return id
}

// decideOutcomes settles the staged rows that are not to be created:
// answered from an earlier call (when replays), skipped for an external id
// already recorded (by an earlier import or batch, or an earlier row of
// this one). The others (outcome NULL) are created; it answers how many.
// The lookups into import_rows and orders are
// sub-selects per staged row, so each is an index lookup whatever the
// (growing, maybe not yet analysed) tables' statistics say: a hash join
// would scan a million orders for every batch.
func decideOutcomes(ctx context.Context, tx pgx.Tx, in GiftImport, replays bool) (int64, error) {
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"answer recorded rows", `WITH found AS (
				SELECT t.row, (SELECT r FROM orders.import_rows r WHERE r.tenant_id = $1 AND r.import_id = $2 AND r.row = t.row) AS r
				FROM import_gifts t)
			UPDATE import_gifts t SET outcome = (f.r).outcome, order_id = (f.r).order_id, fail_column = (f.r)."column",
				fail_message = (f.r).message, replay = true
			FROM found f WHERE f.row = t.row AND (f.r).outcome IS NOT NULL`, []any{in.TenantID, in.ImportID}},
		{"skip recorded external ids", `WITH found AS (
				SELECT t.row, (SELECT o.id FROM orders.orders o WHERE o.tenant_id = $1 AND o.external_id = t.external_id) AS id
				FROM import_gifts t WHERE t.outcome IS NULL AND t.external_id <> '')
			UPDATE import_gifts t SET outcome = 'skipped', order_id = f.id, fail_message = 'A gift with this external id is already recorded.'
			FROM found f WHERE f.row = t.row AND f.id IS NOT NULL`, []any{in.TenantID}},
		{"skip repeated external ids", `UPDATE import_gifts t SET outcome = 'skipped', order_id = f.order_id,
				fail_message = 'An earlier row has the same external id.'
			FROM (SELECT DISTINCT ON (external_id) external_id, row, order_id FROM import_gifts
				WHERE outcome IS NULL AND external_id <> '' ORDER BY external_id, row) f
			WHERE t.outcome IS NULL AND t.external_id = f.external_id AND t.row > f.row`, nil},
	}
	if !replays {
		steps = steps[1:]
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			return 0, fmt.Errorf("%s: %w", st.what, err)
		}
	}
	var created int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM import_gifts WHERE outcome IS NULL`).Scan(&created); err != nil {
		return 0, fmt.Errorf("count created rows: %w", err)
	}
	return created, nil
}

// importBatchID returns the import's batch, opening it on the import's
// first gift ("Import <id>", with its audit row), and holds a key-share
// lock on it, as an order does, so it cannot close under the batch. The
// batch stays open when the import ends (nothing tells orders that it
// has): staff close it like any batch once they have reconciled it; an
// import whose batch was closed before it finished is refused.
func importBatchID(ctx context.Context, tx pgx.Tx, tenantID, importID uuid.UUID) (uuid.UUID, error) {
	newID := uuid.Must(uuid.NewV7())
	tag, err := tx.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name, description, import_id)
		VALUES ($1, $2, 'Import ' || $3::uuid::text, 'Gifts of import ' || $3::uuid::text || '.', $3::uuid)
		ON CONFLICT (tenant_id, import_id) WHERE import_id IS NOT NULL DO NOTHING`, tenantID, newID, importID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("open import batch: %w", err)
	}
	if tag.RowsAffected() == 1 {
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: store.EntityBatch, EntityID: newID.String(),
			Action: audit.Created, Actor: ImportActor(importID)}); err != nil {
			return uuid.Nil, fmt.Errorf("record audit of import batch: %w", err)
		}
	}
	var id uuid.UUID
	var state string
	if err := tx.QueryRow(ctx, `SELECT id, state FROM orders.batches WHERE tenant_id = $1 AND import_id = $2 FOR KEY SHARE`,
		tenantID, importID).Scan(&id, &state); err != nil {
		return uuid.Nil, fmt.Errorf("lock import batch: %w", err)
	}
	if state != store.BatchOpen {
		return uuid.Nil, fmt.Errorf("batch %s: %w", id, ErrImportBatchClosed)
	}
	return id, nil
}

// writeGifts writes the created rows' orders (numbered from first in row
// order; under the survivor of a merged contact: the bulk lock keeps
// merges out, so the redirects read here are final), donation lines and
// payments, and adds the gifts to their contacts' giving summaries.
func writeGifts(ctx context.Context, tx pgx.Tx, in GiftImport, batchID uuid.UUID, first int64) error {
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"insert orders", `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor,
				item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, created_at, updated_at, external_id, import_id)
			SELECT $1, t.order_id, $4 + row_number() OVER (ORDER BY t.row) - 1, coalesce(r.survivor_id, t.contact_id), 'Completed', t.currency, t.amount_minor,
				0, t.amount_minor, CASE WHEN t.deductible THEN t.amount_minor ELSE 0 END, true, false, $3, t.gift_at, now(),
				nullif(t.external_id, ''), $2
			FROM import_gifts t
			LEFT JOIN orders.contact_redirects r ON r.tenant_id = $1 AND r.duplicate_id = t.contact_id
			WHERE t.outcome IS NULL`, []any{in.TenantID, in.ImportID, batchID, first}},
		{"insert donation lines", `INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor,
				is_tax_deductible, campaign_id)
			SELECT $1, order_id, donation_id, 0, fund_id, fund_name, amount_minor, deductible, campaign_id
			FROM import_gifts WHERE outcome IS NULL`, []any{in.TenantID}},
		{"insert payments", `INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status, check_number, reference)
			SELECT $1, order_id, payment_id, 0, method, amount_minor, 'Captured', check_number, reference
			FROM import_gifts WHERE outcome IS NULL`, []any{in.TenantID}},
		// The insert trigger leaves imported gifts to this set-based add
		// (migration 00026): one set of statements per batch, not four
		// per gift at commit.
		{"summarize gifts", `SELECT orders.add_imported_gifts($1, array(SELECT order_id FROM import_gifts WHERE outcome IS NULL))`,
			[]any{in.TenantID}},
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return nil
}

// readOutcomes reads every staged row's outcome, answered in the order of
// rows.
func readOutcomes(ctx context.Context, tx pgx.Tx, rows []GiftRow) ([]GiftResult, error) {
	qr, err := tx.Query(ctx, `SELECT row, coalesce(outcome, 'created'), order_id, fail_column, fail_message FROM import_gifts`)
	if err != nil {
		return nil, fmt.Errorf("read outcomes: %w", err)
	}
	byRow := make(map[int64]GiftResult, len(rows))
	var r GiftResult
	if _, err := pgx.ForEachRow(qr, []any{&r.Row, &r.Outcome, &r.OrderID, &r.Column, &r.Message}, func() error {
		switch {
		case r.Outcome == ImportFailed:
			r.OrderID = nil
		case r.OrderID != nil:
			id := *r.OrderID // not shared with the next row's scan
			r.OrderID = &id
		}
		byRow[r.Row] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read outcomes: %w", err)
	}
	out := make([]GiftResult, len(rows))
	for i, row := range rows {
		out[i] = byRow[row.Row]
	}
	return out, nil
}

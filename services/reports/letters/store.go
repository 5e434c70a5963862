// Package letters makes letter runs: one acknowledgement letter per
// pending gift, as PDF or email, in the background under a lease any
// replica can take over (docs/letters.md, Letter runs).
package letters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/services/reports/render"
)

// Skips counts skipped gifts by reason.
type Skips struct {
	NoEmail, DoNotEmail, DoNotAcknowledge, RenderError int
}

// Total is every skipped gift.
func (s Skips) Total() int { return s.NoEmail + s.DoNotEmail + s.DoNotAcknowledge + s.RenderError }

func (s *Skips) add(o Skips) {
	s.NoEmail += o.NoEmail
	s.DoNotEmail += o.DoNotEmail
	s.DoNotAcknowledge += o.DoNotAcknowledge
	s.RenderError += o.RenderError
}

// Filter is a run's filter as given.
type Filter struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	FundIDs   []string `json:"fundIds,omitempty"`
	BatchID   string   `json:"batchId,omitempty"`
	MinAmount string   `json:"minAmount,omitempty"`
	// CohortID keeps gifts of the cohort's members, computed at every
	// batch (docs/cohorts.md); CohortCurrency is the currency its giving
	// conditions count in (the tenant's when the run started).
	CohortID       string `json:"cohortId,omitempty"`
	CohortCurrency string `json:"cohortCurrency,omitempty"`
}

// Run is a letter run.
type Run struct {
	TenantID         uuid.UUID
	ID               uuid.UUID
	TemplateID       uuid.UUID
	Channel          string
	MarkAcknowledged bool
	Filter           Filter
	PeriodStart      time.Time
	PeriodEnd        time.Time
	FundIDs          []uuid.UUID
	BatchID          *uuid.UUID
	MinAmountMinor   *int64
	Status           string
	Letters, Emailed int
	Skips            Skips
	CursorAt         *time.Time
	CursorID         *uuid.UUID
	Error            string
	Actor            string
	CreatedAt        time.Time
	StartedAt        *time.Time
	FinishedAt       *time.Time
}

// snapshot is the run's status and counts by wire name, for its audit
// rows (letter_run.updated carries the counts at the end).
func (r Run) snapshot() map[string]any {
	return map[string]any{"status": r.Status, "letters": r.Letters, "emailed": r.Emailed, "skipped": r.Skips.Total(),
		"skippedReasons": map[string]int{"noEmail": r.Skips.NoEmail, "doNotEmail": r.Skips.DoNotEmail,
			"doNotAcknowledge": r.Skips.DoNotAcknowledge, "renderError": r.Skips.RenderError}}
}

// CohortMembers lists the members of a tenant's cohort now; a cohort the
// tenant does not have is an apperr not-found.
type CohortMembers func(ctx context.Context, tenant uuid.UUID, currency, cohortID string) ([]int64, error)

// Store reads and writes reports.letter_runs and reports.letters.
type Store struct {
	pool *pgxpool.Pool
	// reads serves a run's reading phase (Gifts): a read replica within
	// its lag bound, else pool (docs/scaling.md). The runs, their leases
	// and their letters stay on pool.
	reads *db.ReadPool
	// Members evaluates a run's cohort filter; nil: runs cannot filter by
	// cohort.
	Members CohortMembers
}

// NewStore returns the store on pool, reading gifts from pool too.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, reads: db.NewReadPool(pool)} }

// WithReads has the runs' gifts read through reads (nil: the primary);
// it returns s.
func (s *Store) WithReads(reads *db.ReadPool) *Store {
	if reads != nil {
		s.reads = reads
	}
	return s
}

const runColumns = `tenant_id, id, template_id, channel, mark_acknowledged, filter, period_start, period_end, fund_ids, batch_id,
	min_amount_minor, status, letters, emailed, skipped_no_email, skipped_do_not_email, skipped_do_not_acknowledge, skipped_render_error,
	cursor_at, cursor_id, error, actor, created_at, started_at, finished_at`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	var filter []byte
	err := row.Scan(&r.TenantID, &r.ID, &r.TemplateID, &r.Channel, &r.MarkAcknowledged, &filter, &r.PeriodStart, &r.PeriodEnd, &r.FundIDs,
		&r.BatchID, &r.MinAmountMinor, &r.Status, &r.Letters, &r.Emailed, &r.Skips.NoEmail, &r.Skips.DoNotEmail, &r.Skips.DoNotAcknowledge,
		&r.Skips.RenderError, &r.CursorAt, &r.CursorID, &r.Error, &r.Actor, &r.CreatedAt, &r.StartedAt, &r.FinishedAt)
	if err != nil {
		return r, fmt.Errorf("read letter run: %w", db.Interpret(err))
	}
	if err := json.Unmarshal(filter, &r.Filter); err != nil {
		return r, fmt.Errorf("read letter run filter: %w", err)
	}
	return r, nil
}

func record(ctx context.Context, tx pgx.Tx, r Run, action string, changes map[string]audit.Change, actor string) error {
	e := audit.Entry{TenantID: r.TenantID.String(), EntityType: "LetterRun", EntityID: r.ID.String(), Action: action, Actor: actor, Changes: changes}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// Create queues a run with its audit row.
func (s *Store) Create(ctx context.Context, r Run) (Run, error) {
	filter, err := json.Marshal(r.Filter)
	if err != nil {
		return r, err
	}
	var out Run
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scanRun(tx.QueryRow(ctx, `INSERT INTO reports.letter_runs (tenant_id, id, template_id, channel, mark_acknowledged, filter,
				period_start, period_end, fund_ids, batch_id, min_amount_minor, actor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+runColumns,
			r.TenantID, r.ID, r.TemplateID, r.Channel, r.MarkAcknowledged, filter, r.PeriodStart, r.PeriodEnd, r.FundIDs, r.BatchID,
			r.MinAmountMinor, r.Actor))
		if err != nil {
			return err
		}
		return record(ctx, tx, out, audit.Created, nil, r.Actor)
	})
	if err != nil {
		return out, fmt.Errorf("letters: create run: %w", err)
	}
	return out, nil
}

// Get reads a run; db.ErrNotFound for another tenant's.
func (s *Store) Get(ctx context.Context, tenant, id uuid.UUID) (Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM reports.letter_runs WHERE tenant_id = $1 AND id = $2`, tenant, id))
	if err != nil {
		return r, fmt.Errorf("letters: get run %s: %w", id, err)
	}
	return r, nil
}

// TemplateInUse reports, inside tx, whether a queued or running run uses
// the template (templates.Server.InUse).
func TemplateInUse(ctx context.Context, tx pgx.Tx, tenant, id uuid.UUID) (bool, error) {
	var used bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reports.letter_runs WHERE tenant_id = $1 AND template_id = $2
		AND status IN ('queued', 'running'))`, tenant, id).Scan(&used)
	return used, err
}

// Claim gives owner the lease of the oldest unfinished run no live lease
// holds, for lease; ok is false when there is none.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (r Run, ok bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM reports.letter_runs
			WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < now())
			ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`))
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		r, err = scanRun(tx.QueryRow(ctx, `UPDATE reports.letter_runs SET status = 'running', lease_owner = $3,
				lease_until = now() + $4::interval, started_at = coalesce(started_at, now())
			WHERE tenant_id = $1 AND id = $2 RETURNING `+runColumns, cur.TenantID, cur.ID, owner, lease.String()))
		if err != nil {
			return err
		}
		ok = true
		if cur.Status == "queued" {
			return record(ctx, tx, r, audit.Updated, map[string]audit.Change{"status": {Old: cur.Status, New: r.Status}}, "system")
		}
		return nil
	})
	if err != nil {
		return r, false, fmt.Errorf("letters: claim run: %w", err)
	}
	return r, ok, nil
}

// ErrLeaseLost is a batch's or finish's answer when the run's lease is
// no longer the writer's: another replica took the run over.
var ErrLeaseLost = errors.New("letters: lease lost")

// Letter is one made letter.
type Letter struct {
	OrderID   uuid.UUID
	At        time.Time
	ContactID int64
	Document  render.Document
	// Mail is the message of an email letter (nil for pdf).
	Mail *mail.Message
}

// Batch is what one batch made: its letters and skips, and the gift the
// cursor moves to.
type Batch struct {
	Letters  []Letter
	Skips    Skips
	CursorAt time.Time
	CursorID uuid.UUID
}

// SaveBatch writes a batch's letters (queuing the email ones' messages),
// adds its counts and moves the cursor, renewing the lease, in one
// transaction that first checks the lease is still owner's.
func (s *Store) SaveBatch(ctx context.Context, r Run, owner string, b Batch, lease time.Duration) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var seq int64
		err := tx.QueryRow(ctx, `SELECT letters + emailed FROM reports.letter_runs WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3
			AND status = 'running' FOR UPDATE`, r.TenantID, r.ID, owner).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		emailed, err := insertLetters(ctx, tx, r, b.Letters, seq)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE reports.letter_runs SET letters = letters + $3, emailed = emailed + $4,
				skipped_no_email = skipped_no_email + $5, skipped_do_not_email = skipped_do_not_email + $6,
				skipped_do_not_acknowledge = skipped_do_not_acknowledge + $7, skipped_render_error = skipped_render_error + $8,
				cursor_at = $9, cursor_id = $10, lease_until = now() + $11::interval
			WHERE tenant_id = $1 AND id = $2`, r.TenantID, r.ID, len(b.Letters), emailed, b.Skips.NoEmail, b.Skips.DoNotEmail,
			b.Skips.DoNotAcknowledge, b.Skips.RenderError, b.CursorAt, b.CursorID, lease.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("letters: save batch of run %s: %w", r.ID, err)
	}
	return nil
}

// insertLetters writes the letters, queuing each email letter's message
// in the same transaction; it answers how many were queued.
func insertLetters(ctx context.Context, tx pgx.Tx, r Run, letters []Letter, seq int64) (int, error) {
	emailed := 0
	entries := make([]audit.Entry, len(letters))
	for i, l := range letters {
		entries[i] = audit.Entry{TenantID: r.TenantID.String(), EntityType: "Letter", EntityID: LetterID(r.ID, l.OrderID),
			Action: audit.Created, Actor: "system"}
		doc, err := json.Marshal(l.Document)
		if err != nil {
			return 0, err
		}
		var mailID *uuid.UUID
		if l.Mail != nil {
			id, err := mail.Enqueue(ctx, tx, *l.Mail)
			if err != nil {
				return 0, err
			}
			mailID, emailed = &id, emailed+1
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reports.letters (tenant_id, run_id, order_id, seq, contact_id, document, mail_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.TenantID, r.ID, l.OrderID, seq+int64(i)+1, l.ContactID, doc, mailID); err != nil {
			return 0, err
		}
	}
	// One letter.created per letter, in one statement per batch.
	b := &pgx.Batch{}
	if err := audit.QueueAll(ctx, b, entries); err != nil {
		return 0, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("record letters' audit: %w", err)
	}
	return emailed, nil
}

// LetterID is a letter's id in the event feed: its run and its gift,
// "<run id>:<order id>" (a gift has at most one letter per run).
func LetterID(run, order uuid.UUID) string { return run.String() + ":" + order.String() }

// Finish ends a run (succeeded or failed, with the reason) and writes
// letter_run.updated with its counts; ErrLeaseLost when owner no longer
// holds it.
func (s *Store) Finish(ctx context.Context, r Run, owner, status, reason string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM reports.letter_runs WHERE tenant_id = $1 AND id = $2
			AND lease_owner = $3 AND status = 'running' FOR UPDATE`, r.TenantID, r.ID, owner))
		if errors.Is(err, db.ErrNotFound) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		done, err := scanRun(tx.QueryRow(ctx, `UPDATE reports.letter_runs SET status = $3, error = $4, finished_at = now(),
				lease_owner = NULL, lease_until = NULL
			WHERE tenant_id = $1 AND id = $2 RETURNING `+runColumns, r.TenantID, r.ID, status, reason))
		if err != nil {
			return err
		}
		// The end's row carries every count, changed or not: a consumer of
		// letter_run.updated reads the run's outcome from it.
		changes := map[string]audit.Change{}
		before, after := cur.snapshot(), done.snapshot()
		for k, v := range after {
			changes[k] = audit.Change{Old: before[k], New: v}
		}
		return record(ctx, tx, done, audit.Updated, changes, "system")
	})
	if err != nil {
		return fmt.Errorf("letters: finish run %s: %w", r.ID, err)
	}
	return nil
}

// Documents reads the letters of the merged PDF in the order they were
// made: a pdf run's all, an email run's whose message failed for good.
func (s *Store) Documents(ctx context.Context, r Run, fn func(render.Document) error) error {
	rows, _ := s.pool.Query(ctx, `SELECT l.document FROM reports.letters l
		LEFT JOIN mail.outbox m ON m.id = l.mail_id
		WHERE l.tenant_id = $1 AND l.run_id = $2 AND (l.mail_id IS NULL OR m.failed_at IS NOT NULL)
		ORDER BY l.seq`, r.TenantID, r.ID)
	var raw []byte
	_, err := pgx.ForEachRow(rows, []any{&raw}, func() error {
		var d render.Document
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		return fn(d)
	})
	if err != nil {
		return fmt.Errorf("letters: documents of run %s: %w", r.ID, err)
	}
	return nil
}

package letters

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/apperr"
)

// Gift is a gift a run may thank, with what decides whether it is
// skipped.
type Gift struct {
	OrderID          uuid.UUID
	At               time.Time
	ContactID        int64
	Email            string
	DoNotEmail       bool
	DoNotAcknowledge bool
}

// giftsSQL reads the run's next gifts after its cursor, oldest first:
// standing gifts of the period still pending, or already acknowledged by
// this run (a run taken over after a crash between its claim and its
// save makes that batch again). It reads only the views orders and
// contacts publish.
const giftsSQL = `SELECT a.order_id, a.created_at, a.contact_id, coalesce(m.email, ''), coalesce(p.do_not_email, false),
	coalesce(p.do_not_acknowledge, false)
FROM orders.report_acknowledgements_v1 a
LEFT JOIN contacts.report_contact_mailing_v1 m ON m.tenant_id = a.tenant_id AND m.contact_id = a.contact_id
LEFT JOIN contacts.report_contact_preferences_v1 p ON p.tenant_id = a.tenant_id AND p.contact_id = a.contact_id
WHERE a.tenant_id = $1 AND a.status IN ('Completed', 'PartiallyRefunded') AND a.created_at >= $2 AND a.created_at < $3
  AND (a.acknowledgement_status = 'pending' OR a.acknowledgement_run_id = $4)
  AND (cardinality($5::uuid[]) = 0 OR a.fund_ids && $5::uuid[])
  AND ($6::uuid IS NULL OR a.batch_id = $6)
  AND ($7::bigint IS NULL OR a.donation_net_minor >= $7)
  AND ($8::timestamptz IS NULL OR (a.created_at, a.order_id) > ($8, $9::uuid))
  AND ($11::bigint[] IS NULL OR a.contact_id = ANY($11::bigint[]))
ORDER BY a.created_at, a.order_id
LIMIT $10`

// Gifts reads up to limit of the run's gifts after its cursor.
// A run filtered by a cohort reads its members at each batch: a gift of
// a contact who joined or left the cohort since the run started follows
// the cohort as it is now.
func (s *Store) Gifts(ctx context.Context, r Run, limit int) ([]Gift, error) {
	var members []int64
	if r.Filter.CohortID != "" {
		if s.Members == nil {
			return nil, fmt.Errorf("letters: run %s filters by cohort, and no cohorts are wired", r.ID)
		}
		ids, err := s.Members(ctx, r.TenantID, r.Filter.CohortCurrency, r.Filter.CohortID)
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
			return nil, failure{reason: "The run's cohort was deleted."}
		}
		if err != nil {
			return nil, fmt.Errorf("letters: members of cohort %s: %w", r.Filter.CohortID, err)
		}
		members = append([]int64{}, ids...)
	}
	// The gifts may lag (a read replica): a gift another run has just
	// acknowledged may still read as pending, and the orders service's
	// claim (on its primary) then refuses it to this run.
	var out []Gift
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		rows, _ := p.Query(ctx, giftsSQL, r.TenantID, r.PeriodStart, r.PeriodEnd, r.ID, r.FundIDs, r.BatchID, r.MinAmountMinor,
			r.CursorAt, r.CursorID, limit, members)
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Gift, error) {
			var g Gift
			err := row.Scan(&g.OrderID, &g.At, &g.ContactID, &g.Email, &g.DoNotEmail, &g.DoNotAcknowledge)
			return g, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("letters: gifts of run %s: %w", r.ID, err)
	}
	return out, nil
}

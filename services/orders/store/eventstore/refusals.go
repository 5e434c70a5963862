package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Reasons a notification for a known tenant is refused (the operations
// log shows them).
const (
	RefusedBadSignature     = "bad_signature"
	RefusedUnappliable      = "unappliable"
	RefusedChangeInProgress = "change_in_progress"
)

// RecordRefusal counts a refused notification in its tenant's, reason's
// and hour's row. It is its own statement, outside any transaction: the
// refusal is answered whether or not it is counted.
func (s *Store) RecordRefusal(ctx context.Context, tenant uuid.UUID, provider, reason string, at time.Time) error {
	at = at.UTC()
	_, err := s.pool.Exec(ctx, `
		INSERT INTO orders.refused_notifications (tenant_id, provider, reason, hour, first_at, last_at)
		VALUES ($1, $2, $3, date_trunc('hour', $4::timestamptz), $4, $4)
		ON CONFLICT (tenant_id, provider, reason, hour)
		DO UPDATE SET count = refused_notifications.count + 1, last_at = greatest(refused_notifications.last_at, EXCLUDED.last_at)`,
		tenant, provider, reason, at)
	if err != nil {
		return fmt.Errorf("orders: record a refused notification: %w", err)
	}
	return nil
}

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Tribute reads a gift's dedication (its first donation line's) from
// orders.report_acknowledgements_v1: its type as a letter prints it ("in
// honor of", "in memory of") and the honoree's name; empty when none.
func (s *Store) Tribute(ctx context.Context, tenantID, orderID uuid.UUID) (kind, name string, err error) {
	var typ *string
	err = s.pool.QueryRow(ctx, `SELECT tribute->>'type', coalesce(tribute->>'name', '') FROM orders.report_acknowledgements_v1
		WHERE tenant_id = $1 AND order_id = $2 AND tribute IS NOT NULL`, tenantID, orderID).Scan(&typ, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reports: tribute of order %s: %w", orderID, err)
	}
	switch {
	case typ == nil:
	case *typ == "InHonorOf":
		kind = "in honor of"
	case *typ == "InMemoryOf":
		kind = "in memory of"
	default:
		kind = *typ
	}
	return kind, name, nil
}

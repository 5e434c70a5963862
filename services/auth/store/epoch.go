package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// bumpEpoch moves the validation epoch inside tx, so that a gateway reading
// the epoch sees the change exactly when it can see what changed.
func bumpEpoch(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `UPDATE auth.validation_epoch SET epoch = epoch + 1`); err != nil {
		return fmt.Errorf("bump validation epoch: %w", err)
	}
	return nil
}

// Epoch reads the validation epoch.
func (s *Store) Epoch(ctx context.Context) (int64, error) {
	var e int64
	if err := s.pool.QueryRow(ctx, `SELECT epoch FROM auth.validation_epoch`).Scan(&e); err != nil {
		return 0, fmt.Errorf("auth: read validation epoch: %w", err)
	}
	return e, nil
}

// BumpEpoch moves the validation epoch inside tx, for a room of the
// service that changes what a validation carries (a tenant's currency).
func BumpEpoch(ctx context.Context, tx pgx.Tx) error { return bumpEpoch(ctx, tx) }

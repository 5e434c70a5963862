package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/features"
)

// ErrSlugTaken is returned when a tenant slug is already used.
var ErrSlugTaken = errors.New("slug taken")

// Tenant is a row of auth.tenants.
type Tenant struct {
	ID              uuid.UUID
	Name            string
	Slug            string
	Active          bool
	Features        []string
	DefaultCurrency string
	CreatedAt       time.Time
	// EventsSince is when the tenant last began to fire events (Fires went
	// from false to true); nil when no such switch is recorded.
	EventsSince *time.Time
}

// Fires reports whether the tenant's events are delivered: it is active
// and has webhooks:enabled.
func (t Tenant) Fires() bool {
	return t.Active && slices.Contains(t.Features, features.Webhooks)
}

const tenantColumns = `id, name, slug, active, features, default_currency, created_at, events_since`

func scanTenant(row pgx.Row) (Tenant, error) {
	var t Tenant
	if err := row.Scan(&t.ID, &t.Name, &t.Slug, &t.Active, &t.Features, &t.DefaultCurrency, &t.CreatedAt, &t.EventsSince); err != nil {
		return Tenant{}, fmt.Errorf("read tenant: %w", db.Interpret(err))
	}
	return t, nil
}

// CreateTenant inserts t (ID is set here) and its audit row.
func (s *Store) CreateTenant(ctx context.Context, t Tenant, actor string) (Tenant, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Tenant{}, fmt.Errorf("auth: create tenant: %w", err)
	}
	var out Tenant
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scanTenant(tx.QueryRow(ctx, `
			INSERT INTO auth.tenants (id, name, slug, features, default_currency, events_since)
			VALUES ($1, $2, $3, $4, $5, CASE WHEN $6 THEN clock_timestamp() END)
			RETURNING `+tenantColumns, id, t.Name, t.Slug, t.Features, t.DefaultCurrency, Tenant{Active: true, Features: t.Features}.Fires()))
		if err != nil {
			return fmt.Errorf("insert tenant: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: id.String(), EntityType: "Tenant", EntityID: id.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if db.IsUniqueViolation(err, "tenants_slug_key") {
		return Tenant{}, fmt.Errorf("auth: create tenant %s: %w", t.Slug, ErrSlugTaken)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("auth: create tenant: %w", err)
	}
	return out, nil
}

// markEventsSince records that the tenant begins to fire events now. It is
// the transaction's last statement and reads the clock, not the
// transaction's start: an event committed before this switch commits
// occurred (its transaction started) before its own commit, so at the
// latest a statement's length before the mark; see docs/webhooks.md.
func markEventsSince(ctx context.Context, tx pgx.Tx, t *Tenant) error {
	if err := tx.QueryRow(ctx, `UPDATE auth.tenants SET events_since = clock_timestamp() WHERE id = $1 RETURNING events_since`, t.ID).
		Scan(&t.EventsSince); err != nil {
		return fmt.Errorf("mark events since: %w", err)
	}
	return nil
}

// GetTenant reads one tenant.
func (s *Store) GetTenant(ctx context.Context, id uuid.UUID) (Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantColumns+` FROM auth.tenants WHERE id = $1`, id))
	if err != nil {
		return Tenant{}, fmt.Errorf("auth: get tenant %s: %w", id, err)
	}
	return t, nil
}

// UpdateTenant applies change to the tenant under a row lock and records
// what changed: its active flag, features and default currency, each of
// which a validation carries to the services, so any change of them moves
// the validation epoch (cached validations are dropped).
func (s *Store) UpdateTenant(ctx context.Context, id uuid.UUID, actor string, change func(*Tenant)) (Tenant, error) {
	var out Tenant
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanTenant(tx.QueryRow(ctx, `SELECT `+tenantColumns+` FROM auth.tenants WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return fmt.Errorf("lock tenant: %w", err)
		}
		after := before
		after.Features = append([]string(nil), before.Features...)
		change(&after)
		out, err = scanTenant(tx.QueryRow(ctx, `
			UPDATE auth.tenants SET active = $2, features = $3, default_currency = $4, updated_at = now()
			WHERE id = $1 RETURNING `+tenantColumns, id, after.Active, after.Features, after.DefaultCurrency))
		if err != nil {
			return fmt.Errorf("update tenant row: %w", err)
		}
		changes := audit.Diff(
			map[string]any{"active": before.Active, "features": before.Features, "defaultCurrency": before.DefaultCurrency},
			map[string]any{"active": out.Active, "features": out.Features, "defaultCurrency": out.DefaultCurrency})
		if changes == nil {
			return nil
		}
		// Activation and new features cannot make a cached validation
		// wrong, but one epoch rule for every tenant change is simpler to
		// trust than a rule per field.
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: id.String(), EntityType: "Tenant", EntityID: id.String(),
			Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		if !before.Fires() && out.Fires() {
			return markEventsSince(ctx, tx, &out)
		}
		return nil
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("auth: update tenant %s: %w", id, err)
	}
	return out, nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// ProcessorEntityType is the audit entity of a tenant's processor
// configuration; its entity id is the tenant id.
const ProcessorEntityType = "TenantProcessor"

// Processor is a row of auth.tenant_processors. The boxes are sealed by
// the caller; the store never sees a key in plain text.
type Processor struct {
	TenantID         uuid.UUID
	Provider         string
	Mode             string
	SecretKeyBox     []byte
	WebhookSecretBox []byte
	// KeyHint shows which key it is (sk_test_…abcd) without it.
	KeyHint   string
	UpdatedAt time.Time
}

// TenantProcessor is a tenant's state with its processor, if any.
type TenantProcessor struct {
	TenantID     uuid.UUID
	TenantActive bool
	// Processor is nil when the tenant has none.
	Processor *Processor
}

// auditFields are the properties an update's audit row compares: never
// a box, whose bytes change on every seal and which are secret anyway.
func (p Processor) auditFields() map[string]any {
	return map[string]any{"provider": p.Provider, "mode": p.Mode, "keyHint": p.KeyHint, "updatedAt": p.UpdatedAt}
}

// SetProcessor creates or replaces the tenant's processor, moves the
// validation epoch (callers cache credentials under it) and records the
// change, all in one transaction. db.ErrNotFound means no such tenant.
func (s *Store) SetProcessor(ctx context.Context, p Processor, actor string) (Processor, error) {
	var out Processor
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The row lock orders concurrent sets of one tenant, so each audit
		// row's old values are the ones it replaced.
		var before Processor
		err := tx.QueryRow(ctx, `
			SELECT provider, mode, key_hint, updated_at FROM auth.tenant_processors
			WHERE tenant_id = $1 FOR UPDATE`, p.TenantID).Scan(&before.Provider, &before.Mode, &before.KeyHint, &before.UpdatedAt)
		existed := err == nil
		if err != nil && !db.IsNoRows(err) {
			return fmt.Errorf("lock tenant processor: %w", err)
		}
		out = p
		err = tx.QueryRow(ctx, `
			INSERT INTO auth.tenant_processors (tenant_id, provider, mode, secret_key_box, webhook_secret_box, key_hint)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant_id) DO UPDATE SET provider = EXCLUDED.provider, mode = EXCLUDED.mode,
				secret_key_box = EXCLUDED.secret_key_box, webhook_secret_box = EXCLUDED.webhook_secret_box,
				key_hint = EXCLUDED.key_hint, updated_at = clock_timestamp()
			RETURNING updated_at`,
			p.TenantID, p.Provider, p.Mode, p.SecretKeyBox, p.WebhookSecretBox, p.KeyHint).Scan(&out.UpdatedAt)
		if err != nil {
			return fmt.Errorf("upsert tenant processor: %w", err)
		}
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		e := audit.Entry{TenantID: p.TenantID.String(), EntityType: ProcessorEntityType, EntityID: p.TenantID.String(), Action: audit.Created, Actor: actor}
		if existed {
			// updated_at always moves, so a replaced key with the same
			// hint (a rotated webhook secret) still shows as a change.
			e.Action, e.Changes = audit.Updated, audit.Diff(before.auditFields(), out.auditFields())
		}
		if err := audit.Record(ctx, tx, e); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if errors.Is(db.Interpret(err), db.ErrForeignKey) {
		// The tenant does not exist.
		return Processor{}, fmt.Errorf("auth: set tenant processor: tenant %s: %w: %w", p.TenantID, db.ErrNotFound, err)
	}
	if err != nil {
		return Processor{}, fmt.Errorf("auth: set tenant processor: %w", err)
	}
	return out, nil
}

// ClearProcessor deletes the tenant's processor and records it; cleared is
// false when there was none (nothing is written then). db.ErrNotFound means
// no such tenant.
func (s *Store) ClearProcessor(ctx context.Context, tenantID uuid.UUID, actor string) (cleared bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth.tenants WHERE id = $1)`, tenantID).Scan(&exists); err != nil {
			return fmt.Errorf("find tenant: %w", err)
		}
		if !exists {
			return fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM auth.tenant_processors WHERE tenant_id = $1`, tenantID)
		if err != nil {
			return fmt.Errorf("delete tenant processor: %w", err)
		}
		if cleared = tag.RowsAffected() == 1; !cleared {
			return nil
		}
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: ProcessorEntityType,
			EntityID: tenantID.String(), Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("auth: clear tenant processor: %w", err)
	}
	return cleared, nil
}

const tenantProcessorQuery = `
	SELECT t.id, t.active, p.provider, p.mode, p.secret_key_box, p.webhook_secret_box, p.key_hint, p.updated_at
	FROM auth.tenants t LEFT JOIN auth.tenant_processors p ON p.tenant_id = t.id`

// TenantProcessorByID reads the tenant's state and processor in one
// statement. db.ErrNotFound means no such tenant.
func (s *Store) TenantProcessorByID(ctx context.Context, tenantID uuid.UUID) (TenantProcessor, error) {
	tp, err := s.tenantProcessor(ctx, tenantProcessorQuery+` WHERE t.id = $1`, tenantID)
	if err != nil {
		return TenantProcessor{}, fmt.Errorf("auth: get processor of tenant %s: %w", tenantID, err)
	}
	return tp, nil
}

// TenantProcessorBySlug is TenantProcessorByID for a tenant named by its
// slug, as the processor's notification route names it.
func (s *Store) TenantProcessorBySlug(ctx context.Context, slug string) (TenantProcessor, error) {
	tp, err := s.tenantProcessor(ctx, tenantProcessorQuery+` WHERE t.slug = $1`, slug)
	if err != nil {
		return TenantProcessor{}, fmt.Errorf("auth: get processor of tenant %s: %w", slug, err)
	}
	return tp, nil
}

func (s *Store) tenantProcessor(ctx context.Context, query string, arg any) (TenantProcessor, error) {
	var (
		tp                   TenantProcessor
		provider, mode, hint *string
		keyBox, webhookBox   []byte
		updatedAt            *time.Time
	)
	err := s.pool.QueryRow(ctx, query, arg).Scan(&tp.TenantID, &tp.TenantActive, &provider, &mode, &keyBox, &webhookBox, &hint, &updatedAt)
	if err != nil {
		return TenantProcessor{}, fmt.Errorf("read tenant processor: %w", db.Interpret(err))
	}
	if provider != nil {
		tp.Processor = &Processor{TenantID: tp.TenantID, Provider: *provider, Mode: *mode, SecretKeyBox: keyBox,
			WebhookSecretBox: webhookBox, KeyHint: *hint, UpdatedAt: *updatedAt}
	}
	return tp, nil
}

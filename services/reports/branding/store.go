package branding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Branding is a tenant's colors, signature and logo facts (the logo's
// bytes are read apart, by Store.Logo).
type Branding struct {
	TenantID       uuid.UUID
	PrimaryColor   string
	SecondaryColor *string
	SignatureName  *string
	SignatureTitle *string
	LogoType       string
	LogoWidth      int
	LogoHeight     int
	UpdatedAt      time.Time
}

// snapshot is the branding's properties by wire name, for the audit row's
// changes.
func (b Branding) snapshot() map[string]any {
	return map[string]any{"primaryColor": b.PrimaryColor, "secondaryColor": b.SecondaryColor, "signatureName": b.SignatureName,
		"signatureTitle": b.SignatureTitle, "logoWidth": b.LogoWidth, "logoHeight": b.LogoHeight, "logoType": b.LogoType}
}

// Store reads and writes reports.branding.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns the branding store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `tenant_id, primary_color, secondary_color, signature_name, signature_title, coalesce(logo_type, ''), logo_width, logo_height, updated_at`

func scan(r pgx.Row) (Branding, error) {
	var b Branding
	err := r.Scan(&b.TenantID, &b.PrimaryColor, &b.SecondaryColor, &b.SignatureName, &b.SignatureTitle, &b.LogoType, &b.LogoWidth, &b.LogoHeight, &b.UpdatedAt)
	if err != nil {
		return b, fmt.Errorf("read branding: %w", db.Interpret(err))
	}
	return b, nil
}

// Get reads the tenant's branding; the empty branding (no colors, no
// logo, zero UpdatedAt) when it never saved one.
func (s *Store) Get(ctx context.Context, tenant uuid.UUID) (Branding, error) {
	b, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM reports.branding WHERE tenant_id = $1`, tenant))
	if errors.Is(err, db.ErrNotFound) {
		return Branding{TenantID: tenant}, nil
	}
	if err != nil {
		return b, fmt.Errorf("branding: get: %w", err)
	}
	return b, nil
}

// Logo reads the tenant's logo; db.ErrNotFound when it has none.
func (s *Store) Logo(ctx context.Context, tenant uuid.UUID) (Logo, error) {
	var l Logo
	err := s.pool.QueryRow(ctx, `SELECT logo_type, logo, logo_width, logo_height FROM reports.branding
		WHERE tenant_id = $1 AND logo IS NOT NULL`, tenant).Scan(&l.ContentType, &l.Data, &l.Width, &l.Height)
	if err != nil {
		return l, fmt.Errorf("branding: get logo: %w", db.Interpret(err))
	}
	return l, nil
}

// Put saves the tenant's colors and signature (the logo is kept) and
// writes the audit row (Branding Created the first time, Updated with the
// changed properties after; nothing when nothing changed).
func (s *Store) Put(ctx context.Context, b Branding, actor string) (Branding, error) {
	return s.write(ctx, b.TenantID, actor, nil, func(tx pgx.Tx) pgx.Row {
		return tx.QueryRow(ctx, `INSERT INTO reports.branding (tenant_id, primary_color, secondary_color, signature_name, signature_title)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant_id) DO UPDATE SET primary_color = $2, secondary_color = $3, signature_name = $4, signature_title = $5,
				updated_at = now()
			RETURNING `+columns, b.TenantID, b.PrimaryColor, b.SecondaryColor, b.SignatureName, b.SignatureTitle)
	})
}

// PutLogo replaces the tenant's logo and writes the audit row.
func (s *Store) PutLogo(ctx context.Context, tenant uuid.UUID, l Logo, actor string) (Branding, error) {
	logoChange := map[string]audit.Change{"logo": {Old: nil, New: fmt.Sprintf("%s %d×%d", l.ContentType, l.Width, l.Height)}}
	return s.write(ctx, tenant, actor, logoChange, func(tx pgx.Tx) pgx.Row {
		return tx.QueryRow(ctx, `INSERT INTO reports.branding (tenant_id, logo, logo_type, logo_width, logo_height)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant_id) DO UPDATE SET logo = $2, logo_type = $3, logo_width = $4, logo_height = $5, updated_at = now()
			RETURNING `+columns, tenant, l.Data, l.ContentType, l.Width, l.Height)
	})
}

// write runs one upsert under the row's lock with its audit row: the
// changed properties, plus extra (a new logo is a change even at the same
// size: the row records the facts, not the pixels). An update that changes
// nothing writes no audit row.
func (s *Store) write(ctx context.Context, tenant uuid.UUID, actor string, extra map[string]audit.Change, upsert func(pgx.Tx) pgx.Row) (Branding, error) {
	var out Branding
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM reports.branding WHERE tenant_id = $1 FOR UPDATE`, tenant))
		existed := err == nil
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("lock branding: %w", err)
		}
		if out, err = scan(upsert(tx)); err != nil {
			return fmt.Errorf("write branding: %w", err)
		}
		e := audit.Entry{TenantID: tenant.String(), EntityType: "Branding", EntityID: tenant.String(), Action: audit.Created, Actor: actor}
		if existed {
			e.Action, e.Changes = audit.Updated, audit.Diff(old.snapshot(), out.snapshot())
			for k, c := range extra {
				if e.Changes == nil {
					e.Changes = map[string]audit.Change{}
				}
				e.Changes[k] = c
			}
			if len(e.Changes) == 0 {
				return nil
			}
		}
		if err := audit.Record(ctx, tx, e); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("branding: put: %w", err)
	}
	return out, nil
}

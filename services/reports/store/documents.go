package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Address is a postal address as a profile stores it and a contact's
// primary address reads.
type Address struct {
	Line1         string  `json:"line1"`
	Line2         *string `json:"line2,omitempty"`
	City          *string `json:"city,omitempty"`
	StateProvince *string `json:"stateProvince,omitempty"`
	PostalCode    *string `json:"postalCode,omitempty"`
	Country       *string `json:"country,omitempty"`
}

// Profile is a tenant's organization profile.
type Profile struct {
	TenantID       uuid.UUID
	LegalName      string
	TaxID          string
	Address        Address
	Email          string
	Phone          string
	Website        string
	SignatoryName  string
	SignatoryTitle string
	ReceiptFooter  string
	Country        string
	TimeZone       string
	UpdatedAt      time.Time
}

// snapshot is the profile's properties by wire name, for the audit row's
// changes. The time zone is not among them: it is the tenant settings'
// (auth), whose own row (tenant_settings.updated) records its change; the
// time_zone column is written but read only by this module's tests.
func (p Profile) snapshot() map[string]any {
	return map[string]any{"legalName": p.LegalName, "taxId": p.TaxID, "address": p.Address, "email": p.Email, "phone": p.Phone,
		"website": p.Website, "signatoryName": p.SignatoryName, "signatoryTitle": p.SignatoryTitle, "receiptFooter": p.ReceiptFooter,
		"country": p.Country}
}

const profileColumns = `tenant_id, legal_name, tax_id, address, email, phone, website, signatory_name, signatory_title, receipt_footer, country, time_zone, updated_at`

func scanProfile(r pgx.Row) (Profile, error) {
	var p Profile
	var addr []byte
	err := r.Scan(&p.TenantID, &p.LegalName, &p.TaxID, &addr, &p.Email, &p.Phone, &p.Website, &p.SignatoryName, &p.SignatoryTitle,
		&p.ReceiptFooter, &p.Country, &p.TimeZone, &p.UpdatedAt)
	if err != nil {
		// No row: the tenant never saved a profile, db.ErrNotFound.
		return p, fmt.Errorf("read profile: %w", db.Interpret(err))
	}
	if err := json.Unmarshal(addr, &p.Address); err != nil {
		return p, fmt.Errorf("read profile address: %w", err)
	}
	return p, nil
}

// Profile reads the tenant's organization profile; db.ErrNotFound when it
// has none.
func (s *Store) Profile(ctx context.Context, tenantID uuid.UUID) (Profile, error) {
	p, err := scanProfile(s.pool.QueryRow(ctx, `SELECT `+profileColumns+` FROM reports.organization_profiles WHERE tenant_id = $1`, tenantID))
	if err != nil {
		return p, fmt.Errorf("reports: get organization profile: %w", err)
	}
	return p, nil
}

// PutProfile creates or replaces the tenant's profile and writes its audit
// row (OrganizationProfile Created the first time, Updated with the changed
// properties after; nothing when nothing changed).
func (s *Store) PutProfile(ctx context.Context, p Profile, actor string) (Profile, error) {
	addr, err := json.Marshal(p.Address)
	if err != nil {
		return p, fmt.Errorf("reports: put organization profile: %w", err)
	}
	var out Profile
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := scanProfile(tx.QueryRow(ctx, `SELECT `+profileColumns+` FROM reports.organization_profiles WHERE tenant_id = $1 FOR UPDATE`, p.TenantID))
		existed := err == nil
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("lock profile: %w", err)
		}
		if existed && audit.Diff(old.snapshot(), p.snapshot()) == nil {
			// A PUT that changes nothing writes nothing: no audit row,
			// updatedAt unchanged.
			out = old
			return nil
		}
		out, err = scanProfile(tx.QueryRow(ctx, `INSERT INTO reports.organization_profiles (tenant_id, legal_name, tax_id, address, email, phone, website,
				signatory_name, signatory_title, receipt_footer, country, time_zone)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (tenant_id) DO UPDATE SET legal_name = $2, tax_id = $3, address = $4, email = $5, phone = $6, website = $7,
				signatory_name = $8, signatory_title = $9, receipt_footer = $10, country = $11, time_zone = $12, updated_at = now()
			RETURNING `+profileColumns, p.TenantID, p.LegalName, p.TaxID, addr, p.Email, p.Phone, p.Website, p.SignatoryName, p.SignatoryTitle,
			p.ReceiptFooter, p.Country, p.TimeZone))
		if err != nil {
			return fmt.Errorf("write profile: %w", err)
		}
		return recordProfile(ctx, tx, old, out, existed, actor)
	})
	if err != nil {
		return out, fmt.Errorf("reports: put organization profile: %w", err)
	}
	return out, nil
}

// recordProfile writes the profile's audit row: Created the first time,
// Updated with the properties that changed after.
func recordProfile(ctx context.Context, tx pgx.Tx, old, cur Profile, existed bool, actor string) error {
	e := audit.Entry{TenantID: cur.TenantID.String(), EntityType: "OrganizationProfile", EntityID: cur.TenantID.String(), Action: audit.Created, Actor: actor}
	if existed {
		e.Action = audit.Updated
		e.Changes = audit.Diff(old.snapshot(), cur.snapshot())
		if len(e.Changes) == 0 {
			return nil
		}
	}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

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

// ErrRoleExists reports that the tenant has a custom role of that name.
var ErrRoleExists = errors.New("role name taken")

// Role is a tenant's custom role.
type Role struct {
	ID        uuid.UUID
	Name      string
	Scopes    []string
	CreatedAt time.Time
}

// CreateRole writes a custom role and its audit row in one transaction.
func (s *Store) CreateRole(ctx context.Context, tenantID uuid.UUID, name string, scopes []string, actor string) (Role, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Role{}, err
	}
	r := Role{ID: id, Name: name, Scopes: scopes}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO auth.roles (tenant_id, id, name, scopes) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant_id, name) DO NOTHING RETURNING created_at`, tenantID, id, name, scopes).Scan(&r.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrRoleExists
		}
		if err != nil {
			return wrapDB(err, "insert role")
		}
		return audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: "Role", EntityID: id.String(),
			Action: audit.Created, Actor: actor})
	})
	if err != nil {
		return Role{}, fmt.Errorf("auth: create role: %w", err)
	}
	return r, nil
}

// Roles lists the tenant's custom roles by name.
func (s *Store) Roles(ctx context.Context, tenantID uuid.UUID) ([]Role, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, scopes, created_at FROM auth.roles WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("auth: roles: %w", db.Interpret(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Role, error) {
		var x Role
		err := r.Scan(&x.ID, &x.Name, &x.Scopes, &x.CreatedAt)
		return x, err
	})
	return out, wrapDB(err, "roles")
}

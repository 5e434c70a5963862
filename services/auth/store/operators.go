package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// Platform operators (docs/operators.md): a user with a platform role,
// who needs no tenant membership.

// ActionOperatorInvited is the security log action of an operator's
// invitation.
const ActionOperatorInvited = "operator.invited"

// NewOperatorInvitation is an operator invitation to write.
type NewOperatorInvitation struct {
	Email     string
	Role      string
	TokenHash []byte
	ExpiresAt time.Time
}

// InviteOperator gives the user with the email (made when there is none)
// the platform role and writes an invitation, retiring the user's earlier
// ones, in one transaction; it returns the user's id.
func (s *Store) InviteOperator(ctx context.Context, in NewOperatorInvitation) (uuid.UUID, error) {
	var userID uuid.UUID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if userID, err = upsertUser(ctx, tx, in.Email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.users SET platform_role = $2, updated_at = now() WHERE id = $1`, userID, in.Role); err != nil {
			return wrapDB(err, "set platform role")
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.operator_invitations SET used_at = now() WHERE user_id = $1 AND used_at IS NULL`, userID); err != nil {
			return wrapDB(err, "retire operator invitations")
		}
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auth.operator_invitations (id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)`,
			id, userID, in.TokenHash, in.ExpiresAt); err != nil {
			return wrapDB(err, "insert operator invitation")
		}
		// Becoming an operator changes what the user's sessions may do.
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		return writeLog(ctx, tx, LogEntry{UserID: userID, Action: ActionOperatorInvited})
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("auth: invite operator: %w", err)
	}
	return userID, nil
}

// operatorInvitationByToken is InvitationByToken for an operator's
// invitation: its TenantID is uuid.Nil.
func (s *Store) operatorInvitationByToken(ctx context.Context, tokenHash []byte) (Invitation, error) {
	var inv Invitation
	u := &inv.User
	err := s.pool.QueryRow(ctx, `
		SELECT i.id, u.id, u.email, u.password_hash, u.first_name, u.last_name
		FROM auth.operator_invitations i JOIN auth.users u ON u.id = i.user_id
		WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now() AND u.platform_role IS NOT NULL`, tokenHash).
		Scan(&inv.ID, &u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName)
	if errors.Is(err, pgx.ErrNoRows) {
		return Invitation{}, ErrInvitationInvalid
	}
	return inv, wrapDB(err, "read operator invitation")
}

// useOperatorInvitation marks an operator's invitation used.
func useOperatorInvitation(ctx context.Context, tx pgx.Tx, inv Invitation) error {
	tag, err := tx.Exec(ctx, `UPDATE auth.operator_invitations SET used_at = now()
		WHERE id = $1 AND used_at IS NULL AND expires_at > now()`, inv.ID)
	if err != nil {
		return wrapDB(err, "use operator invitation")
	}
	if tag.RowsAffected() == 0 {
		return ErrInvitationInvalid
	}
	return nil
}

// OperatorAccess is what an /api/admin request needs of a session's user.
type OperatorAccess struct {
	// Role is the platform role, "" for a user who is no operator.
	Role string
	// HasFactor is whether a second factor is on.
	HasFactor bool
}

// Operator reads the user's platform role and whether they have a factor.
func (s *Store) Operator(ctx context.Context, userID uuid.UUID) (OperatorAccess, error) {
	var a OperatorAccess
	err := s.pool.QueryRow(ctx, `SELECT coalesce(u.platform_role, ''),
		       EXISTS (SELECT 1 FROM auth.user_mfa f WHERE f.user_id = u.id AND (f.totp_enabled OR f.email_enabled))
		FROM auth.users u WHERE u.id = $1`, userID).Scan(&a.Role, &a.HasFactor)
	if err != nil {
		return OperatorAccess{}, fmt.Errorf("auth: operator: %w", db.Interpret(err))
	}
	return a, nil
}

// TenantPage is one page of the tenant list.
type TenantPage struct {
	Q      string
	Limit  int32
	Offset int64
}

// ListTenants returns the tenants whose name or slug contains p.Q
// (without case), by name, with the count of all matches.
func (s *Store) ListTenants(ctx context.Context, p TenantPage) ([]Tenant, int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tenantColumns+`, count(*) OVER () FROM auth.tenants
		WHERE $1 = '' OR strpos(lower(name), lower($1)) > 0 OR strpos(slug, lower($1)) > 0
		ORDER BY lower(name), id LIMIT $2 OFFSET $3`, p.Q, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: list tenants: %w", db.Interpret(err))
	}
	defer rows.Close()
	var out []Tenant
	var total int64
	for rows.Next() {
		var t Tenant
		if err := rows.Scan(&t.ID, &t.Name, &t.Slug, &t.Active, &t.Features, &t.DefaultCurrency, &t.CreatedAt, &t.EventsSince, &total); err != nil {
			return nil, 0, wrapDB(err, "read tenant")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, wrapDB(err, "list tenants")
	}
	if len(out) == 0 && p.Offset > 0 {
		// A page past the end still reports the count.
		err = s.pool.QueryRow(ctx, `SELECT count(*) FROM auth.tenants
			WHERE $1 = '' OR strpos(lower(name), lower($1)) > 0 OR strpos(slug, lower($1)) > 0`, p.Q).Scan(&total)
	}
	return out, total, wrapDB(err, "count tenants")
}

// DeactivateOperator takes the platform role from the user with the
// email, ends every session of theirs and their impersonation
// (operator_removed), in one transaction; db.ErrNotFound when the email is
// no operator's.
func (s *Store) DeactivateOperator(ctx context.Context, email string) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE auth.users SET platform_role = NULL, updated_at = now()
			WHERE lower(email) = lower($1) AND platform_role IS NOT NULL RETURNING id`, email).Scan(&id)
		if err != nil {
			return fmt.Errorf("remove platform role: %w", db.Interpret(err))
		}
		if err := endImpersonations(ctx, tx, `operator_id = $1`, EndOperatorRemoved, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.sessions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL`, id); err != nil {
			return wrapDB(err, "end sessions")
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.operator_invitations SET used_at = now() WHERE user_id = $1 AND used_at IS NULL`, id); err != nil {
			return wrapDB(err, "retire operator invitations")
		}
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("auth: deactivate operator: %w", err)
	}
	return id, nil
}

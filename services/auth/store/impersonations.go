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

// Support access and impersonations (docs/operators.md). Every start and
// end writes an Impersonation audit row in the tenant (the events
// impersonation.created and impersonation.deleted), in its transaction,
// and every end moves the validation epoch: gateways cache the session
// validations that carry an impersonation.

// How an impersonation ended.
const (
	EndDeleted         = "deleted"
	EndExpired         = "expired"
	EndSignedOut       = "signed_out"
	EndGrantWithdrawn  = "grant_withdrawn"
	EndUserDeactivated = "user_deactivated"
	EndOperatorRemoved = "operator_removed"
)

// ImpersonationEntity is the audit entity type of an impersonation.
const ImpersonationEntity = "Impersonation"

// Errors of impersonation.
var (
	// ErrNotGranted: the tenant has no support access in force.
	ErrNotGranted = errors.New("support access not granted")
	// ErrImpersonating: the operator holds an impersonation already.
	ErrImpersonating = errors.New("already impersonating")
)

// SupportAccess is a tenant's grant.
type SupportAccess struct {
	Until     time.Time
	GrantedBy string
	GrantedAt time.Time
}

// PutSupportAccess grants support access until until, with its audit row.
func (s *Store) PutSupportAccess(ctx context.Context, tenant uuid.UUID, until time.Time, actor string) (SupportAccess, error) {
	var out SupportAccess
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var created bool
		err := tx.QueryRow(ctx, `INSERT INTO auth.support_access (tenant_id, until, granted_by) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_id) DO UPDATE SET until = $2, granted_by = $3, granted_at = now()
			RETURNING until, granted_by, granted_at, xmax = 0`, tenant, until, actor).Scan(&out.Until, &out.GrantedBy, &out.GrantedAt, &created)
		if err != nil {
			return wrapDB(err, "put support access")
		}
		action := audit.Updated
		if created {
			action = audit.Created
		}
		return audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: "SupportAccess", EntityID: tenant.String(), Action: action,
			Changes: map[string]audit.Change{"until": {New: out.Until}}, Actor: actor})
	})
	if err != nil {
		return SupportAccess{}, fmt.Errorf("auth: support access: %w", err)
	}
	return out, nil
}

// DeleteSupportAccess withdraws the grant and ends every open
// impersonation of the tenant; db.ErrNotFound without a grant.
func (s *Store) DeleteSupportAccess(ctx context.Context, tenant uuid.UUID, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM auth.support_access WHERE tenant_id = $1`, tenant)
		if err != nil {
			return wrapDB(err, "delete support access")
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: "SupportAccess", EntityID: tenant.String(),
			Action: audit.Deleted, Actor: actor}); err != nil {
			return err
		}
		return endImpersonations(ctx, tx, `tenant_id = $1`, EndGrantWithdrawn, tenant)
	})
	if err != nil {
		return fmt.Errorf("auth: withdraw support access: %w", err)
	}
	return nil
}

// Impersonation is a row of auth.impersonations, with the operator's
// email.
type Impersonation struct {
	ID, TenantID, UserID, OperatorID, SessionID uuid.UUID
	OperatorEmail                               string
	Reason                                      string
	StartedAt, ExpiresAt                        time.Time
	EndedAt                                     *time.Time
	EndReason                                   string
}

const impersonationColumns = `i.id, i.tenant_id, i.user_id, i.operator_id, i.session_id, o.email, i.reason, i.started_at, i.expires_at,
	i.ended_at, coalesce(i.end_reason, '')`

const impersonationFrom = ` FROM auth.impersonations i JOIN auth.users o ON o.id = i.operator_id`

func scanImpersonation(row pgx.Row) (Impersonation, error) {
	var i Impersonation
	err := row.Scan(&i.ID, &i.TenantID, &i.UserID, &i.OperatorID, &i.SessionID, &i.OperatorEmail, &i.Reason, &i.StartedAt, &i.ExpiresAt,
		&i.EndedAt, &i.EndReason)
	if err != nil {
		return Impersonation{}, fmt.Errorf("read impersonation: %w", db.Interpret(err))
	}
	return i, nil
}

// NewImpersonation is an impersonation to start.
type NewImpersonation struct {
	TenantID, UserID, OperatorID, SessionID uuid.UUID
	Reason                                  string
	ExpiresAt                               time.Time
	Now                                     time.Time
}

// StartImpersonation starts n: ErrNotGranted without a grant in force at
// n.Now, db.ErrNotFound when the user is no active member of an active
// tenant, ErrImpersonating while the operator holds one in force. An
// expired one the operator still held is ended first (reason expired), and
// one whose session has ended (signed_out).
func (s *Store) StartImpersonation(ctx context.Context, n NewImpersonation) (Impersonation, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Impersonation{}, err
	}
	var out Impersonation
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := endImpersonations(ctx, tx, `operator_id = $1 AND expires_at <= $2`, EndExpired, n.OperatorID, n.Now); err != nil {
			return err
		}
		// A session ended other than by sign-out (a password reset) leaves
		// its impersonation open: it ends with it.
		if err := endImpersonations(ctx, tx, `operator_id = $1 AND session_id IN (SELECT id FROM auth.sessions WHERE ended_at IS NOT NULL)`,
			EndSignedOut, n.OperatorID); err != nil {
			return err
		}
		var granted bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth.support_access WHERE tenant_id = $1 AND until > $2 FOR SHARE)`,
			n.TenantID, n.Now).Scan(&granted); err != nil {
			return wrapDB(err, "read support access")
		}
		if !granted {
			return ErrNotGranted
		}
		var member bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth.memberships m JOIN auth.tenants t ON t.id = m.tenant_id
			WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active' AND t.active)`, n.TenantID, n.UserID).Scan(&member); err != nil {
			return wrapDB(err, "read membership")
		}
		if !member {
			return db.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auth.impersonations (tenant_id, id, user_id, operator_id, session_id, reason, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, n.TenantID, id, n.UserID, n.OperatorID, n.SessionID, n.Reason, n.ExpiresAt); err != nil {
			if db.IsUniqueViolation(err, "impersonations_open_operator") {
				return ErrImpersonating
			}
			return wrapDB(err, "insert impersonation")
		}
		if out, err = scanImpersonation(tx.QueryRow(ctx, `SELECT `+impersonationColumns+impersonationFrom+` WHERE i.id = $1`, id)); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{TenantID: n.TenantID.String(), EntityType: ImpersonationEntity, EntityID: id.String(),
			Action: audit.Created, Actor: "operator:" + n.OperatorID.String()})
	})
	if err != nil {
		return Impersonation{}, fmt.Errorf("auth: start impersonation: %w", err)
	}
	return out, nil
}

// endImpersonations ends the open impersonations that where (over
// auth.impersonations, with args) selects, each with its audit row
// (actor: the operator), and moves the validation epoch when any ended.
func endImpersonations(ctx context.Context, tx pgx.Tx, where, reason string, args ...any) error {
	rows, err := tx.Query(ctx, `UPDATE auth.impersonations SET ended_at = now(), end_reason = $`+fmt.Sprint(len(args)+1)+`
		WHERE ended_at IS NULL AND `+where+` RETURNING tenant_id, id, operator_id`, append(args, reason)...)
	if err != nil {
		return wrapDB(err, "end impersonations")
	}
	type ended struct{ tenant, id, operator uuid.UUID }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ended, error) {
		var e ended
		err := r.Scan(&e.tenant, &e.id, &e.operator)
		return e, err
	})
	if err != nil {
		return wrapDB(err, "end impersonations")
	}
	for _, e := range list {
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: e.tenant.String(), EntityType: ImpersonationEntity, EntityID: e.id.String(),
			Action: audit.Deleted, Changes: map[string]audit.Change{"endReason": {New: reason}}, Actor: "operator:" + e.operator.String()}); err != nil {
			return err
		}
	}
	if len(list) == 0 {
		return nil
	}
	return bumpEpoch(ctx, tx)
}

// EndImpersonation ends the operator's open impersonation id with reason;
// db.ErrNotFound when the operator has no such open one.
func (s *Store) EndImpersonation(ctx context.Context, operator, id uuid.UUID, reason string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var open bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth.impersonations WHERE id = $1 AND operator_id = $2 AND ended_at IS NULL)`,
			id, operator).Scan(&open); err != nil {
			return wrapDB(err, "read impersonation")
		}
		if !open {
			return db.ErrNotFound
		}
		return endImpersonations(ctx, tx, `id = $1`, reason, id)
	})
	if err != nil {
		return fmt.Errorf("auth: end impersonation: %w", err)
	}
	return nil
}

// OpenImpersonation is the operator's open impersonation (ended_at unset,
// expired or not); db.ErrNotFound without one.
func (s *Store) OpenImpersonation(ctx context.Context, operator uuid.UUID) (Impersonation, error) {
	return scanImpersonation(s.pool.QueryRow(ctx, `SELECT `+impersonationColumns+impersonationFrom+`
		WHERE i.operator_id = $1 AND i.ended_at IS NULL`, operator))
}

// ListImpersonations returns a page of the tenant's impersonations, newest
// first, with the count of all.
func (s *Store) ListImpersonations(ctx context.Context, tenant uuid.UUID, limit int32, offset int64) ([]Impersonation, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM auth.impersonations WHERE tenant_id = $1`, tenant).Scan(&total); err != nil {
		return nil, 0, wrapDB(err, "count impersonations")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+impersonationColumns+impersonationFrom+`
		WHERE i.tenant_id = $1 ORDER BY i.started_at DESC, i.id DESC LIMIT $2 OFFSET $3`, tenant, limit, offset)
	if err != nil {
		return nil, 0, wrapDB(err, "list impersonations")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Impersonation, error) { return scanImpersonation(r) })
	return out, total, wrapDB(err, "list impersonations")
}

// ImpersonationAccess is what a tenant request of an operator's session
// needs: the session's open impersonation and whether it still holds.
type ImpersonationAccess struct {
	Impersonation Impersonation
	// GrantUntil is the end of the tenant's support access; zero without
	// a grant.
	GrantUntil time.Time
	// OperatorActive: the operator still has a platform role.
	OperatorActive bool
	// Access is the user's membership there; Member false when it is no
	// longer active (or the tenant is deactivated).
	Access TenantAccess
	Member bool
}

// ImpersonationBySession reads the session's open impersonation with what
// decides whether it still holds; db.ErrNotFound without one.
func (s *Store) ImpersonationBySession(ctx context.Context, session uuid.UUID) (ImpersonationAccess, error) {
	var a ImpersonationAccess
	i, err := scanImpersonation(s.pool.QueryRow(ctx, `SELECT `+impersonationColumns+impersonationFrom+`
		WHERE i.session_id = $1 AND i.ended_at IS NULL`, session))
	if err != nil {
		return a, err
	}
	a.Impersonation = i
	var until *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT until FROM auth.support_access WHERE tenant_id = $1),
		EXISTS (SELECT 1 FROM auth.users WHERE id = $2 AND platform_role IS NOT NULL)`, i.TenantID, i.OperatorID).
		Scan(&until, &a.OperatorActive); err != nil {
		return a, wrapDB(err, "read impersonation access")
	}
	if until != nil {
		a.GrantUntil = *until
	}
	a.Access, err = s.Access(ctx, i.TenantID, i.UserID)
	if errors.Is(err, db.ErrNotFound) {
		return a, nil
	}
	a.Member = err == nil
	return a, err
}

// EndImpersonationFor ends the impersonation id with reason when it is
// still open (a request found that it no longer holds).
func (s *Store) EndImpersonationFor(ctx context.Context, id uuid.UUID, reason string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error { return endImpersonations(ctx, tx, `id = $1`, reason, id) })
	if err != nil {
		return fmt.Errorf("auth: end impersonation: %w", err)
	}
	return nil
}

// sweepReason is impersonation.EndReason in SQL, over i (the
// impersonation), o (its operator) and a (the tenant's grant, if any) at
// $1: why the impersonation no longer holds, or NULL while it does.
const sweepReason = `CASE
	WHEN i.expires_at <= $1 THEN '` + EndExpired + `'
	WHEN a.until IS NULL OR a.until <= $1 THEN '` + EndGrantWithdrawn + `'
	WHEN o.platform_role IS NULL THEN '` + EndOperatorRemoved + `'
	WHEN NOT EXISTS (SELECT 1 FROM auth.memberships m JOIN auth.tenants t ON t.id = m.tenant_id
		WHERE m.tenant_id = i.tenant_id AND m.user_id = i.user_id AND m.status = 'active' AND t.active) THEN '` + EndUserDeactivated + `'
	END`

// SweepImpersonations ends, in one transaction, up to limit open
// impersonations that no longer hold at now, each with the reason a
// request would have found (impersonation.EndReason): expired, the grant
// run out or gone, the operator or the user deactivated. It returns how
// many it ended. Rows another transaction holds are skipped, so replicas
// sweeping at once end each one once; a request ending the same row
// waits for the lock and then finds it ended.
func (s *Store) SweepImpersonations(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT i.id, `+sweepReason+` FROM auth.impersonations i
			JOIN auth.users o ON o.id = i.operator_id LEFT JOIN auth.support_access a ON a.tenant_id = i.tenant_id
			WHERE i.ended_at IS NULL AND (`+sweepReason+`) IS NOT NULL
			ORDER BY i.expires_at, i.id LIMIT $2 FOR UPDATE OF i SKIP LOCKED`, now, limit)
		if err != nil {
			return wrapDB(err, "find impersonations to end")
		}
		byReason := map[string][]uuid.UUID{}
		var id uuid.UUID
		var reason string
		if _, err := pgx.ForEachRow(rows, []any{&id, &reason}, func() error {
			byReason[reason] = append(byReason[reason], id)
			n++
			return nil
		}); err != nil {
			return wrapDB(err, "find impersonations to end")
		}
		for _, reason := range []string{EndExpired, EndGrantWithdrawn, EndOperatorRemoved, EndUserDeactivated} {
			if ids := byReason[reason]; len(ids) > 0 {
				if err := endImpersonations(ctx, tx, `id = ANY($1)`, reason, ids); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("auth: sweep impersonations: %w", err)
	}
	return n, nil
}

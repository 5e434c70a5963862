package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
)

// Membership statuses.
const (
	StatusInvited     = "invited"
	StatusActive      = "active"
	StatusDeactivated = "deactivated"
)

// RoleOwner is the role a tenant must keep one active member in.
const RoleOwner = "owner"

// Errors of the user store.
var (
	// ErrAlreadyMember: the email is an invited or active member already.
	ErrAlreadyMember = errors.New("already a member")
	// ErrLastOwner: the change would leave the tenant without an active owner.
	ErrLastOwner = errors.New("last owner")
	// ErrInvitationInvalid: no invitation has the token, or it was used
	// or has expired.
	ErrInvitationInvalid = errors.New("invitation invalid")
	// ErrPasswordSet: the user's password was set by another acceptance
	// between the read and the write.
	ErrPasswordSet = errors.New("password set meanwhile")
)

// User is a row of auth.users.
type User struct {
	ID           uuid.UUID
	Email        string
	PasswordHash *string
	FirstName    string
	LastName     string
	LastSignInAt *time.Time
	// PlatformRole is the operator role (support, platform-admin), "" for
	// a user who is no operator; read by UserByEmail and UserByID.
	PlatformRole string
}

// Member is a user with their membership in one tenant.
type Member struct {
	User
	TenantID uuid.UUID
	Role     string
	Status   string
	// MfaEnabled is whether the user has a second factor on.
	MfaEnabled bool
}

const memberColumns = `u.id, u.email, u.password_hash, u.first_name, u.last_name, u.last_sign_in_at, m.tenant_id, m.role, m.status,
	EXISTS (SELECT 1 FROM auth.user_mfa f WHERE f.user_id = u.id AND (f.totp_enabled OR f.email_enabled))`

func scanMember(row pgx.Row) (Member, error) {
	var m Member
	err := row.Scan(&m.ID, &m.Email, &m.PasswordHash, &m.FirstName, &m.LastName, &m.LastSignInAt, &m.TenantID, &m.Role, &m.Status, &m.MfaEnabled)
	if err != nil {
		return Member{}, fmt.Errorf("read member: %w", db.Interpret(err))
	}
	return m, nil
}

// Invitation is what an invitation's token opens.
type Invitation struct {
	TenantID uuid.UUID
	ID       uuid.UUID
	User     User
}

// NewInvitation is an invitation to write.
type NewInvitation struct {
	TenantID  uuid.UUID
	Email     string
	Role      string
	TokenHash []byte
	ExpiresAt time.Time
	Actor     string
	// Mail builds the invitation email for the user's id; it is queued
	// in the invitation's transaction.
	Mail func(userID uuid.UUID) mail.Message
}

// Invite makes email a member of the tenant with role, status invited,
// and writes its invitation, its audit row and its email in one
// transaction. A deactivated member is invited again; an invited or active
// one is ErrAlreadyMember.
func (s *Store) Invite(ctx context.Context, in NewInvitation) (Member, error) {
	var out Member
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		userID, err := upsertUser(ctx, tx, in.Email)
		if err != nil {
			return err
		}
		action, err := upsertMembership(ctx, tx, in.TenantID, userID, in.Role)
		if err != nil {
			return err
		}
		if err := insertInvitation(ctx, tx, in, userID); err != nil {
			return err
		}
		entry := audit.Entry{TenantID: in.TenantID.String(), EntityType: "User", EntityID: userID.String(), Action: action, Actor: in.Actor}
		if action == audit.Updated {
			entry.Changes = map[string]audit.Change{"status": {Old: StatusDeactivated, New: StatusInvited}}
		}
		if err := audit.Record(ctx, tx, entry); err != nil {
			return err
		}
		if _, err := mail.Enqueue(ctx, tx, in.Mail(userID)); err != nil {
			return err
		}
		out, err = memberTx(ctx, tx, in.TenantID, userID)
		return err
	})
	if err != nil {
		return Member{}, fmt.Errorf("auth: invite: %w", err)
	}
	return out, nil
}

// upsertUser returns the id of the user with email (any case), creating
// one without a password.
func upsertUser(ctx context.Context, tx pgx.Tx, email string) (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, err
	}
	// DO UPDATE (a no-op) rather than DO NOTHING, so the existing row's id
	// comes back and the row is locked for the rest of the transaction.
	err = tx.QueryRow(ctx, `
		INSERT INTO auth.users (id, email) VALUES ($1, $2)
		ON CONFLICT ((lower(email))) DO UPDATE SET email = auth.users.email
		RETURNING id`, id, email).Scan(&id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("upsert user: %w", db.Interpret(err))
	}
	return id, nil
}

// upsertMembership adds or re-opens the membership; it returns the audit
// action.
func upsertMembership(ctx context.Context, tx pgx.Tx, tenantID, userID uuid.UUID, role string) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM auth.memberships WHERE tenant_id = $1 AND user_id = $2 FOR UPDATE`, tenantID, userID).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		_, err = tx.Exec(ctx, `INSERT INTO auth.memberships (tenant_id, user_id, role, status) VALUES ($1, $2, $3, 'invited')`, tenantID, userID, role)
		return audit.Created, wrapDB(err, "insert membership")
	case err != nil:
		return "", fmt.Errorf("read membership: %w", db.Interpret(err))
	case status != StatusDeactivated:
		return "", ErrAlreadyMember
	}
	_, err = tx.Exec(ctx, `UPDATE auth.memberships SET role = $3, status = 'invited', updated_at = now() WHERE tenant_id = $1 AND user_id = $2`, tenantID, userID, role)
	return audit.Updated, wrapDB(err, "re-invite membership")
}

func insertInvitation(ctx context.Context, tx pgx.Tx, in NewInvitation, userID uuid.UUID) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	// A re-invitation makes the member's earlier invitations useless.
	if _, err := tx.Exec(ctx, `UPDATE auth.invitations SET used_at = now() WHERE tenant_id = $1 AND user_id = $2 AND used_at IS NULL`, in.TenantID, userID); err != nil {
		return wrapDB(err, "retire invitations")
	}
	_, err = tx.Exec(ctx, `INSERT INTO auth.invitations (tenant_id, id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		in.TenantID, id, userID, in.TokenHash, in.ExpiresAt)
	return wrapDB(err, "insert invitation")
}

func memberTx(ctx context.Context, q pgx.Tx, tenantID, userID uuid.UUID) (Member, error) {
	return scanMember(q.QueryRow(ctx, `SELECT `+memberColumns+` FROM auth.memberships m JOIN auth.users u ON u.id = m.user_id
		WHERE m.tenant_id = $1 AND m.user_id = $2`, tenantID, userID))
}

// Member reads one member of a tenant.
func (s *Store) Member(ctx context.Context, tenantID, userID uuid.UUID) (Member, error) {
	return scanMember(s.pool.QueryRow(ctx, `SELECT `+memberColumns+` FROM auth.memberships m JOIN auth.users u ON u.id = m.user_id
		WHERE m.tenant_id = $1 AND m.user_id = $2`, tenantID, userID))
}

// ListMembers returns the tenant's members, oldest membership first.
func (s *Store) ListMembers(ctx context.Context, tenantID uuid.UUID) ([]Member, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+memberColumns+` FROM auth.memberships m JOIN auth.users u ON u.id = m.user_id
		WHERE m.tenant_id = $1 ORDER BY m.created_at, u.id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("auth: list members: %w", db.Interpret(err))
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, wrapDB(rows.Err(), "list members")
}

// MemberChange is a role change or the end of a membership.
type MemberChange struct {
	TenantID uuid.UUID
	UserID   uuid.UUID
	// Role is the new role; empty ends the membership (deactivated).
	Role  string
	Actor string
	// Allow may refuse the change after the member is locked (the
	// caller's right to touch owners); nil allows it.
	Allow func(Member) error
}

// ChangeMember applies c and its audit row. The tenant's active owners
// are locked first, so two changes that would each leave one owner
// cannot both commit: a change that leaves none is ErrLastOwner.
func (s *Store) ChangeMember(ctx context.Context, c MemberChange) (Member, error) {
	var out Member
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		owners, err := lockOwners(ctx, tx, c.TenantID)
		if err != nil {
			return err
		}
		m, err := lockMember(ctx, tx, c.TenantID, c.UserID)
		if err != nil {
			return err
		}
		if c.Allow != nil {
			if err := c.Allow(m); err != nil {
				return err
			}
		}
		wasOwner := m.Status == StatusActive && m.Role == RoleOwner
		staysOwner := c.Role == RoleOwner
		if wasOwner && !staysOwner && owners <= 1 {
			return ErrLastOwner
		}
		if out, err = applyChange(ctx, tx, m, c); err != nil {
			return err
		}
		// Gateways cache session validations with the member's role.
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return Member{}, fmt.Errorf("auth: change member: %w", err)
	}
	return out, nil
}

func lockOwners(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) (int, error) {
	rows, err := tx.Query(ctx, `SELECT user_id FROM auth.memberships WHERE tenant_id = $1 AND role = 'owner' AND status = 'active' FOR UPDATE`, tenantID)
	if err != nil {
		return 0, wrapDB(err, "lock owners")
	}
	n := 0
	for rows.Next() {
		n++
	}
	return n, wrapDB(rows.Err(), "lock owners")
}

// lockMember reads a member that has not been removed, locked.
func lockMember(ctx context.Context, tx pgx.Tx, tenantID, userID uuid.UUID) (Member, error) {
	m, err := scanMember(tx.QueryRow(ctx, `SELECT `+memberColumns+` FROM auth.memberships m JOIN auth.users u ON u.id = m.user_id
		WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status <> 'deactivated' FOR UPDATE OF m`, tenantID, userID))
	return m, err
}

func applyChange(ctx context.Context, tx pgx.Tx, m Member, c MemberChange) (Member, error) {
	entry := audit.Entry{TenantID: c.TenantID.String(), EntityType: "User", EntityID: c.UserID.String(), Actor: c.Actor}
	if c.Role == "" {
		if _, err := tx.Exec(ctx, `UPDATE auth.memberships SET status = 'deactivated', updated_at = now() WHERE tenant_id = $1 AND user_id = $2`, c.TenantID, c.UserID); err != nil {
			return Member{}, wrapDB(err, "end membership")
		}
		// An unused invitation must not bring the member back.
		if _, err := tx.Exec(ctx, `UPDATE auth.invitations SET used_at = now() WHERE tenant_id = $1 AND user_id = $2 AND used_at IS NULL`, c.TenantID, c.UserID); err != nil {
			return Member{}, wrapDB(err, "retire invitations")
		}
		entry.Action = audit.Deleted
		m.Status = StatusDeactivated
	} else {
		if c.Role == m.Role {
			return m, nil
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.memberships SET role = $3, updated_at = now() WHERE tenant_id = $1 AND user_id = $2`, c.TenantID, c.UserID, c.Role); err != nil {
			return Member{}, wrapDB(err, "change role")
		}
		entry.Action = audit.Updated
		entry.Changes = map[string]audit.Change{"role": {Old: m.Role, New: c.Role}}
		m.Role = c.Role
	}
	return m, audit.Record(ctx, tx, entry)
}

// InvitationByToken reads the unused, unexpired invitation with the token
// hash, with its user; ErrInvitationInvalid otherwise.
func (s *Store) InvitationByToken(ctx context.Context, tokenHash []byte) (Invitation, error) {
	var inv Invitation
	u := &inv.User
	err := s.pool.QueryRow(ctx, `
		SELECT i.tenant_id, i.id, u.id, u.email, u.password_hash, u.first_name, u.last_name
		FROM auth.invitations i JOIN auth.users u ON u.id = i.user_id
		WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now()`, tokenHash).
		Scan(&inv.TenantID, &inv.ID, &u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName)
	if errors.Is(err, pgx.ErrNoRows) {
		// An operator's invitation names no tenant (operators.go).
		return s.operatorInvitationByToken(ctx, tokenHash)
	}
	return inv, wrapDB(err, "read invitation")
}

// Acceptance is an invitation being accepted.
type Acceptance struct {
	Invitation Invitation
	// NewPasswordHash is set when the user had no password: it becomes
	// theirs, with FirstName and LastName.
	NewPasswordHash     string
	FirstName, LastName string
	Session             NewSession
}

// Accept uses the invitation once, sets a new user's password and name,
// activates the membership, writes its audit row and starts the session,
// in one transaction. It returns the session's id.
func (s *Store) Accept(ctx context.Context, a Acceptance) (uuid.UUID, error) {
	inv := a.Invitation
	var sessionID uuid.UUID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if inv.TenantID == uuid.Nil {
			return acceptOperator(ctx, tx, a, &sessionID)
		}
		tag, err := tx.Exec(ctx, `UPDATE auth.invitations SET used_at = now()
			WHERE tenant_id = $1 AND id = $2 AND used_at IS NULL AND expires_at > now()`, inv.TenantID, inv.ID)
		if err != nil {
			return wrapDB(err, "use invitation")
		}
		if tag.RowsAffected() == 0 {
			return ErrInvitationInvalid
		}
		if err := setFirstPassword(ctx, tx, a); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.memberships SET status = 'active', updated_at = now() WHERE tenant_id = $1 AND user_id = $2`, inv.TenantID, inv.User.ID); err != nil {
			return wrapDB(err, "activate membership")
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: inv.TenantID.String(), EntityType: "User", EntityID: inv.User.ID.String(),
			Action: audit.Updated, Actor: "user:" + inv.User.ID.String(),
			Changes: map[string]audit.Change{"status": {Old: StatusInvited, New: StatusActive}}}); err != nil {
			return err
		}
		sessionID, err = insertSession(ctx, tx, a.Session)
		return err
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("auth: accept invitation: %w", err)
	}
	return sessionID, nil
}

// acceptOperator is Accept for an operator's invitation: no membership,
// no tenant audit row.
func acceptOperator(ctx context.Context, tx pgx.Tx, a Acceptance, sessionID *uuid.UUID) error {
	if err := useOperatorInvitation(ctx, tx, a.Invitation); err != nil {
		return err
	}
	if err := setFirstPassword(ctx, tx, a); err != nil {
		return err
	}
	var err error
	*sessionID, err = insertSession(ctx, tx, a.Session)
	return err
}

func setFirstPassword(ctx context.Context, tx pgx.Tx, a Acceptance) error {
	if a.NewPasswordHash == "" {
		return nil
	}
	tag, err := tx.Exec(ctx, `UPDATE auth.users SET password_hash = $2, first_name = $3, last_name = $4, updated_at = now()
		WHERE id = $1 AND password_hash IS NULL`, a.Invitation.User.ID, a.NewPasswordHash, a.FirstName, a.LastName)
	if err != nil {
		return wrapDB(err, "set password")
	}
	if tag.RowsAffected() == 0 {
		return ErrPasswordSet
	}
	return nil
}

// UserByEmail reads the user with email (any case), with the number of
// their active memberships in active tenants.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, int, error) {
	var u User
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT u.id, u.email, u.password_hash, u.first_name, u.last_name, u.last_sign_in_at, coalesce(u.platform_role, ''),
		       (SELECT count(*) FROM auth.memberships m JOIN auth.tenants t ON t.id = m.tenant_id
		        WHERE m.user_id = u.id AND m.status = 'active' AND t.active)
		FROM auth.users u WHERE lower(u.email) = lower($1)`, strings.TrimSpace(email)).
		Scan(&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.LastSignInAt, &u.PlatformRole, &n)
	if err != nil {
		return User{}, 0, fmt.Errorf("auth: user by email: %w", db.Interpret(err))
	}
	return u, n, nil
}

// UserByID reads a user.
func (s *Store) UserByID(ctx context.Context, id uuid.UUID) (User, error) {
	var u User
	err := s.pool.QueryRow(ctx, `SELECT id, email, password_hash, first_name, last_name, last_sign_in_at, coalesce(platform_role, '')
		FROM auth.users WHERE id = $1`, id).
		Scan(&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.LastSignInAt, &u.PlatformRole)
	if err != nil {
		return User{}, fmt.Errorf("auth: user: %w", db.Interpret(err))
	}
	return u, nil
}

// ActiveMembership is a tenant a user may work in.
type ActiveMembership struct {
	TenantID   uuid.UUID
	TenantName string
	Role       string
}

// ActiveMemberships lists the user's active memberships in active
// tenants, by tenant name.
func (s *Store) ActiveMemberships(ctx context.Context, userID uuid.UUID) ([]ActiveMembership, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.name, m.role FROM auth.memberships m JOIN auth.tenants t ON t.id = m.tenant_id
		WHERE m.user_id = $1 AND m.status = 'active' AND t.active ORDER BY t.name, t.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("auth: memberships: %w", db.Interpret(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ActiveMembership, error) {
		var m ActiveMembership
		err := r.Scan(&m.TenantID, &m.TenantName, &m.Role)
		return m, err
	})
	return out, wrapDB(err, "memberships")
}

// TenantAccess is what a session needs of a tenant: the user's role there
// and the tenant's features and currency.
type TenantAccess struct {
	Role     string
	Features []string
	Currency string
	// CustomScopes are the scopes of a custom role; nil for a built-in
	// (or unknown) one.
	CustomScopes []string
	// HasFactor is whether the user has a second factor on.
	HasFactor bool
}

// Access reads the user's active membership in an active tenant;
// db.ErrNotFound when there is none.
func (s *Store) Access(ctx context.Context, tenantID, userID uuid.UUID) (TenantAccess, error) {
	var a TenantAccess
	err := s.pool.QueryRow(ctx, `SELECT m.role, t.features, t.default_currency, r.scopes,
		       EXISTS (SELECT 1 FROM auth.user_mfa f WHERE f.user_id = m.user_id AND (f.totp_enabled OR f.email_enabled))
		FROM auth.memberships m JOIN auth.tenants t ON t.id = m.tenant_id
		LEFT JOIN auth.roles r ON r.tenant_id = m.tenant_id AND r.name = m.role
		WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active' AND t.active`, tenantID, userID).
		Scan(&a.Role, &a.Features, &a.Currency, &a.CustomScopes, &a.HasFactor)
	if err != nil {
		return TenantAccess{}, fmt.Errorf("auth: tenant access: %w", db.Interpret(err))
	}
	return a, nil
}

func wrapDB(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, db.Interpret(err))
	}
	return nil
}
